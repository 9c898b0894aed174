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

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, Action

if TYPE_CHECKING:
    from pipelab.engine.schedules.base import Schedule


def peak_activations(programs: Sequence[Sequence[Action]], chunks: int, weight_memory: float = 1.0) -> list[float]:
    """Per device, the most stage-micro-batches held at once along its order, in full stages.

    ``weight_memory``: the share of a stage-micro-batch that W still reads once I has run
    (arXiv 2401.10241, Table 1: 32sbh of sb(34h + 5as) per layer); 1.0 counts it whole until W."""
    per_chunk = Fraction(1, chunks)  # exact, so 1/3 + 1/3 + 1/3 is 1
    left_for_w = per_chunk * Fraction(weight_memory)
    peaks = []
    for program in programs:
        held = peak = Fraction(0)
        for a in program:
            if a.kind == FORWARD:
                held += per_chunk
            elif a.kind == BACKWARD:
                held -= per_chunk
            elif a.kind == BACKWARD_INPUT:  # after I, W still needs the inputs
                held -= per_chunk - left_for_w
            elif a.kind == BACKWARD_WEIGHT:
                held -= left_for_w
            peak = max(peak, held)
        peaks.append(float(peak))
    return peaks


def schedule_peak_activations(schedule: "Schedule") -> list[float]:
    """``peak_activations`` of a Schedule's own per-rank programs."""
    return peak_activations(schedule.actions, schedule.chunks)
