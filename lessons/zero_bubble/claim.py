"""Does this lesson's claim hold in what its page finished? Its check (``check``) on finished results,
and the figure its comparison's rounds are ranked by (``headline``); the shared vocabulary is
pipelab.lessons.verdict and pipelab.lessons.judging."""

from __future__ import annotations

import functools

from pipelab.engine.runtime.paired import paired_ratio
from pipelab.engine.theory import formulas as theory
from pipelab.lessons.judging import (
    Part,
    against,
    bubble_follows_formula,
    find_result,
    idle_ms,
    mean_costs,
    peak_mib,
    ratio_headline,
    ratio_row,
    safe_ratio,
    shorter_by,
    simulated_peak_mib,
    status_of,
    step_part,
    untested,
    value_or_na,
)
from pipelab.lessons.verdict import COMPARISON, RATIO_NOISE, RATIO_TOLERANCE, ClaimRow, Entries, Verdict, say, say_own
from pipelab.lessons.why import with_why

NO_GAP_RATIO = 0.8
"""ZB-H2 and ZB-V "without a gap inside each device's span": their idle share there at most
this much of 1F1B's (the paper's zero, less this engine's own costs per action); with
overlapping steps, their bubble at most this much of what a barrier between steps costs."""


ZB_COLUMNS = ("idle ms per step (device)", "max peak activations (MiB)", "step ms (device)", "bubble (device)")


SPAN_COLUMN = "bubble inside each device's span"


def equal_cost_share(p: int) -> float:
    """ZB-H1's idle time over 1F1B's by the formula, at T_F = T_I = T_W with free messages:
    (p-1)(T_F + T_I - T_W) against (p-1)(T_F + T_I + T_W) (arXiv 2401.10241, section 2), a third
    at every p and m. The claim table's formula, the prediction card's and the verdict's are this
    one figure; theory at a run's own costs is the simulator's column beside it (more than a
    third where W is cheaper than F). The closed form at a run's mean costs is neither, and
    shown as the table's formula it put a third figure for one quantity on the page."""
    return theory.zb_h1_bubble_time(p, 1, 1, 1) / theory.one_f_one_b_bubble_time(p, 1, 1, 1)


def _zb_h1_part(ours, other) -> Part:
    """ZB-H1 idles at most ZB_H1_CUT of 1F1B's time, at 1F1B's worst-device peak memory, with a
    shorter step."""
    mo = ours.metrics
    formula = equal_cost_share(ours.schedule.num_ranks)
    idle_simulated = safe_ratio(idle_ms(mo, simulated=True), idle_ms(other.metrics, simulated=True))
    idle_row = ratio_row(say("row.idle_ratio", a="ZB-H1", b="1F1B"), ours, other, _idle, formula,
                         idle_simulated)
    memory = peak_mib(ours) / peak_mib(other)
    memory_simulated = safe_ratio(simulated_peak_mib(ours), simulated_peak_mib(other))
    rows = (idle_row, ClaimRow(say("row.peak_ratio", a="ZB-H1", b="1F1B"), memory, 1.0, memory_simulated, "x"))
    # The claim: idle cut (at most ZB_H1_CUT of 1F1B's; a third by the formula), by what theory
    # at these runs' own costs says, at 1F1B's memory. The step is judged apart (judging.step_part).
    idle = idle_row.measured
    agrees = idle_simulated is not None and abs(idle - idle_simulated) <= RATIO_TOLERANCE
    agrees_near = idle_simulated is not None and abs(idle - idle_simulated) <= RATIO_TOLERANCE + RATIO_NOISE / 2
    cut = against(idle, ZB_H1_CUT, RATIO_NOISE / 2)
    # Judged and printed as the claim table shows the ratio, three decimals (app/views/verdict_box.py).
    same_memory = against(memory, SAME_MEMORY, RATIO_NOISE)
    ok = cut.ok and agrees and same_memory.ok
    near = cut.near and agrees_near and same_memory.near
    said = say_own("said", idle=f"{idle:.3f}", cut=f"{ZB_H1_CUT:.3f}", formula=f"{formula:.3f}",
                   costs=value_or_na(idle_simulated), memory=f"{memory:.3f}")
    if near:
        said = same_memory.after(cut.after(said))
    return Part(rows, ok, near, said, mo)


