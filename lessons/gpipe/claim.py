"""Does this lesson's claim hold in what its page finished? Its check (``check``) on finished results,
and the figure its comparison's rounds are ranked by (``headline``); the shared vocabulary is
pipelab.lessons.verdict and pipelab.lessons.judging."""

from __future__ import annotations

from pipelab.lessons.judging import (
    against,
    bubble_follows_formula,
    bubble_row,
    find_result,
    mean_costs,
    peak_mib,
    ratio_row,
    safe_ratio,
    schedule_name,
    simulated_peak_mib,
    status_of,
    untested,
    value_or_na,
)
from pipelab.lessons.verdict import (
    BUBBLE_COLUMNS,
    BUBBLE_NOISE,
    COMPARISON,
    FAILS,
    HOLDS,
    NOISE,
    RATIO_NOISE,
    SWEEP,
    UNTESTED,
    ClaimRow,
    Entries,
    Verdict,
    say,
    say_own,
)
from pipelab.lessons.why import sentence_with_why, with_why


def gpipe(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 2: the bubble within 0.05 of (p-1)/(m+p-1), and falling as m grows."""
    if find_result(entries, "gpipe") is None:
        return untested(claim, "gpipe", kind, entries)
    entries = [(label, r) for label, r in entries if schedule_name(r) == "gpipe"]
    plain = next((r for _, r in entries if not r.config.recompute), None)
    redone = next((r for _, r in entries if r.config.recompute), None)
    if kind == COMPARISON and plain is not None and redone is not None:
        return rematerialization(claim, plain, redone)
    if kind != SWEEP:
        return bubble_follows_formula(claim, entries)
    entries = sorted(entries, key=lambda e: e[0])
    rows = tuple(bubble_row(say("row.bubble_at_m", m=r.schedule.num_microbatches), r) for _, r in entries)
    near_formula = bubble_follows_formula(claim, [(f"m = {r.schedule.num_microbatches}", r) for _, r in entries])
    bubbles = [row.measured for row in rows]
    # Falling as the sentence prints the bubbles: each below the one before, to three decimals.
    rise = max((b - a for a, b in zip(bubbles, bubbles[1:])), default=-1.0)
    judged = against(rise, 0.0, BUBBLE_NOISE, strict=True)
    falling, falling_near = judged.ok, judged.near
    rank = {HOLDS: 0, NOISE: 1, FAILS: 2, UNTESTED: 2}
    status = (HOLDS, NOISE, FAILS)[max(rank[near_formula.status], 0 if falling else 1 if falling_near else 2)]
    shown = ", ".join(f"{b:.3f}" for b in bubbles)
    if falling or not falling_near:
        trend = say_own("falls" if falling else "does_not_fall", bubbles=shown)
    else:  # a rise within noise: by how much, the band allowed and where it comes from
        trend = say_own("rises_within_noise", bubbles=shown, rise=f"{max(rise, 0.0):.3f}",
                        band=f"{BUBBLE_NOISE:.3f}")
    if not falling_near and near_formula.status != FAILS:  # the formula's reason has no why yet
        return Verdict(claim, rows, status, with_why(trend, entries[-1][1].metrics), BUBBLE_COLUMNS)
    return Verdict(claim, rows, status, say("then", first=trend, second=near_formula.reason), BUBBLE_COLUMNS)


RECOMPUTE_PEAK = 0.5
"""Re-materialization's worst-device peak activations, at most this share of the plain run's."""


RECOMPUTE_COLUMNS = ("max peak activations (MiB)", "step ms (device)", "step ms (simulated)", "bubble (device)")


def rematerialization(claim: str, plain, redone) -> Verdict:
    """Lesson 2's comparison: re-materialization (GPipe, arXiv 1811.06965, section 2.3) keeps
    only each stage's input per micro-batch, so the worst device's peak activations fall, and
    pays one more forward per micro-batch inside the backward, so the step grows. Theory for
    the step at the plain run's own costs: (2 T_F + T_B) / (T_F + T_B) per micro-batch; the
    simulator, fed each run's costs, says what the recomputing run's cheaper first forward
    (no activations kept) leaves of that."""
    peak = peak_mib(redone) / peak_mib(plain)
    peak_simulated = safe_ratio(simulated_peak_mib(redone), simulated_peak_mib(plain))
    t_f, t_i, t_w = mean_costs(plain.metrics)
    step_formula = (2 * t_f + t_i + t_w) / (t_f + t_i + t_w)
    step_simulated = safe_ratio(redone.metrics.simulated_step_time_s, plain.metrics.simulated_step_time_s)
    redone_label, plain_label = say_own("recompute.redone"), say_own("recompute.plain")
    step_row = ratio_row(say("row.step_ratio", a=redone_label, b=plain_label), redone, plain,
                         lambda r: r.metrics.device_step_time_s, step_formula, step_simulated)
    step = step_row.measured
    rows = (ClaimRow(say("row.peak_ratio", a=redone_label, b=plain_label), peak, None, peak_simulated, "x"),
            step_row,
            ClaimRow(say("row.peak_of", label=plain_label), peak_mib(plain), None, simulated_peak_mib(plain), "MiB"),
            ClaimRow(say("row.peak_of", label=redone_label), peak_mib(redone), None,
                     simulated_peak_mib(redone), "MiB"))
    # Memory falls by most of the activations (each stage keeps one micro-batch's whole set at
    # a time); the step grows, by less than a whole forward when the first one keeps nothing.
    # Judged as the sentence prints them (two decimals), each limit with its noise band.
    lower = against(peak, RECOMPUTE_PEAK, RECOMPUTE_PEAK * RATIO_NOISE)
    longer = against(step, 1.0, RATIO_NOISE / 2, at_most=False, strict=True)
    ok, near = lower.ok and longer.ok, lower.near and longer.near
    said = say_own("recompute.said", peak=f"{peak:.3f}", peak_simulated=value_or_na(peak_simulated),
                   step=f"{step:.3f}", step_formula=f"{step_formula:.3f}", step_simulated=value_or_na(step_simulated),
                   peak_limit=f"{RECOMPUTE_PEAK:.3f}")
    if near:
        said = longer.after(lower.after(said))
    status = status_of(ok, near)
    return Verdict(claim, rows, status, sentence_with_why(said, status, redone.metrics), RECOMPUTE_COLUMNS)


check = gpipe
"""The lesson's claim check (Lesson.claim_check)."""


def headline(results) -> float:
    """The figure the comparison's pairs (or rounds) are read by, as its table shows it: the step
    with re-materialization over the plain one (results: the plain run, then the recomputing one)."""
    return results[1].metrics.device_step_time_s / results[0].metrics.device_step_time_s
"""The figure a comparison's rounds are ranked by (Lesson.headline)."""
