"""The papers' figures at their own scale: our simulator fed their setups, beside their numbers.

Zero Bubble (arXiv 2401.10241) reports, in Table 5, the bubble rate of 1F1B, 1F1B-I, ZB-H1,
ZB-H2, ZB-1p and ZB-2p for GPT models of 1.5B to 28.3B parameters (setups in Table 3), from
the pass costs it profiled (Table 9: T_F, T_B, T_W, T_comm). Its bubble rate (section 5.3) is

    (cost - m (T_F + T_B + T_W)) / cost

where cost is "the largest execution time of all stages, calculated for each schedule using
profiled T_F, T_B, T_W and T_comm values": a stage's execution time runs from its first pass
to its last (with post-validation, section 4, a stage starts the next step when its own work
is done). ``paper_bubble_rate`` computes that rate from our simulator; ``table5_rates`` does
it for every schedule the table lists, built for the setup's costs. Megatron's interleaved
1F1B (arXiv 2104.04473, section 2.2) and the DualPipe README's columns
(engine/theory/dualpipe_table.py) are compared the same way in ``megatron_rows`` and
bench/papers.py.

``TABLE_5`` holds the twelve published rows, typed from the paper with each number's table
in a comment. Two of a row's inputs come from Table 3 rather than Table 9: 1F1B-I's chunks
per device ("each transformer layer serves as a chunk", the first and last stage having one
fewer layer, so (layers + 2) / p), and the share of a micro-batch's activations that W still
reads after I (Table 1: 32sbh of sb(34h + 5as), s = 1024), which the automatic schedules'
memory limits count. tests/test_papers.py checks every column within 0.005: five to the
table's four decimals, 1F1B-I up to 0.0035 higher, because our simulator makes every
micro-batch's hop from the last stage back to the first (its next chunk) wait for T_comm,
where the authors' replay of the schedule (efficiency.py in
sail-sg/zero-bubble-pipeline-parallelism) makes only the first of each group of p wait.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from pipelab.engine.schedules import build_schedule, chunks_for
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.cost_search import own_spans
from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.simulate import CostModel, simulate

TABLE5_SCHEDULES: Mapping[str, str] = {
    # the paper's column -> our registered schedule
    "1F1B": "1f1b", "1F1B-I": "interleaved", "ZB-H1": "zb-h1", "ZB-H2": "zb-h2", "ZB-1p": "zb-1p", "ZB-2p": "zb-2p"}

INTERLEAVED_CHUNKS = 2
"""v for the 1F1B-I column at costs of one's own: two chunks per device, Megatron's usual
setting. The paper's rows have their own (PublishedRow.chunks: one per layer)."""


SEQUENCE_LENGTH = 1024
"""s in every setup of Table 3."""


@dataclass(frozen=True, kw_only=True)
class Model:
    """A model of the paper's Table 3: what the schedules need of it."""

    name: str
    """The model's size as the paper names it, e.g. "6.2B"."""
    layers: int
    """Transformer layers."""
    heads: int
    """Attention heads, the paper's a."""
    hidden: int
    """Hidden size, the paper's h."""

    def layers_per_stage(self, p: int) -> int:
        """Layers on a middle stage: the first and last stages each have one fewer (Table 3's text)."""
        return (self.layers + 2) // p

    @property
    def weight_memory(self) -> float:
        """The share of a micro-batch's activations W still reads once I has run: 32h over
        34h + 5as per layer (Table 1: B needs sb(34h + 5as), W needs 32sbh)."""
        return 32 * self.hidden / (34 * self.hidden + 5 * self.heads * SEQUENCE_LENGTH)


MODELS: Mapping[str, Model] = {model.name: model for model in (
    # arXiv 2401.10241, Table 3: layers, attention heads, hidden size (sequence length 1024).
    Model(name="1.5B", layers=22, heads=24, hidden=2304),
    Model(name="6.2B", layers=30, heads=32, hidden=4096),
    Model(name="14.6B", layers=46, heads=40, hidden=5120),
    Model(name="28.3B", layers=62, heads=48, hidden=6144))}


@dataclass(frozen=True, kw_only=True)
class PublishedRow:
    """One setup of the paper with its profiled costs and its published bubble rates."""

    model: str
    """The model's size as the paper names it, e.g. "6.2B" (a key of MODELS)."""
    p: int
    """Pipeline stages (devices)."""
    m: int
    """Micro-batches per step."""
    costs: PassCosts
    """Table 9's T_F, T_B (our T_I), T_W, T_comm for this model, one stage's (in ms), with the
    model's W share of memory (Model.weight_memory)."""
    chunks: int = INTERLEAVED_CHUNKS
    """1F1B-I's chunks per device: one per layer of a stage (Model.layers_per_stage)."""
    rates: Mapping[str, float] = field(default_factory=dict)
    """Table 5's bubble rate per column of TABLE5_SCHEDULES."""


def _row(model: str, p: int, m: int, t_f: float, t_b: float, t_w: float, t_comm: float,
         rates: tuple[float, float, float, float, float, float]) -> PublishedRow:
    """A row from Table 9's costs and Table 5's rates, in the tables' column order."""
    setup = MODELS[model]
    costs = PassCosts(forward=t_f, backward_input=t_b, backward_weight=t_w, link=t_comm,
                      weight_memory=setup.weight_memory)
    return PublishedRow(model=model, p=p, m=m, costs=costs, chunks=setup.layers_per_stage(p),
                        rates=dict(zip(TABLE5_SCHEDULES, rates)))


