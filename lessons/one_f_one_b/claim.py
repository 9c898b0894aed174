"""Does this lesson's claim hold in what its page finished? Its check (``check``) on finished results,
and the figure its comparison's rounds are ranked by (``headline``); the shared vocabulary is
pipelab.lessons.verdict and pipelab.lessons.judging."""

from __future__ import annotations

from pipelab.lessons.judging import (
    against,
    bubble_row,
    find_result,
    peak_mib,
    schedule_name,
    shown_gap,
    simulated_peak_mib,
    status_of,
    untested,
    worst_device,
)
from pipelab.lessons.verdict import (
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    COMPARISON,
    FAILS,
    HOLDS,
    NOISE,
    RATIO_NOISE,
    RATIO_TOLERANCE,
    SWEEP,
    UNTESTED,
    ClaimRow,
    Entries,
    Verdict,
    say,
    say_own,
)
from pipelab.lessons.why import sentence_with_why


def one_f_one_b(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 4: rank r holds at most p - r micro-batches; the bubble within 0.05 of GPipe's;
    peak activations flat in m (m >= p) where GPipe's grow."""
    mem_columns = ("max peak activations (MiB)", "bubble (device)", "bubble (formula)")
    ours = find_result(entries, "1f1b")
    if ours is None:
        return untested(claim, "1f1b", kind, entries)
    p = ours.schedule.num_ranks
    if kind == COMPARISON and find_result(entries, "gpipe") is not None:
        other = find_result(entries, "gpipe")
        rows = (bubble_row(say("row.bubble_of", label="1F1B"), ours),
                bubble_row(say("row.bubble_of", label="GPipe"), other),
                ClaimRow(say("row.peak_of", label="1F1B"), peak_mib(ours), None, simulated_peak_mib(ours), "MiB"),
                ClaimRow(say("row.peak_of", label="GPipe"), peak_mib(other), None, simulated_peak_mib(other), "MiB"))
        gap = shown_gap(ours.metrics.device_bubble_fraction, other.metrics.device_bubble_fraction)
        m = ours.schedule.num_microbatches
        same = against(gap, BUBBLE_TOLERANCE, BUBBLE_NOISE)
        # Less memory as the sentence prints it (MiB, two decimals); with m <= p GPipe holds
        # no more micro-batches than 1F1B, so up to 1.1x its peak still counts.
        if m > p:
            less = against(peak_mib(ours), peak_mib(other), peak_mib(other) * RATIO_NOISE, digits=2, strict=True)
        else:
            less = against(peak_mib(ours), peak_mib(other) * 1.1, peak_mib(other) * RATIO_NOISE, digits=2)
        status = status_of(same.ok and less.ok, same.near and less.near)
        said = say_own("compare", gap=f"{gap:.3f}", allowed=BUBBLE_TOLERANCE, ours=f"{peak_mib(ours):.2f}",
                       other=f"{peak_mib(other):.2f}")
        said += _worst_devices(ours, other)
        if m <= p:
            said += say_own("few_m", m=m, p=p)
        if status == NOISE:
            said = less.after(same.after(said))
        return Verdict(claim, rows, status, sentence_with_why(said, status, ours.metrics), mem_columns)
    if kind == SWEEP:
        points = sorted(((r.schedule.num_microbatches, r) for _, r in entries if schedule_name(r) == "1f1b"),
                        key=lambda e: e[0])
        rows = tuple(ClaimRow(say("row.peak_at_m", m=m), peak_mib(r), None, simulated_peak_mib(r), "MiB")
                     for m, r in points)
        rows += tuple(ClaimRow(say("row.alive_device0", m=m),
                               r.metrics.peak_inflight_per_device[0], r.metrics.theory_peak_inflight_per_device[0],
                               None, "count") for m, r in points)
        deep = [(m, r) for m, r in points if m >= p]
        if len(deep) < 2:
            return Verdict(claim, rows, UNTESTED, say_own("few_points", p=p), mem_columns)
        growth = peak_mib(deep[-1][1]) / peak_mib(deep[0][1])
        flat = against(growth, FLAT, RATIO_NOISE, digits=2)
        status = status_of(flat.ok, flat.near)
        # The sweep runs 1F1B alone: GPipe's growth is theory's (it holds all m micro-batches,
        # so m_last / m_first), and the sentence says so rather than what no run measured.
        said = say_own("sweep", first=deep[0][0], last=deep[-1][0], growth=f"{growth:.2f}", flat=f"{FLAT:.1f}",
                       gpipe=f"{deep[-1][0] / deep[0][0]:.0f}")
        return Verdict(claim, rows, status, say("end", sentence=flat.after(said)), mem_columns)
    # The formula column is the theory's peak the run carries (ScheduleTheory.peak_inflight, min(p - r, m)).
    inflight, formula = ours.metrics.peak_inflight_per_device, ours.metrics.theory_peak_inflight_per_device
    # The simulator's count is one of the schedule's order, the same at the run's costs as at
    # the card's unit costs: one figure for one quantity.
    simulated = _simulated_alive(p, ours.schedule.num_microbatches)
    rows = tuple(ClaimRow(say("row.alive", device=r), inflight[r], formula[r], simulated[r], "count")
                 for r in range(p))
    over = [row for row in rows if row.measured > row.formula]
    if over:
        return Verdict(claim, rows, FAILS, say_own("over", quantity=over[0].quantity, measured=over[0].measured,
                                                   formula=over[0].formula), mem_columns)
    return Verdict(claim, rows, HOLDS, say_own("holds", m=ours.schedule.num_microbatches), mem_columns)


def _worst_devices(ours, other) -> str:
    """Which device each schedule's peak is on and what it is made of: the peaks' ratio is
    not the held counts' (m against p) when the worst devices differ, as GPipe's is the last
    stage, whose micro-batches also keep the tensors the loss saves."""
    parts = {}
    for name, result in (("ours", ours), ("other", other)):
        r = worst_device(result)
        held = result.metrics.peak_inflight_per_device[r]
        mib = result.memory[r].peak_activation_bytes / 2**20
        parts[name] = dict(device=r, held=held, each=f"{mib / held:.2f}" if held else "-")
    last = other.schedule.num_ranks - 1
    why = say_own("worst_last") if parts["other"]["device"] == last != parts["ours"]["device"] else ""
    return say_own("worst_devices", why=why, ours_device=parts["ours"]["device"], ours_held=parts["ours"]["held"],
                   ours_each=parts["ours"]["each"], other_device=parts["other"]["device"],
                   other_held=parts["other"]["held"], other_each=parts["other"]["each"])


def _simulated_alive(p: int, m: int) -> list[int]:
    """Each device's most micro-batches alive at once as the simulator plays 1F1B (its order
    alone decides it, so unit costs give the count at any costs)."""
    from pipelab.lessons.engine_answers import simulated
    return simulated("1f1b", p, m).peak_inflight()


FLAT = 1 + RATIO_TOLERANCE
"""Lesson 4's sweep: 1F1B's worst-device peak activations flat in m (m >= p), growing at most this
much: theory's 1x and the room every comparison gives a ratio of two runs beside theory."""


check = one_f_one_b
"""The lesson's claim check (Lesson.claim_check)."""


def headline(results) -> float:
    """The figure a comparison's rounds are ranked by (Lesson.headline)."""
    return results[0].metrics.device_bubble_fraction - results[1].metrics.device_bubble_fraction
