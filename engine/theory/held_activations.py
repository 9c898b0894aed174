"""Peak activations a device holds, read off the order of its actions alone.

A stage-micro-batch is held from its forward F until its backward is complete: B, or W when
the backward is split, since W still needs the linear layers' inputs (arXiv 2401.10241,
section 2). Counting in units of one full stage's activations for one micro-batch, a chunk
of v per device counts 1/v. This is the unit of the papers' memory columns: 1F1B's p on
rank 0 (arXiv 2104.04473), ZB-H1's p and ZB-H2's 2p - 1 (arXiv 2401.10241, Table 1), and the
DualPipe README's PP + 1 (arXiv 2412.19437).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from pipelab.engine.actions import BACKWARD, BACKWARD_WEIGHT, FORWARD, Action

if TYPE_CHECKING:
    from pipelab.engine.schedules.base import Schedule


def peak_activations(programs: Sequence[Sequence[Action]], chunks: int) -> list[float]:
    """Per device, the most stage-micro-batches held at once along its order, in full stages."""
    per_chunk = Fraction(1, chunks)  # exact, so 1/3 + 1/3 + 1/3 is 1
    peaks = []
    for program in programs:
        held = peak = Fraction(0)
        for a in program:
            if a.kind == FORWARD:
                held += per_chunk
            elif a.kind in (BACKWARD, BACKWARD_WEIGHT):  # after I, W still needs the inputs
                held -= per_chunk
            peak = max(peak, held)
        peaks.append(float(peak))
    return peaks


def schedule_peak_activations(schedule: "Schedule") -> list[float]:
    """``peak_activations`` of a Schedule's own per-rank programs."""
    return peak_activations(schedule.actions, schedule.chunks)
