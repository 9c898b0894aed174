"""Readers of a finished run (pipelab.engine.results.result.RunResult): a question's measured answer."""

from __future__ import annotations

from typing import Callable

from pipelab.lessons.engine_answers import most_devices_busy
from pipelab.lessons.knobs import Knobs


def measured_bubble(result) -> float:
    return result.metrics.device_bubble_fraction


def measured_peak(rank_fn: Callable[[Knobs], int]):
    def read(result, knobs: Knobs):
        peaks = result.metrics.peak_inflight_per_device or []
        r = rank_fn(knobs)
        return peaks[r] if r < len(peaks) else None
    return read


def measured_most_busy(result) -> int:
    step = result.measured_steps()[-1]
    return most_devices_busy(result.timeline.of_step(step))


__all__ = ["measured_bubble", "measured_most_busy", "measured_peak"]
