"""One setting measured twice on a page: a lesson's Run and the same setting's row of its sweep.

Two runs of one setting are two measurements of one quantity, and a page that shows both
without a word shows two figures for it (issue 47). The page says so in one sentence: the
two bubbles, how far apart, and whether that is within what the same run repeated moves by
on a shared host (verdict.BUBBLE_NOISE), or more (the host's load changed between them).
"""

from __future__ import annotations

from pipelab.lessons import i18n
from pipelab.lessons.verdict import BUBBLE_NOISE


def repeated_setting(run, sweep) -> tuple[object, object, object] | None:
    """``(value, the Run's result, the sweep's result)`` where a finished sweep's row has exactly
    the Run's settings; None where none has. ``run``: (label, result) pairs of the Run (the
    first is the lesson's own); ``sweep``: (value, result) pairs."""
    if not run or not sweep:
        return None
    own = run[0][1]
    for value, result in sweep:
        if result.config == own.config:
            return value, own, result
    return None


def repeated_setting_note(lang: str, symbol: str, value, run_result, sweep_result) -> str:
    """The sentence under the sweep: both figures, their gap, and the band it is judged by."""
    # The gap between the figures as shown (three decimals), so it reads as their difference.
    ran = round(run_result.metrics.device_bubble_fraction, 3)
    swept = round(sweep_result.metrics.device_bubble_fraction, 3)
    gap = round(abs(ran - swept), 3)
    key = "repeated.within" if gap <= BUBBLE_NOISE else "repeated.beyond"
    return i18n.text(lang, key, setting=f"{symbol} = {value}", run=f"{ran:.3f}", sweep=f"{swept:.3f}",
                     gap=f"{gap:.3f}", band=f"{BUBBLE_NOISE:.3f}")
