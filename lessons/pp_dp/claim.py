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
    ratio_headline,
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
    NOISE,
    RATIO_NOISE,
    RATIO_TOLERANCE,
    ClaimRow,
    Entries,
    Verdict,
    say,
    say_own,
)
from pipelab.lessons.why import sentence_with_why

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
    step = dp.step_time_s
    t_b = sum(result.metrics.costs_s.backward) / len(result.metrics.costs_s.backward)
    at_flush = dp.reduce_at == "flush"
    formula = tuple(theory.exposed_reduce_s(s, t_b, t_r, at_flush) / step for s, t_r in enumerate(dp.reduce_cost_s))
    return dp.exposed_fraction("device"), dp.exposed_fraction("simulated"), formula


def model_mib(result) -> float:
    """The most parameter bytes any device holds, MiB: the whole model over p."""
    return max(m.parameter_bytes for m in result.memory.values()) / 2 ** 20


def check(claim: str, kind: str, entries: Entries) -> Verdict:
    """The step of each layout follows theory at the runs' own costs (a smaller bubble against
    an all-reduce and d times the model per device), every run's bubble follows the simulator,
    and each stage's exposed all-reduce is the simulator's within EXPOSED_TOLERANCE of the step."""
    runs = {name: layout_of(entries, name) for name in LAYOUTS}
    if kind != COMPARISON or None in runs.values():
        return untested(claim, say_own("wanted"), kind, entries)
    one, two, flush, replicas = runs["pipeline"], runs["backward"], runs["flush"], runs["replicas"]
    rows: list[ClaimRow] = []
    bands: list = []  # each figure that misses its limit within the noise band: its sentence
    bubbles_ok = bubbles_near = True
    for result in runs.values():
        m = result.metrics
        rows.append(ClaimRow(say_own("row.layout_bubble", layout=layout_name(result)), m.bubble_fraction,
                             m.formula_bubble_fraction, m.simulated_bubble_fraction))
        gap = abs(m.bubble_fraction - m.simulated_bubble_fraction)
        judged = against(gap, BUBBLE_TOLERANCE, BUBBLE_NOISE)
        bubbles_ok, bubbles_near = bubbles_ok and judged.ok, bubbles_near and judged.near
        bands.append(judged)
    steps = []
    for result in (two, replicas):
        row = ratio_row(say("row.step_ratio", a=layout_name(result), b=layout_name(one)), result, one, step_time,
                        None, safe_ratio(result.metrics.simulated_step_time_s, one.metrics.simulated_step_time_s))
        rows.append(row)
        steps.append(row)
    placement = ratio_row(say("row.step_ratio", a=say_own("at_flush"), b=say_own("after_backward")), flush, two,
                          step_time, None, safe_ratio(flush.metrics.simulated_step_time_s,
                                                      two.metrics.simulated_step_time_s))
    rows.append(placement)
    steps.append(placement)
    judged_steps = [against(abs(r.measured - r.simulated), RATIO_TOLERANCE, RATIO_NOISE / 2, digits=2) for r in steps]
    steps_ok, steps_near = all(j.ok for j in judged_steps), all(j.near for j in judged_steps)
    bands += judged_steps
    exposed_ok = exposed_near = True
    shares = {}
    for name, result in (("after_backward", two), ("at_flush", flush)):
        measured, simulated, formula = exposed_shares(result)
        shares[name] = measured, simulated
        for s, (got, sim, closed) in enumerate(zip(measured, simulated, formula)):
            rows.append(ClaimRow(say_own("row.exposed", stage=s, where=say_own(name)), got, closed, sim))
            judged = against(abs(got - sim), EXPOSED_TOLERANCE, EXPOSED_NOISE)
            exposed_ok, exposed_near = exposed_ok and judged.ok, exposed_near and judged.near
            bands.append(judged)
    for result in (one, two, replicas):
        rows.append(ClaimRow(say_own("row.model", layout=layout_name(result)), model_mib(result),
                             model_mib(one) * one.config.stages / result.config.stages, None, "MiB"))
    ok, near = bubbles_ok and steps_ok and exposed_ok, bubbles_near and steps_near and exposed_near
    status = status_of(ok, near)
    first = say_own("said.steps", two=f"{steps[0].measured:.2f}", two_theory=f"{steps[0].simulated:.2f}",
                    replicas=f"{steps[1].measured:.2f}", replicas_theory=f"{steps[1].simulated:.2f}")
    second = say_own("said.exposed", after=_shares(shares["after_backward"][0]),
                     after_theory=_shares(shares["after_backward"][1]), flush=_shares(shares["at_flush"][0]),
                     flush_theory=_shares(shares["at_flush"][1]), tolerance=EXPOSED_TOLERANCE)
    if status == NOISE:  # the first figure that missed its limit says by how much, and the band it had
        second = next(j for j in bands if j.band).after(second)
    if not (bubbles_near and steps_near and exposed_near):
        # The why names the largest measured effect of the run furthest from its simulator.
        worst = max(runs.values(), key=lambda r: abs(r.metrics.bubble_fraction - r.metrics.simulated_bubble_fraction))
        return Verdict(claim, tuple(rows), status, sentence_with_why(say("then", first=first, second=second),
                                                                      status, worst.metrics), COLUMNS)
    return Verdict(claim, tuple(rows), status, say("end", sentence=say("then", first=first, second=second)), COLUMNS)


def _shares(values) -> str:
    """Per stage, "0.06 / 0.00": stage 0 first."""
    return " / ".join(f"{v:.2f}" for v in values)


COLUMNS = ("layout (d x p)", "step ms (device)", "step ms (simulated)", "bubble (device)", "bubble (formula)",
           "exposed reduce ms (device)", "exposed reduce ms (simulated)", "parameters per device (MiB)")
"""The comparison table's columns that test the claim (app/views/results.py summary_rows)."""


headline = ratio_headline(step_time)
"""The figure a comparison's rounds are ranked by (Lesson.headline): the first comparison's
step over the lesson's own run's."""
