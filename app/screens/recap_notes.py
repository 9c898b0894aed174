"""Why a recap cell is empty, or why its formula and simulator differ (issue 47: every gap named).

The formula is the paper's closed form at unit costs; the simulator plays the schedule's own
action lists. They part for three reasons only, each checked here rather than assumed:
the formula is an upper bound (DualPipeV: the DualPipe README's, arXiv 2412.19437), the paper's
form is for m >= p (ZB-H1, ZB-H2, ZB-V: a full steady state, arXiv 2401.10241 section 2), or ZB-V's
V is not yet full (m < 2p, section 6). tests/test_recap_notes.py sweeps p and m for a fourth.
"""

from __future__ import annotations

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.engine.schedules import get_schedule_info
from pipelab.lessons.overview import ScheduleRow

AGREE = 5e-4
"""Formula and simulator closer than this agree: the table shows three decimals."""


def cell_note(row: ScheduleRow, p: int, m: int) -> str | None:
    """One line on why ``row`` has an empty cell or two bubbles that differ, else None."""
    if row.error:
        return t("recap.note.unbuildable", reason=i18n.error_text(row.error))
    if row.formula_value is None:
        return t("recap.note.no_formula")
    gap = row.simulated_bubble - row.formula_value
    if abs(gap) <= AGREE:
        return None
    theory = get_schedule_info(row.name).theory
    said = dict(formula=row.formula, gap=f"{abs(gap):.3f}", p=p, m=m, two_p=2 * p)
    if theory.bubble_is_bound:
        return t("recap.note.bound", **said)
    if m < p:
        return t("recap.note.few_microbatches", **said)
    if theory.bubble_exact is not None and not theory.bubble_exact(p, m):
        return t("recap.note.v_not_full", **said)
    # A gap this page knows no reason for (a new schedule's, say): said as such, never a crash;
    # tests/test_recap_notes.py sweeps p and m so that the shipped schedules never need it.
    return t("recap.note.unexplained", **said)


def notes(rows: list[ScheduleRow], p: int, m: int) -> list[tuple[str, str]]:
    """(schedule, note) for every row that needs one, in the table's order."""
    return [(row.name, note) for row in rows if (note := cell_note(row, p, m)) is not None]


__all__ = ["AGREE", "cell_note", "notes"]
