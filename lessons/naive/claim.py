"""Does this lesson's claim hold in what its page finished? Its check (``check``) on finished results,
and the figure its comparison's rounds are ranked by (``headline``); the shared vocabulary is
pipelab.lessons.verdict and pipelab.lessons.judging."""

from __future__ import annotations

import dataclasses
import statistics

from pipelab.lessons.judging import (
    against,
    find_result,
    ratio_row,
    safe_ratio,
    shorter_by,
    status_of,
    step_part,
    untested,
)
from pipelab.lessons.verdict import (
    BUBBLE_COLUMNS,
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    COMPARISON,
    RATIO_NOISE,
    ClaimRow,
    Entries,
    Verdict,
    say,
    say_own,
)
from pipelab.lessons.why import sentence_with_why


def naive(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 1: each device busy about 1/p of the step; GPipe's step with 8 micro-batches on
    the same rows at least 1.5x shorter (theory p m / (m + p - 1), about 2.9 for p = 4).
    The comparison's headline is the busy share of the step, GPipe ÷ naive: each run's step
    time over its own compute, for the same work the step-time ratio the claim is about. The
    step-time ratio itself is judged beside it (judging.step_part): where the two runs took
    turns step by step in one launch, both are the median over pairs of neighbouring steps,
    which saw one host speed (docs/measuring.md, "Step times of two runs")."""
    slow = find_result(entries, "naive")
    if slow is None:
        return untested(claim, "naive", kind, entries)
    m, p = slow.metrics, slow.schedule.num_ranks
    if kind == COMPARISON and find_result(entries, "gpipe") is not None:
        fast = find_result(entries, "gpipe")
        # Work per device in rows of the batch: naive passes m_n x b_n rows through the p
        # devices one after another; GPipe's step lasts m + p - 1 micro-batch slots of b_g rows.
        formula = (p * slow.schedule.num_microbatches * slow.config.microbatch_size
                   / ((fast.schedule.num_microbatches + p - 1) * fast.config.microbatch_size))
        simulated = safe_ratio(1 - fast.metrics.simulated_bubble_fraction, 1 - m.simulated_bubble_fraction)
        naive_label = say("label.naive")
        busy = ratio_row(say_own("row.busy_ratio", a="GPipe", b=naive_label), fast, slow,
                         lambda r: 1 - r.metrics.device_bubble_fraction, formula, simulated)
        step = step_part(fast, slow, "GPipe", naive_label)
        # The claim's step shortens p·m/(m + p - 1) times on unit costs: its formula column is
        # that ratio's inverse (GPipe ÷ naive), the same expression as the busy-share row's.
        step_row = dataclasses.replace(step.rows[0], formula=1 / formula)
        rows = (busy, step_row, *step.rows[1:],
                ClaimRow(say("row.step_of", name=naive_label), m.device_step_time_s * 1e3, None,
                         m.simulated_step_time_s * 1e3, "ms"),
                ClaimRow(say("row.step_of", name="GPipe"), fast.metrics.device_step_time_s * 1e3, None,
                         fast.metrics.simulated_step_time_s * 1e3, "ms"))
        measured = busy.measured
        faster = against(measured, FASTER, FASTER * RATIO_NOISE, at_most=False)
        status = status_of(faster.ok and step.ok, faster.near and step.near)
        said = say("then", first=faster.after(say_own("faster", measured=f"{measured:.3f}",
                                                            formula=f"{formula:.3f}", needs=f"{FASTER:.1f}")),
                   second=step.said)
        apart = _busy_against_step(measured, step.rows[0].measured)
        if apart:
            said = say("then", first=said, second=apart)
        return Verdict(claim, rows, status, sentence_with_why(said, status, fast.metrics),
                       ("step ms (device)", "step ms (simulated)", "bubble (device)"))
    busy = [1 - b for b in m.device_bubble_fraction_per_device]
    simulated = [1 - b for b in m.simulated_bubble_fraction_per_device]
    far = max(range(p), key=lambda r: abs(busy[r] - 1 / p))
    rows = (ClaimRow(say("row.busy_mean"), statistics.fmean(busy), 1 / p, statistics.fmean(simulated)),
            ClaimRow(say("row.busy_far", device=far), busy[far], 1 / p, simulated[far]))
    gap = abs(busy[far] - 1 / p)
    judged = against(gap, BUBBLE_TOLERANCE, BUBBLE_NOISE)
    status = status_of(judged.ok, judged.near)
    said = judged.after(say_own("busy", gap=f"{gap:.3f}", share=f"{1 / p:.3f}", allowed=BUBBLE_TOLERANCE))
    return Verdict(claim, rows, status, sentence_with_why(said, status, m), BUBBLE_COLUMNS)


APART = 0.005
"""The busy-share ratio and the step-time ratio read apart when GPipe's compute time per step
differs from naive's by more than this share: the verdict then says why the two differ. Half a
percent: at 2 % the walk read "2.806x" beside "2.9x shorter" with no word on why."""


def _busy_against_step(busy: float, step: float) -> str:
    """Why the busy-share ratio (GPipe ÷ naive) is not the inverse of the step-time ratio: a
    step lasts its compute time over its busy share, so GPipe's step over naive's is their
    compute times' ratio over the busy-share ratio, and the two agree only where the devices
    computed the same micro-batches for the same time. "" where they did (within APART)."""
    compute = busy * step
    if abs(compute - 1) <= APART:
        return ""
    return say_own("busy_vs_step", times=shorter_by(step), busy=f"{busy:.3f}", compute=f"{compute:.3f}",
                   step=f"{step:.3f}")


FASTER = 1.5
"""Lesson 1's claim: GPipe's busy share of the step at least this many times naive's."""


check = naive
"""The lesson's claim check (Lesson.claim_check)."""


def busy_share_ratio(a, b) -> float:
    """Mean busy share of the step (1 - bubble, device clock), run ``a``'s over run ``b``'s
    (RunMetrics): for runs of the same work, their step-time ratio b ÷ a at one speed."""
    return (1 - a.device_bubble_fraction) / (1 - b.device_bubble_fraction)


def headline(results) -> float:
    """The figure a comparison's rounds are ranked by (Lesson.headline): what the verdict
    judges, GPipe's busy share over naive's (results: naive's run, then GPipe's)."""
    return busy_share_ratio(results[1].metrics, results[0].metrics)
