"""One setting measured twice on a page: a lesson's Run and the same setting's row of its sweep,
or the same setting's run in its comparison.

Two runs of one setting are two measurements of one quantity, and a page that shows both
without a word shows two figures for it (issue 47). The page says so in one sentence: the
two bubbles, how far apart, and whether that is within what the same run repeated moves by
on a shared host (verdict.BUBBLE_NOISE), or more (the host's load changed between them).
"""

from __future__ import annotations

from pipelab.lessons import i18n
from pipelab.lessons.comparison_verdict import NOISE as STEP_NOISE
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


def repeated_in_comparison_note(lang: str, run_result, again_result) -> str:
    """The sentence under a comparison that ran the Run's setting again (lesson 1's step read
    176.9 ms in the Run and 172.05 ms in the comparison, each on the device clock, without a
    word): both steps and bubbles, and whether the two launches differ by more than the same
    run repeated moves by (STEP_NOISE of the step, BUBBLE_NOISE of the bubble)."""
    a, b = run_result.metrics, again_result.metrics
    ran_ms, again_ms = a.device_step_time_s * 1e3, b.device_step_time_s * 1e3
    ran, again = round(a.device_bubble_fraction, 3), round(b.device_bubble_fraction, 3)
    step_gap = abs(ran_ms - again_ms) / max(ran_ms, again_ms)
    within = step_gap <= STEP_NOISE and round(abs(ran - again), 3) <= BUBBLE_NOISE
    return i18n.text(lang, "repeated.compare_within" if within else "repeated.compare_beyond",
                     run_ms=f"{ran_ms:.1f}", again_ms=f"{again_ms:.1f}", run=f"{ran:.3f}", again=f"{again:.3f}",
                     step_band=f"{STEP_NOISE:.0%}", band=f"{BUBBLE_NOISE:.3f}")

