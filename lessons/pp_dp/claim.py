"""Does this lesson's claim hold in what its page finished? Its check (``check``) on finished results,
and the figure its comparison's rounds are ranked by (``headline``); the shared vocabulary is
pipelab.lessons.verdict and pipelab.lessons.judging.

The page runs four layouts of the same 4 workers on one global batch, in one launch whose
steps take turns (engine/runtime/alternating.py): one pipeline of 4 stages, 2 pipelines of 2
stages with each stage's all-reduce after its own last backward, the same at the flush, and
4 replicas without a pipeline (plain data parallelism)."""

from __future__ import annotations

from pipelab.engine.theory import formulas as theory
from pipelab.lessons.judging import (
    against,
    ratio_row,
    safe_ratio,
    status_of,
    step_time,
    untested,
)
from pipelab.lessons.verdict import (
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    COMPARISON,
    FAILS,
    NOISE,
    RATIO_NOISE,
    RATIO_TOLERANCE,
    ClaimRow,
    Entries,
    Verdict,
    say,
    say_own,
    say_sentences,
)
from pipelab.lessons.why import largest_effect, sentence_with_why

EXPOSED_TOLERANCE = 0.02
"""How far a stage's measured exposed all-reduce, as a share of the step, may sit from the
simulator's at the run's own costs."""
EXPOSED_NOISE = 0.01
"""Beyond it, what a busy shared host moves that share between two identical runs."""

LAYOUTS = {
    # name: (pipeline stages p, replicas d, where each stage's all-reduce goes)
    "pipeline": (4, 1, "backward"),
    "backward": (2, 2, "backward"),
    "flush": (2, 2, "flush"),
    "replicas": (1, 4, "backward"),
}
"""The four layouts of 4 workers the page runs (its run, then its comparisons in order)."""


def layout_of(entries: Entries, name: str):
    """The result of one of LAYOUTS among the page's (label, result) pairs, or None."""
    stages, replicas, reduce_at = LAYOUTS[name]
    for _, result in entries:
        c = result.config
        if (c.stages, c.data_parallel) == (stages, replicas) and (replicas == 1 or c.reduce_at == reduce_at):
            return result
    return None


def layout_name(result) -> str:
    """"p = 2, d = 2": the layout, as every row names it (", at the flush" where it reduces there)."""
    c = result.config
    name = say_own("layout", p=c.stages, d=c.data_parallel)
    return say_own("layout_flush", layout=name) if c.data_parallel > 1 and c.reduce_at == "flush" else name


def exposed_shares(result) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """Per stage, its exposed all-reduce as a share of the step: measured (device clock),
    simulated at the run's own costs, and the formula, max(0, t_R - s x t_B) (or t_R at the
    flush) with the run's mean T_B and each stage's measured t_R."""
    dp = result.data_parallel
    step = dp.device_step_time_s
    t_b = sum(result.metrics.costs_s.backward) / len(result.metrics.costs_s.backward)
    at_flush = dp.reduce_at == "flush"
    formula = tuple(theory.exposed_reduce_s(s, t_b, t_r, at_flush) / step for s, t_r in enumerate(dp.reduce_cost_s))
    return dp.exposed_fraction("device"), dp.exposed_fraction("simulated"), formula


def model_mib(result) -> float:
    """The most parameter bytes any device holds, MiB: the whole model over p."""
    return max(m.parameter_bytes for m in result.memory.values()) / 2 ** 20


def check(claim: str, kind: str, entries: Entries) -> Verdict:
    """The step of each layout follows theory at the runs' own costs (a smaller bubble against
    an all-reduce and d times the model per device), each stage's exposed all-reduce is the
    simulator's within EXPOSED_TOLERANCE of the step, and every run's bubble follows the simulator."""
    runs = {name: layout_of(entries, name) for name in LAYOUTS}
    if kind != COMPARISON or None in runs.values():
        return untested(claim, say_own("wanted"), kind, entries)
    steps, judged_steps = step_rows(runs)
    exposed, judged_exposed, shares = exposed_rows(runs)
    bubbles, judged_bubbles = bubble_rows(runs)
    judged = judged_steps + judged_exposed + judged_bubbles
    status = status_of(all(j.ok for j in judged), all(j.near for j in judged))
    # The table's digits: at two, its 0.165 and 0.165 read 0.16 against 0.17 in the sentence.
    first = say_own("said.steps", two=f"{steps[0].measured:.3f}", two_theory=f"{steps[0].simulated:.3f}",
                    replicas=f"{steps[1].measured:.3f}", replicas_theory=f"{steps[1].simulated:.3f}")
    second = say_own("said.exposed", after=_shares(shares["after_backward"][0]),
                     after_theory=_shares(shares["after_backward"][1]), flush=_shares(shares["at_flush"][0]),
                     flush_theory=_shares(shares["at_flush"][1]), tolerance=EXPOSED_TOLERANCE)
    if status == NOISE:  # the first figure that missed its limit says by how much, and the band it had
        second = next(j for j in judged if j.band).after(second)
    said = say("then", first=first, second=second)
    # Where it fails, the why names the largest measured effect of the run furthest from its simulator.
    worst = max(runs.values(),
                key=lambda r: abs(r.metrics.device_bubble_fraction - r.metrics.simulated_bubble_fraction))
    rows = (*steps, *exposed, *bubbles, *model_rows(runs))
    reason = sentence_with_why(said, status, worst.metrics)
    # Every layout whose bubble sits past the tolerance from its formula (the table's formula
    # column) has that gap named, whatever the status: the breakdown's largest effects.
    named = [largest_effect(r.metrics, name=layout_name(r)) for r in far_from_formula(runs)
             if not (status == FAILS and r is worst)]
    return Verdict(claim, rows, status, say_sentences([reason, *named]), COLUMNS)


