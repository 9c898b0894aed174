"""What a cost-aware builder is told: one stage's pass costs and the link between ranks.

Most builders order actions from p, m and v alone. The zero bubble paper's ZB-H2 at real
costs and its automatic scheduler (arXiv 2401.10241, sections 2.2 and 3) take T_F, T_B,
T_W and T_comm as well; the registry hands them over (``build_schedule(..., costs=...)``),
unit costs when none are given, so such a schedule still appears in every list and lesson.
Pure data: no torch, no simulator import (the simulator imports the schedules package).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from pipelab.engine.actions import ScheduleError


@dataclass(frozen=True, kw_only=True)
class PassCosts:
    """Seconds (or any one unit) per pass of one whole stage, uniform stages."""

    forward: float = 1.0
    """T_F: one micro-batch's forward."""
    backward_input: float = 1.0
    """T_I, the paper's T_B: the input-gradient backward the previous stage waits for."""
    backward_weight: float = 1.0
    """T_W: the weight-gradient backward, needed only by the optimizer step."""
    link: float = 0.0
    """T_comm: from a send to its arrival on the neighbouring rank."""
    weight_memory: float = 1.0
    """The share of one micro-batch's activations that W still needs once I has run, which the
    automatic schedules' memory limit counts until W (arXiv 2401.10241, Table 1: I frees all
    but the 32sbh of sb(34h + 5as) per layer that W reads). 1.0 counts the whole micro-batch
    held until W, as the lessons do."""

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ScheduleError.of("pass_cost", knob=f.name.replace("_", "-"), got=repr(value))
        if self.forward + self.backward_input + self.backward_weight <= 0:
            raise ScheduleError.of("pass_cost", knob="forward + backward-input + backward-weight", got=0)
        if self.weight_memory > 1:
            raise ScheduleError.of("weight_memory", got=repr(self.weight_memory))

    @property
    def work(self) -> float:
        """F + I + W: one micro-batch's compute on one stage."""
        return self.forward + self.backward_input + self.backward_weight


UNIT_PASS_COSTS = PassCosts()
"""T_F = T_I = T_W = 1, no link: the paper's figures, and what a builder gets by default."""
