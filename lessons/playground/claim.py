"""Does this lesson's claim hold in what its page finished? Its check (``check``) on finished
results; the shared vocabulary is pipelab.lessons.verdict and pipelab.lessons.judging."""

from __future__ import annotations

from pipelab.lessons.judging import against, shown_gap, status_of
from pipelab.lessons.verdict import (
    BUBBLE_COLUMNS,
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    ClaimRow,
    Entries,
    Verdict,
    say,
    say_own,
)
from pipelab.lessons.why import sentence_with_why


def simulator_predicts(claim: str, kind: str, entries: Entries) -> Verdict:
    """The playground: the simulator, fed the run's mean costs, predicts its bubble and step."""
    (label, r), = entries[:1]
    m = r.metrics
    rows = (ClaimRow(say("row.bubble"), m.device_bubble_fraction, m.formula_bubble_fraction,
                     m.simulated_bubble_fraction),
            ClaimRow(say("row.step"), m.device_step_time_s * 1e3, None, m.simulated_step_time_s * 1e3, "ms"))
    gap = shown_gap(m.device_bubble_fraction, m.simulated_bubble_fraction)
    judged = against(gap, BUBBLE_TOLERANCE, BUBBLE_NOISE)
    status = status_of(judged.ok, judged.near)
    said = judged.after(say_own("said", gap=f"{gap:.3f}", allowed=BUBBLE_TOLERANCE))
    return Verdict(claim, rows, status, sentence_with_why(said, status, m), BUBBLE_COLUMNS)


check = simulator_predicts
"""The lesson's claim check (Lesson.claim_check)."""