TABLE_5: tuple[PublishedRow, ...] = (
    # arXiv 2401.10241. Model, p, m: Table 3 (and Tables 5 and 9). T_F, T_B, T_W, T_comm in ms:
    # Table 9 ("the profiled time ... in ZB-2p", the inputs of section 5.3). Rates: Table 5,
    # columns 1F1B, 1F1B-I, ZB-H1, ZB-H2, ZB-1p, ZB-2p.
    #    model   p    m   T_F     T_B     T_W     T_comm  Table 5
    _row("1.5B", 8, 24, 18.522, 18.086, 9.337, 0.601, (0.2431, 0.1055, 0.1585, 0.1083, 0.1585, 0.0433)),
    _row("1.5B", 8, 32, 18.513, 18.086, 9.331, 0.626, (0.1985, 0.0818, 0.1242, 0.0837, 0.1242, 0.0039)),
    _row("1.5B", 8, 64, 18.546, 18.097, 9.321, 0.762, (0.1240, 0.0443, 0.0674, 0.0444, 0.0674, 0.0026)),
    _row("6.2B", 8, 24, 29.718, 29.444, 19.927, 0.527, (0.2347, 0.0808, 0.1323, 0.0698, 0.1323, 0.0029)),
    _row("6.2B", 8, 32, 29.802, 29.428, 19.530, 0.577, (0.1898, 0.0628, 0.1045, 0.0559, 0.1045, 0.0022)),
    _row("6.2B", 8, 64, 29.935, 29.621, 19.388, 0.535, (0.1091, 0.0320, 0.0554, 0.0294, 0.0554, 0.0010)),
    _row("14.6B", 16, 48, 11.347, 11.248, 8.132, 0.377, (0.2552, 0.1104, 0.1397, 0.0672, 0.1397, 0.0066)),
    _row("14.6B", 16, 64, 11.307, 11.254, 8.101, 0.379, (0.2082, 0.0852, 0.1088, 0.0516, 0.1088, 0.0054)),
    _row("14.6B", 16, 128, 11.325, 11.308, 8.109, 0.378, (0.1251, 0.0445, 0.0576, 0.0266, 0.0576, 0.0028)),
    _row("28.3B", 32, 96, 10.419, 10.207, 7.715, 0.408, (0.2646, 0.1493, 0.1421, 0.0641, 0.1421, 0.0038)),
    _row("28.3B", 32, 128, 10.408, 10.204, 7.703, 0.408, (0.2168, 0.1164, 0.1106, 0.0490, 0.1106, 0.0029)),
    _row("28.3B", 32, 256, 10.402, 10.248, 7.698, 0.460, (0.1352, 0.0624, 0.0594, 0.0257, 0.0594, 0.0018)),
)
"""arXiv 2401.10241, Table 5 (rates) with Table 9 (costs) and Table 3 (setups)."""


def built(name: str, p: int, m: int, costs: PassCosts, chunks: int | None = None) -> Schedule:
    """Schedule ``name`` as Table 5 compares it: built for ``costs``, with ``chunks`` per device
    where the schedule takes a chunk count (1F1B-I), its own count elsewhere."""
    return build_schedule(name, p, m, None if chunks is None else chunks_for(name, chunks), costs=costs)


def span_bubble_rate(events, ranks: int, compute: float) -> float:
    """The Zero Bubble paper's bubble rate (arXiv 2401.10241, section 5.3): the longest stage's
    execution time (its first pass to its last; ``events`` of one step) less one device's
    ``compute``, over that time. Not the step's bubble, which counts every device's idle
    share of the whole step."""
    cost = max(own_spans(events, ranks))
    return (cost - compute) / cost


# Pure, and kept: on a classroom server the students pick the same rows of the papers page, where a
# p = 32 row's schedules, once built (their builders keep them), still took 5 s a pick to play.
@functools.lru_cache(maxsize=256)
def paper_bubble_rate(name: str, p: int, m: int, costs: PassCosts, chunks: int | None = None) -> float:
    """The paper's bubble rate (section 5.3) of schedule ``name`` built for ``costs`` and
    played by our simulator; ``costs`` are a whole stage's (an interleaved chunk does 1/v)."""
    schedule = built(name, p, m, costs, chunks)
    v = schedule.chunks
    timeline = simulate(schedule, CostModel(forward=costs.forward / v, backward_input=costs.backward_input / v,
                                            backward_weight=costs.backward_weight / v, link=costs.link))
    return span_bubble_rate(timeline.events, p, m * costs.work)


def table5_rates(p: int, m: int, costs: PassCosts, chunks: int = INTERLEAVED_CHUNKS) -> dict[str, float]:
    """Our rate for every column of Table 5, in the table's order; 1F1B-I with ``chunks`` per device."""
    return {column: paper_bubble_rate(name, p, m, costs, chunks) for column, name in TABLE5_SCHEDULES.items()}


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
    return ComparedRow(row, table5_rates(row.p, row.m, row.costs, row.chunks))


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