def _idle(result) -> float:
    return idle_ms(result.metrics)


def idle_ratio(ours, other) -> float:
    """ZB-H1's idle time per step over 1F1B's (mean over devices, device clock): the median over
    pairs of steps where they took turns in one launch. The verdict's row and the prediction
    card read this one figure."""
    return paired_ratio(ours, other, _idle)[0]


ZB_H1_CUT = 0.75
"""Lesson 6's idle ratio (ZB-H1 ÷ 1F1B) that counts as cut: a third on equal costs."""

SAME_MEMORY = 1.1
"""ZB-H1's worst-device peak activations over 1F1B's that still count as the same memory."""


def _own_span_formula(result) -> float | None:
    """The idle share inside each device's span that theory gives this run's schedule: the
    overlapped formula, which keeps only that part (theory.formula_bubble_fraction), for the
    schedules whose claim it is (ZB-H2, ZB-V); None for the others."""
    s = result.schedule
    if s.name not in ("zb-h2", "zb-v"):
        return None
    return theory.formula_bubble_fraction(s.name, s.num_ranks, s.num_microbatches, s.chunks,
                                          *mean_costs(result.metrics), overlapped=True)


def _simulated_own_span(result) -> float | None:
    """The simulator's idle share inside each device's span, for a result that carries its
    simulated timeline (a RunResult; the tests' fakes do not)."""
    simulated = getattr(result, "simulated", None)
    return None if simulated is None else simulated.steady_bubble_fraction()


def _no_gap_part(label: str, ours, other) -> Part:
    """ZB-H2 or ZB-V: with a barrier between steps, little idle inside each device's span
    against 1F1B's (the two ends stay); with overlapping steps, the two ends gone too: a
    bubble well under what a barrier costs (arXiv 2401.10241, sections 2.2 and 4)."""
    mo = ours.metrics
    s = ours.schedule
    if mo.overlapped_steps:
        barrier_formula = theory.formula_bubble_fraction(s.name, s.num_ranks, s.num_microbatches, s.chunks,
                                                         *mean_costs(mo), overlapped=False)
        # The yardstick is a barrier at this run's own costs (the simulator fed them): the
        # formula's barrier leaves out the engine's time and unequal stages, which the
        # overlapped run pays, so against it ZB-V's half-size ends read as a loss.
        barrier = mo.simulated_barrier_bubble_fraction
        if barrier is None:  # a result saved before runs reported it
            barrier = barrier_formula
        measured = mo.device_bubble_fraction
        rows = (ClaimRow(say("row.bubble_overlapped", label=label), measured, mo.formula_bubble_fraction,
                         mo.simulated_bubble_fraction),
                ClaimRow(say("row.bubble_barrier", label=label), None, barrier_formula,
                         mo.simulated_barrier_bubble_fraction))
        ratio = measured / barrier if barrier else float("inf")
        judged = against(ratio, NO_GAP_RATIO, NO_GAP_RATIO * RATIO_NOISE)  # three decimals, as the table's ratios
        said = say_own("overlapped", label=label, measured=f"{measured:.3f}",
                       formula=value_or_na(mo.formula_bubble_fraction), ratio=f"{ratio:.3f}", barrier=f"{barrier:.3f}",
                       limit=NO_GAP_RATIO)
        return Part(rows, judged.ok, judged.near, judged.after(said), mo)
    ours_span, other_span = mo.device_steady_bubble_fraction, other.metrics.device_steady_bubble_fraction
    # The span's share is the run's own (a median over its steps); the ratio to 1F1B's, where
    # the two took turns in one launch, the median over pairs of steps.
    ratio = (paired_ratio(ours, other, lambda r: r.metrics.device_steady_bubble_fraction)[0] if other_span
             else float("inf"))
    rows = (ClaimRow(say("row.span_of", label=label), ours_span, _own_span_formula(ours), _simulated_own_span(ours)),
            ClaimRow(say("row.span_of", label="1F1B"), other_span, _own_span_formula(other),
                     _simulated_own_span(other)))
    judged = against(ratio, NO_GAP_RATIO, NO_GAP_RATIO * RATIO_NOISE)  # three decimals, as the table's ratios
    said = say_own("span", label=label, ours=f"{ours_span:.3f}", ratio=f"{ratio:.3f}",
                   other=f"{other_span:.3f}", limit=NO_GAP_RATIO, whole=f"{mo.device_bubble_fraction:.3f}")
    return Part(rows, judged.ok, judged.near, judged.after(said), mo)


