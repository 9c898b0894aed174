"""Our schedules as torch.distributed.pipelining's compute-only CSV, and back.

torch's ``_PipelineScheduleRuntime._load_csv`` (and torchtitan's
``--parallelism.pipeline_parallel_schedule_csv``) reads one row per rank, each cell an
action ``<stage><kind><micro-batch>`` (``0F1``, ``1I0``, ``1W0``, ``2B3``), an empty cell an
idle slot. Its stage index is the pipeline position (stage 0 holds the input layer, s feeds
s+1) and it infers which rank holds a stage from the row that names it: interleaved puts
chunk c of rank r at stage c*p + r, a V puts stages r and 2p-1-r on rank r. Our
``Schedule`` numbers stages the same way (``Action.stage`` is the pipeline position and
``stage_to_rank`` is the placement, engine/schedules/base.py), so a cell's stage is our
stage unchanged; ``export_rows`` still checks the placement torch will infer is ours, so a
schedule whose numbering ever drifted would fail here rather than run wrongly there.

torch's kinds F, B, I, W are ours, and our R (a stage's gradients reduced over its
data-parallel replicas, engine/schedules/data_parallel.py) is torch's ``REDUCE_GRAD``, a cell
without a micro-batch (``2REDUCE_GRAD``), which torch's ``_add_reduce_grad`` places where our
``with_gradient_reduce`` does: right after a stage's last backward. Our U (an optimizer step
inside the step, PipeDream and 2BW) has no CSV form: torch's runtime updates once, outside
``step()``, so those schedules are refused. The other way, torch's ``(a;b)OVERLAP_F_B`` cell
(DualPipeV pairs a forward with a backward) becomes its two actions in order; communication
and FSDP cells (SEND_F, RECV_B, UNSHARD, ...) belong to torch's lowered "compute_comms" format
and are refused.
"""

from __future__ import annotations

import csv
import io
import re

from pipelab.engine.actions import REDUCE_GRAD, Action, ScheduleError
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.registry import CUSTOM
from pipelab.engine.theory.validate import parse_schedule, validate

FORMAT = "torch-csv"
"""The --format name of this export."""

_OVERLAP = re.compile(r"^\((.*)\)OVERLAP_F_B$")
_COMPUTE = re.compile(r"^(\d+)([FBIW])(\d+)$")
_REDUCE = re.compile(r"^(\d+)REDUCE_GRAD$")
_OUR_REDUCE = re.compile(rf"^\d+{REDUCE_GRAD}0$")
TORCH_REDUCE = "REDUCE_GRAD"
"""torch's name for our R."""


def torch_cell(action: Action) -> str:
    """One action as torch writes it: ``1F3``, or ``2REDUCE_GRAD`` (no micro-batch)."""
    return f"{action.stage}{TORCH_REDUCE}" if action.kind == REDUCE_GRAD else str(action)


def _ours(cell: str) -> str:
    """A torch cell in our text form: ``2REDUCE_GRAD`` is ``2R0``."""
    reduce = _REDUCE.match(cell)
    return f"{reduce.group(1)}{REDUCE_GRAD}0" if reduce else cell


def export_rows(schedule: Schedule) -> tuple[tuple[str, ...], ...]:
    """Each rank's actions as torch cells, in program order (no idle cells: torch's runtime
    runs a rank's list in order and waits on messages itself, as ours does)."""
    if schedule.is_async:
        raise ScheduleError.of("torch_csv_async", schedule=schedule.name)
    rows = tuple(tuple(torch_cell(a) for a in program) for program in schedule.actions)
    inferred = torch_placement(rows)
    if inferred != schedule.stage_to_rank:
        raise ScheduleError.of("torch_csv_placement", schedule=schedule.name, ours=schedule.stage_to_rank,
                               torch=inferred)
    return rows


def export_csv(schedule: Schedule) -> str:
    """The CSV text torch's ``_load_csv`` reads."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(export_rows(schedule))
    return out.getvalue()


def torch_placement(rows) -> tuple[int, ...]:
    """stage -> rank as torch's ``_validate_schedule`` infers it: the rank whose row names
    the stage (a stage on two rows is an error there, and in ``import_csv`` here)."""
    owner: dict[int, int] = {}
    for rank, row in enumerate(rows):
        for cell in row:
            owner.setdefault(Action.parse(_ours(cell)).stage, rank)
    return tuple(owner[s] for s in sorted(owner))


def import_csv(text: str, num_microbatches: int | None = None, name: str = CUSTOM) -> Schedule:
    """A compute-only torch CSV as our Schedule, validated (it simulates and runs here).
    m defaults to the largest micro-batch index named plus one."""
    rows = list(csv.reader(io.StringIO(text)))
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()  # blank lines at the end; an empty row before them is a rank without work (validate says so)
    programs = [[token for column, cell in enumerate(row) for token in _cell_actions(cell, rank, column)]
                for rank, row in enumerate(rows)]
    text_form = "\n".join(f"rank {r}: " + " ".join(program) for r, program in enumerate(programs))
    schedule = parse_schedule(text_form, num_microbatches=num_microbatches, name=name)
    validate(schedule)
    return schedule


def _cell_actions(cell: str, rank: int, column: int) -> list[str]:
    cell = cell.strip()
    if not cell:
        return []  # an idle slot: torch's None
    overlap = _OVERLAP.match(cell)
    parts = overlap.group(1).split(";") if overlap else [cell]
    actions = [_ours(part.strip()) for part in parts if part.strip()]
    for part in actions:
        if not _COMPUTE.match(part) and not _OUR_REDUCE.match(part):
            raise ScheduleError.of("torch_csv_cell", cell=repr(cell), rank=rank, column=column)
    return actions

