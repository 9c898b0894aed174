"""The DualPipe README's comparison table, from the formulas and from the simulator.

deepseek-ai/DualPipe compares schedules in three columns: bubble, parameters per device and
activations per device (DeepSeek-V3, arXiv 2412.19437). Here each row gives the closed form
(engine/theory/formulas.py) next to what the simulator measures for the same schedule, so a lesson
can show both. Units are this engine's, for p devices whatever the schedule: a stage is one
device's share of the model (a V's chunk is half of one), times are in the costs given for
a whole stage, and activations count micro-batches of one stage held from F until B or W.
The README counts its PP stages instead: DualPipeV's "2x" parameters are two chunks, one
stage here, and its PP + 1 activations are 2p + 1 chunks, p + 1/2 stages here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.simulate import CostModel, simulate

TABLE_SCHEDULES = ("1f1b", "zb-h1", "zb-v", "dualpipev")

README_COLUMNS = {
    # schedule: (bubble, parameters, activations) as the README writes them, PP its stages
    "1f1b": ("(PP-1)(F+B)", "1x", "PP"),
    "zb-h1": ("(PP-1)(F+B-2W)", "1x", "PP"),  # the README's ZB1P
    "zb-v": None,  # not in the README; arXiv 2401.10241, section 6
    "dualpipev": ("(PP/2-1)(F&B+B-3W)", "2x", "PP+1"),  # PP stages on PP/2 devices
}


@dataclass(frozen=True)
class TableRow:
    schedule: str
    readme: tuple[str, str, str] | None
    """(bubble, parameters, activations) as the README writes them, or None if it has no row."""
    formula_bubble: float
    """Idle time per device in one synchronous step, from the closed form."""
    simulated_bubble: float
    """The same, on the simulator: the worst device's step time minus its busy time."""
    formula_parameters: float
    """Weights per device, in stages (one device's share of the model)."""
    simulated_parameters: float
    """Stages on the busiest device of the built schedule, a chunk counting 1/v."""
    formula_activations: float
    """Peak held activations of the worst device, stages x micro-batches (theory.peak_activations)."""
    simulated_activations: float
    """Timeline.peak_activations of the simulated step, worst device."""


def dualpipe_table(p: int, m: int, t_f: float = 1.0, t_i: float = 1.0, t_w: float = 1.0) -> tuple[TableRow, ...]:
    """One row per schedule of TABLE_SCHEDULES; t_f, t_i, t_w are one whole stage's costs."""
    if m < 2 * p:
        raise ScheduleError(f"the table needs m >= 2p (dualpipev's minimum), got p={p}, m={m}")
    return tuple(_row(name, p, m, t_f, t_i, t_w) for name in TABLE_SCHEDULES)


def _row(name: str, p: int, m: int, t_f: float, t_i: float, t_w: float) -> TableRow:
    schedule = build_schedule(name, p, m)
    v = schedule.chunks
    f, i, w = t_f / v, t_i / v, t_w / v  # a chunk does 1/v of a stage's work
    timeline = simulate(schedule, CostModel(forward=f, backward_input=i, backward_weight=w))
    step = timeline.step_time()
    return TableRow(
        schedule=name, readme=README_COLUMNS[name],
        formula_bubble=theory.formula_bubble_time(name, p, f, i, w),
        simulated_bubble=max(step - busy for busy in timeline.busy_time()),
        formula_parameters=1.0,  # one copy of the weights; DualPipe itself, two directions, holds 2
        simulated_parameters=max(len(schedule.stages_of(r)) for r in range(p)) / v,
        formula_activations=theory.peak_activations(name, p, m),
        simulated_activations=max(timeline.peak_activations()))