def zero_bubble(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 6, each part on the schedules the comparison ran beside 1F1B: ZB-H1's idle time
    (_zb_h1_part), and ZB-H2's and ZB-V's span without gaps, or with overlapping steps their
    bubble without the two ends (_no_gap_part). The verdict is its worst part's."""
    h1, other = find_result(entries, "zb-h1"), find_result(entries, "1f1b")
    shaped = [(label, r) for name, label in (("zb-h2", "ZB-H2"), ("zb-v", "ZB-V"))
              if (r := find_result(entries, name)) is not None]
    if kind != COMPARISON or other is None or (h1 is None and not shaped):
        if kind == COMPARISON:
            return untested(claim, say_own("wanted"), kind, entries)
        return bubble_follows_formula(claim, entries[:1], ZB_COLUMNS)
    claimed = (([_zb_h1_part(h1, other)] if h1 is not None else [])
               + [_no_gap_part(label, r, other) for label, r in shaped])
    steps = [(label, step_part(r, other, label, "1F1B")) for label, r in ([("ZB-H1", h1)] if h1 else []) + shaped]
    parts = claimed + [part for _, part in steps]
    status = status_of(all(p.ok for p in parts), all(p.near for p in parts))
    # One sentence a student can repeat, then only what does not hold: the lead part's figure,
    # every step in one line where each is shorter as theory says, and the table for the rest.
    sentences = [claimed[0].said] + [p.said for p in claimed[1:] if not p.ok]
    if all(part.ok and part.rows[0].measured < 1 for _, part in steps):
        sentences.insert(1, say_own("steps", list=say("list_sep").join(
            say_own("step_item", label=label, by=shorter_by(part.rows[0].measured)) for label, part in steps)))
    else:
        sentences += [part.said for _, part in steps]
    said = functools.reduce(lambda first, second: say("then", first=first, second=second), sentences)
    failing = next((p for p in parts if not p.near), None)
    # ZB-H1 at 0.49 of 1F1B's idle time against the formula's third held beside theory at the
    # runs' own costs, and nothing said where the rest went: past the tolerance, its largest effect.
    lead = claimed[0].rows[0] if h1 is not None else None
    far = lead is not None and lead.formula is not None and abs(lead.measured - lead.formula) > RATIO_TOLERANCE
    explained = failing.metrics if failing is not None else h1.metrics if far else None
    reason = with_why(said, explained) if explained is not None else say("end", sentence=said)
    columns = ZB_COLUMNS + ((SPAN_COLUMN,) if shaped else ())
    rows: dict[str, ClaimRow] = {}
    for part in parts:
        for row in part.rows:
            rows.setdefault(row.quantity, row)  # 1F1B's row once, beside ZB-H2 and ZB-V alike
    return Verdict(claim, tuple(rows.values()), status, reason, columns)


check = zero_bubble
"""The lesson's claim check (Lesson.claim_check)."""


headline = ratio_headline(lambda r: idle_ms(r.metrics))
"""The figure a comparison's rounds are ranked by (Lesson.headline)."""
