"""The papers' figures at their own scale: our simulator fed their setups, beside their numbers.

Zero Bubble (arXiv 2401.10241) reports, in Table 5, the bubble rate of 1F1B, 1F1B-I, ZB-H1,
ZB-H2, ZB-1p and ZB-2p for GPT models of 1.5B to 28.3B parameters (setups in Table 3), from
the pass costs it profiled (Table 9: T_F, T_B, T_W, T_comm). Its bubble rate is

    1 - m (T_F + T_B + T_W) / (the longest stage's span, its first F to its last pass)

(section 5.1): each stage's own span, because with post-validation (section 4) a stage
starts the next step when its own work is done. ``paper_bubble_rate`` computes that rate
from our simulator; ``table5_rates`` does it for every schedule the table lists, built for
the setup's costs. Megatron's interleaved 1F1B (arXiv 2104.04473, section 2.2) and the
DualPipe README's columns (engine/theory/dualpipe_table.py) are compared the same way in
``megatron_rows`` and bench/papers.py.

``TABLE_5`` holds the published rows. It is empty on purpose: the tables' numbers were not
in the sources this module was written from, and a figure typed from memory would be an
invented one. A row added from the paper (with its table numbers in a comment) is checked
by tests/test_papers.py and printed by bench/papers.py with no other change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pipelab.engine.theory import formulas as theory
from pipelab.engine.schedules import build_schedule
from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.theory.simulate import CostModel, simulate

TABLE5_SCHEDULES: Mapping[str, str] = {
    # the paper's column -> our registered schedule
    "1F1B": "1f1b", "1F1B-I": "interleaved", "ZB-H1": "zb-h1", "ZB-H2": "zb-h2", "ZB-1p": "zb-1p", "ZB-2p": "zb-2p"}

INTERLEAVED_CHUNKS = 2
"""v for the 1F1B-I column: two chunks per device, Megatron's usual setting (an assumption
until a row says otherwise)."""


@dataclass(frozen=True, kw_only=True)
class PublishedRow:
    """One setup of the paper with its profiled costs and its published bubble rates."""

    model: str
    """The model's size as the paper names it, e.g. "6.2B"."""
    p: int
    """Pipeline stages (devices)."""
    m: int
    """Micro-batches per step."""
    costs: PassCosts
    """Table 9's T_F, T_B (our T_I), T_W, T_comm for this model, one stage's."""
    rates: Mapping[str, float] = field(default_factory=dict)
    """Table 5's bubble rate per column of TABLE5_SCHEDULES."""


TABLE_5: tuple[PublishedRow, ...] = ()
"""arXiv 2401.10241, Table 5 (rates) with Table 9 (costs) and Table 3 (setups): not yet
typed in; see the module docstring."""


def paper_bubble_rate(name: str, p: int, m: int, costs: PassCosts, chunks: int | None = None) -> float:
    """The paper's bubble rate (section 5.1) of schedule ``name`` built for ``costs`` and
    played by our simulator; ``costs`` are a whole stage's (an interleaved chunk does 1/v)."""
    schedule = build_schedule(name, p, m, chunks, costs=costs)
    v = schedule.chunks
    timeline = simulate(schedule, CostModel(forward=costs.forward / v, backward_input=costs.backward_input / v,
                                            backward_weight=costs.backward_weight / v, link=costs.link))
    spans = []
    for r in range(p):
        mine = [e for e in timeline.events if e.rank == r]
        spans.append(max(e.end for e in mine) - min(e.start for e in mine))
    longest = max(spans)
    return 1.0 - m * costs.work / longest


def table5_rates(p: int, m: int, costs: PassCosts) -> dict[str, float]:
    """Our rate for every column of Table 5, in the table's order."""
    return {column: paper_bubble_rate(name, p, m, costs, INTERLEAVED_CHUNKS if name == "interleaved" else None)
            for column, name in TABLE5_SCHEDULES.items()}


def formula_rates(p: int, m: int, costs: PassCosts) -> dict[str, float | None]:
    """The paper's closed forms where it gives one, communication left out (section 2):
    1F1B (p-1)(T_F+T_B+T_W), ZB-H1 (p-1)(T_F+T_B-T_W), ZB-H2 (p-1)(T_F+T_B-2T_W), each over
    m (T_F+T_B+T_W) plus itself; None for the columns without one."""
    f, i, w = costs.forward, costs.backward_input, costs.backward_weight
    times = {"1F1B": theory.one_f_one_b_bubble_time(p, f, i, w), "ZB-H1": theory.zb_h1_bubble_time(p, f, i, w),
             "ZB-H2": theory.zb_h2_bubble_time(p, f, i, w)}
    return {column: (theory.bubble_fraction_from_time(times[column], m, costs.work) if column in times else None)
            for column in TABLE5_SCHEDULES}


@dataclass(frozen=True)
class ComparedRow:
    """A published row beside ours."""
    row: PublishedRow
    ours: Mapping[str, float]

    def differences(self) -> dict[str, float]:
        """Ours minus the paper's, for each column the paper gives."""
        return {c: self.ours[c] - published for c, published in self.row.rates.items()}


def compare(row: PublishedRow) -> ComparedRow:
    return ComparedRow(row, table5_rates(row.p, row.m, row.costs))


@dataclass(frozen=True)
class MegatronRow:
    """Megatron's interleaved bubble (arXiv 2104.04473, section 2.2) beside the simulator's."""
    p: int
    m: int
    v: int
    formula: float
    """(p-1)/v / (m + (p-1)/v): the bubble over the step, equal-cost stages."""
    simulated: float
    """Our simulator's synchronous-step bubble of the interleaved schedule, T_F = T_I = T_W."""


def megatron_rows(shapes: tuple[tuple[int, int, int], ...]) -> tuple[MegatronRow, ...]:
    """One row per (p, m, v); the formula holds where m is a multiple of p (Megatron's rule)."""
    rows = []
    for p, m, v in shapes:
        schedule = build_schedule("interleaved", p, m, v)
        chunk = 1.0 / v
        timeline = simulate(schedule, CostModel(forward=chunk, backward_input=chunk, backward_weight=chunk))
        rows.append(MegatronRow(p, m, v, theory.interleaved_bubble_fraction(p, m, v),
                                1.0 - max(timeline.busy_time()) / timeline.step_time()))
    return tuple(rows)
