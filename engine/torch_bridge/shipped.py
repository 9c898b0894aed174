"""torch.distributed.pipelining's own side of an export, read without starting a process group.

``shipped_order`` asks one of the schedules torch ships for its compute actions (its
``pipeline_order``), ``load_in_torch`` hands a CSV to ``_PipelineScheduleRuntime._load_csv``:
both only need what a stage says about its place (index, stage count, group size), so a
stand-in stage serves and the check runs anywhere torch is installed, in milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pipelab.engine.schedules.registry import torch_classes


class _Shipped(Mapping[str, str]):
    """Our schedule -> the torch class that ships the same schedule: each registered schedule's
    ``torch_class``, read afresh, so a new schedule file that names one is compared too."""

    def __getitem__(self, name: str) -> str:
        return torch_classes()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(torch_classes())

    def __len__(self) -> int:
        return len(torch_classes())


SHIPPED = _Shipped()


@dataclass
class _PlaceOnly:
    """What torch's schedule constructors and ``_load_csv`` read of a ``PipelineStage``. Not
    frozen: torch writes its placement into every stage (``stage_index_to_group_rank``)."""
    stage_index: int
    num_stages: int
    group_size: int
    group_rank: int = 0
    submod: object = None
    stage_index_to_group_rank: dict = field(default_factory=dict)


def stand_in_stages(ranks: int, chunks: int, rank: int = 0) -> list[_PlaceOnly]:
    """Rank ``rank``'s stages as torch's constructors see them, without a process group."""
    # Only the counts matter to what we read (pipeline_order is built for every rank from
    # the counts; _load_csv infers the placement from the rows): loop-style indices serve a V too.
    return [_PlaceOnly(c * ranks + rank, ranks * chunks, ranks, rank) for c in range(chunks)]


def compute_cells(action) -> list[str]:
    """A torch action as our cells: an OVERLAP_F_B pair is its two actions in order; idle
    slots (None) and what torch adds itself (REDUCE_GRAD, sends, receives) are no cells."""
    if action is None:
        return []
    return [str(a) for a in (action.sub_actions or (action,)) if a.is_compute_op]


def shipped_order(name: str, ranks: int, microbatches: int, chunks: int = 1) -> list[list[str]]:
    """Each rank's compute actions in the order torch's own schedule for ``name`` lists them."""
    from torch.distributed.pipelining import schedules
    cls = getattr(schedules, SHIPPED[name])
    stages = stand_in_stages(ranks, chunks)
    schedule = cls(stages[0] if chunks == 1 else stages, n_microbatches=microbatches)
    return [[cell for a in schedule.pipeline_order[r] for cell in compute_cells(a)] for r in range(ranks)]


@dataclass(frozen=True)
class TorchLoad:
    """What torch's runtime made of a CSV."""
    stage_to_rank: tuple[int, ...]
    """The placement torch inferred from the rows."""
    with_comms: tuple[tuple[str, ...], ...]
    """Per rank, the lowered program torch would run: compute plus SEND/RECV/REDUCE_GRAD."""


def load_in_torch(path: str, ranks: int, num_stages: int, microbatches: int) -> TorchLoad:
    """``_PipelineScheduleRuntime._load_csv(path)``: torch validates the CSV (every stage's F,
    and B or I+W, for every micro-batch), infers the placement and lowers it with its
    sends and receives; an AssertionError or RuntimeError from torch says why not."""
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
    chunks = num_stages // ranks
    runtime = _PipelineScheduleRuntime(stand_in_stages(ranks, chunks), n_microbatches=microbatches)
    runtime._load_csv(path)
    mapping = runtime.stage_index_to_group_rank
    return TorchLoad(tuple(mapping[s] for s in range(num_stages)),
                     tuple(tuple(map(str, runtime.pipeline_order_with_comms[r])) for r in range(ranks)))
