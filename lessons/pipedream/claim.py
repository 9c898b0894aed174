"""Does this lesson's claim hold in what its page finished? Its check (``check``) on finished
results; the shared vocabulary is pipelab.lessons.verdict and pipelab.lessons.judging."""

from __future__ import annotations

import functools

from pipelab.lessons.judging import Part, against, status_of
from pipelab.lessons.verdict import (
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    COMPARISON,
    FAILS,
    ClaimRow,
    Entries,
    Verdict,
    say,
    say_own,
)
from pipelab.lessons.why import with_why

PIPEDREAM_COLUMNS = ("max weight versions", "bubble (device)", "final loss")


def pipedream(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 3: stage r keeps p - r weight versions (PipeDream), two (2BW), one (1F1B)."""
    if kind == COMPARISON:
        rows = tuple(ClaimRow(say("row.most_versions", label=label),
                              max(mem.weight_versions for mem in r.memory.values()),
                              max(mem.theory_weight_versions for mem in r.memory.values()), None, "count")
                     for label, r in entries)
    else:
        (label, r), = entries
        rows = tuple(ClaimRow(say("row.versions", device=rank), mem.weight_versions,
                              mem.theory_weight_versions, None, "count")
                     for rank, mem in sorted(r.memory.items()))
    wrong = [row for row in rows if row.measured != row.formula]
    # Every asynchronous run's steady idle is shown; the claim names PipeDream's, so the
    # lesson's own run (the first) is judged: 2BW's queue of p micro-batches between its
    # updates idles more on this host (its row says how much, beside its theory).
    shown = [_steady_busy_part(label, r) for label, r in entries if r.schedule.is_async]
    busy = shown[:1] if shown and entries[0][1].schedule.is_async else []
    rows = tuple(part.rows[0] for part in shown) + rows
    if wrong:
        row = wrong[0]
        steps = entries[0][1].config.steps
        reason = say_own("fails", quantity=row.quantity, measured=row.measured, formula=row.formula,
                         steps=steps)
        return Verdict(claim, rows, FAILS, reason, PIPEDREAM_COLUMNS)
    said = functools.reduce(lambda first, second: say("then", first=first, second=second),
                            [p.said for p in busy] + [say_own("holds").rstrip(".。")])
    status = status_of(all(p.ok for p in busy), all(p.near for p in busy))
    failing = next((p for p in busy if not p.ok), None)
    reason = with_why(said, failing.metrics) if failing is not None and status == FAILS else say("end", sentence=said)
    return Verdict(claim, rows, status, reason, PIPEDREAM_COLUMNS)


STEADY_IDLE = 0.10
"""Asynchronous PipeDream's claim, "every stage busy in steady state" (arXiv 1806.03377,
section 3.1): its idle share over the steady steps at most this, or within BUBBLE_TOLERANCE of
theory at the run's own costs (the engine's own time between actions is idle too)."""


def _steady_busy_part(label: str, result) -> "Part":
    """The steady state of an asynchronous run: no flush, so each device idles only for what
    the engine and unequal stages cost (formula 0)."""
    m = result.metrics
    measured, simulated = m.steady_bubble_fraction, m.simulated_bubble_fraction
    row = ClaimRow(say("row.steady_idle", label=label), measured, 0.0, simulated)
    limit = max(STEADY_IDLE, simulated + BUBBLE_TOLERANCE)
    # The limit printed as the idle share is (three decimals), and judged as printed: at p = 6
    # a limit of 0.2019 read "0.20" beside a measured 0.202 that held.
    judged = against(measured, limit, BUBBLE_NOISE)
    said = say_own("busy", label=label, measured=f"{measured:.3f}", simulated=f"{simulated:.3f}",
                   limit=f"{limit:.3f}")
    return Part((row,), judged.ok, judged.near, judged.after(said), m)


check = pipedream
"""The lesson's claim check (Lesson.claim_check)."""