def far_from_formula(runs: dict) -> list:
    """The runs whose measured bubble sits more than BUBBLE_TOLERANCE from the formula's."""
    return [r for r in runs.values() if r.metrics.formula_bubble_fraction is not None
            and abs(r.metrics.device_bubble_fraction - r.metrics.formula_bubble_fraction) > BUBBLE_TOLERANCE]


def step_rows(runs: dict) -> tuple[list[ClaimRow], list]:
    """2 x 2 and 4 x 1 against the one long pipeline, and the flush against after-the-backward:
    each step ratio (the median over pairs of steps) against theory's at the runs' own costs."""
    one = runs["pipeline"]
    pairs = [(layout_name(runs["backward"]), layout_name(one), runs["backward"], one),
             (layout_name(runs["replicas"]), layout_name(one), runs["replicas"], one),
             (say_own("at_flush"), say_own("after_backward"), runs["flush"], runs["backward"])]
    rows = [ratio_row(say("row.step_ratio", a=a, b=b), ours, other, step_time, None,
                      safe_ratio(ours.metrics.simulated_step_time_s, other.metrics.simulated_step_time_s))
            for a, b, ours, other in pairs]
    return rows, [against(abs(r.measured - r.simulated), RATIO_TOLERANCE, RATIO_NOISE / 2, digits=2) for r in rows]


def exposed_rows(runs: dict) -> tuple[list[ClaimRow], list, dict]:
    """Per stage of the two 2 x 2 runs, its exposed all-reduce (a share of the step) against the
    simulator's; and the shares the sentence quotes."""
    rows, judged, shares = [], [], {}
    for name, result in (("after_backward", runs["backward"]), ("at_flush", runs["flush"])):
        measured, simulated, formula = exposed_shares(result)
        shares[name] = measured, simulated
        for s, (got, sim, closed) in enumerate(zip(measured, simulated, formula)):
            rows.append(ClaimRow(say_own("row.exposed", stage=s, where=say_own(name)), got, closed, sim))
            judged.append(against(abs(got - sim), EXPOSED_TOLERANCE, EXPOSED_NOISE))
    return rows, judged, shares


def bubble_rows(runs: dict) -> tuple[list[ClaimRow], list]:
    """Every layout's bubble (its exposed all-reduce counts as idle) against the simulator's."""
    rows = [ClaimRow(say_own("row.layout_bubble", layout=layout_name(r)), r.metrics.device_bubble_fraction,
                     r.metrics.formula_bubble_fraction, r.metrics.simulated_bubble_fraction) for r in runs.values()]
    return rows, [against(abs(r.measured - r.simulated), BUBBLE_TOLERANCE, BUBBLE_NOISE) for r in rows]


def model_rows(runs: dict) -> list[ClaimRow]:
    """The model each device holds: the whole over p."""
    one = runs["pipeline"]
    return [ClaimRow(say_own("row.model", layout=layout_name(r)), model_mib(r),
                     model_mib(one) * one.config.stages / r.config.stages, None, "MiB")
            for r in (one, runs["backward"], runs["replicas"])]


def _shares(values) -> str:
    """Per stage, "0.065 / 0.000": stage 0 first, with the claim table's digits."""
    return " / ".join(f"{v:.3f}" for v in values)


COLUMNS = ("layout (d x p)", "step ms (device)", "step ms (simulated)", "bubble (device)", "bubble (formula)",
           "exposed reduce ms (device)", "exposed reduce ms (simulated)", "parameters per device (MiB)")
"""The comparison table's columns that test the claim (app/views/results.py summary_rows)."""


def headline(results) -> float:
    """The figure a comparison's rounds are ranked by (Lesson.headline): the verdict's first row,
    the first comparison's step (2 pipelines of 2) over the lesson's own run's (one of 4)."""
    return step_time(results[1]) / step_time(results[0])
