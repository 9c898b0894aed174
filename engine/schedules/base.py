"""The Schedule type and the registry that finds builders by name.

A builder is a pure function ``(ranks, microbatches, chunks) -> Schedule`` with no torch
import, so schedules can be built, printed, validated and simulated anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.actions import BACKWARD_INPUT, UPDATE, Action, ScheduleError


@dataclass(frozen=True)
class Schedule:
    """Per-rank ordered action lists plus where each stage lives."""

    name: str
    """Registry name, or "custom" for a hand-written schedule."""
    num_ranks: int
    """Pipeline devices p."""
    num_microbatches: int
    """Micro-batches m per step."""
    stage_to_rank: tuple[int, ...]
    """stage_to_rank[s] is the rank holding stage s; len() is the number of stages p*v."""
    actions: tuple[tuple[Action, ...], ...]
    """actions[r] is rank r's program, run in order."""
    description: str = ""

    @property
    def num_stages(self) -> int:
        return len(self.stage_to_rank)

    @property
    def chunks(self) -> int:
        """Model chunks per rank (v); 1 unless interleaved or V-shaped."""
        return self.num_stages // self.num_ranks

    @property
    def is_async(self) -> bool:
        """True when stages update inside the step (PipeDream, 2BW): it carries U actions."""
        return any(a.kind == UPDATE for rank in self.actions for a in rank)

    def stages_of(self, rank: int) -> list[int]:
        return [s for s, r in enumerate(self.stage_to_rank) if r == rank]

    @property
    def split_backwards(self) -> frozenset[tuple[int, int]]:
        """(stage, micro-batch) pairs whose backward runs as I then W (zero bubble), not as one B."""
        return frozenset((a.stage, a.microbatch) for rank in self.actions for a in rank if a.kind == BACKWARD_INPUT)

    def splits_backward(self, stage: int) -> bool:
        """True when ``stage``'s backward runs as I then W."""
        return any(s == stage for s, _ in self.split_backwards)

    def with_actions(self, actions: list[list[Action]]) -> "Schedule":
        return Schedule(self.name, self.num_ranks, self.num_microbatches, self.stage_to_rank,
                        tuple(tuple(a) for a in actions), self.description)


def linear_placement(ranks: int) -> tuple[int, ...]:
    """One stage per rank: stage r on rank r."""
    return tuple(range(ranks))


def interleaved_placement(ranks: int, chunks: int) -> tuple[int, ...]:
    """Megatron's round robin (arXiv 2104.04473, section 2.2): rank r holds stages r, r+p, r+2p..."""
    return tuple(s % ranks for s in range(ranks * chunks))


def v_placement(ranks: int) -> tuple[int, ...]:
    """ZB-V (arXiv 2401.10241, section 6): stage s on rank s going down, then back up the V,
    so rank r holds stages r and 2p-1-r and the last stage sits on rank 0 with the first."""
    return tuple(range(ranks)) + tuple(reversed(range(ranks)))


@dataclass(frozen=True)
class ScheduleInfo:
    name: str
    build: Callable[..., Schedule]
    summary: str
    paper: str
    synchronous: bool = True
    splits_backward: bool = False
    chunks: tuple[int, ...] = (1,)
    """Chunk counts v the builder accepts; (-1,) means any v >= 1."""


REGISTRY: dict[str, ScheduleInfo] = {}


def register(name: str, *, summary: str, paper: str, synchronous: bool = True,
             splits_backward: bool = False, chunks: tuple[int, ...] = (1,)):
    def wrap(fn: Callable[..., Schedule]) -> Callable[..., Schedule]:
        REGISTRY[name] = ScheduleInfo(name, fn, summary, paper, synchronous, splits_backward, chunks)
        return fn
    return wrap


def check_counts(ranks: int, microbatches: int) -> None:
    if not isinstance(ranks, int) or ranks < 1:
        raise ScheduleError(f"stages must be a whole number >= 1, got {ranks!r}")
    if not isinstance(microbatches, int) or microbatches < 1:
        raise ScheduleError(f"micro-batches must be a whole number >= 1, got {microbatches!r}")


def get_schedule_info(name: str) -> ScheduleInfo:
    if name not in REGISTRY:
        raise ScheduleError(f"unknown schedule {name!r}; valid schedules: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def build_schedule(name: str, ranks: int, microbatches: int, chunks: int | None = None) -> Schedule:
    """Build a registered schedule; errors name the broken constraint."""
    info = get_schedule_info(name)
    check_counts(ranks, microbatches)
    if chunks is None:
        chunks = 2 if info.chunks == (-1,) else info.chunks[0]
    any_v = info.chunks == (-1,)  # the registry's "any v >= 1"; -1 itself is not a chunk count
    if not (isinstance(chunks, int) and chunks >= 1 if any_v else chunks in info.chunks):
        allowed = "any v >= 1" if any_v else " or ".join(map(str, info.chunks))
        raise ScheduleError(f"{name} takes chunks {allowed}, got {chunks}")
    return info.build(ranks, microbatches, chunks)
