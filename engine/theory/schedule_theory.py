"""What a schedule declares about its closed forms when it registers (``register(theory=...)``,
engine/schedules/registry.py): which bubble and memory formulas hold for it, and the setting a
bubble formula is asked about.

Data the registry stores, as it stores ChunkRule and PassCosts: the registry needs no formula
at import time. The formulas themselves are engine/theory/formulas.py; its lookups by name
(``formula_bubble_fraction("1f1b", ...)``) read these declarations back from the registry,
so the dependency points one way: formulas -> registry -> this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class BubbleCase:
    """The setting a bubble formula is asked about."""

    p: int
    """Pipeline devices."""
    m: int
    """Micro-batches per step."""
    v: int = 1
    """Model chunks per device."""
    t_f: float = 1.0
    """One stage's forward (a whole stage, not a chunk)."""
    t_i: float = 1.0
    """One stage's input-gradient backward (I)."""
    t_w: float = 1.0
    """One stage's weight-gradient backward (W); T_B = T_I + T_W."""
    overlapped: bool = False
    """The window is one steady step of a run whose steps overlap (engine/schedules/stream.py), not one
    synchronous step."""

    @property
    def work(self) -> float:
        """F + I + W of one micro-batch on one stage."""
        return self.t_f + self.t_i + self.t_w


def one_weight_version(p: int, r: int) -> int:
    """A synchronous schedule keeps one version of its weights."""
    return 1


@dataclass(frozen=True, kw_only=True)
class ScheduleTheory:
    """A schedule's closed forms, each None where the papers give none."""

    bubble_fraction: Callable[[BubbleCase], float] | None = None
    """Device 0's idle share of the window, uniform stages."""
    bubble_text: str | None = None
    """The bubble fraction at T_F = T_I = T_W, plain text for tables, e.g. "(p-1)/(m+p-1)"."""
    bubble_latex: str | None = None
    """The same in LaTeX, for the lesson pages."""
    bubble_is_bound: bool = False
    """True when the bubble formula bounds this engine's schedule from above rather than
    giving its value (DualPipeV's, written for an overlapped F&B pair): tables show it, a
    question that asks for the bubble does not take it as the answer."""
    bubble_exact: Callable[[int, int], bool] | None = None
    """(p, m) -> whether the bubble formula gives the simulator's value exactly, on unit costs
    and every device (tests/test_theory.py holds every formula to it); None: wherever the
    schedule builds. ZB-V's holds once the V is full, m >= 2p."""
    bubble_time: Callable[[int, float, float, float], float] | None = None
    """(p, t_f, t_i, t_w) -> idle time per device in one synchronous step."""
    peak_inflight: Callable[[int, int, int, int], int] | None = None
    """(p, m, r, v) -> most micro-batches (per chunk) rank r holds from F until I or B."""
    peak_inflight_latex: str | None = None
    """``peak_inflight`` in LaTeX, in p, m, r and v, for the lesson pages ("\\min(p - r,\\ m)"); None where
    the form is not one line. tests/test_theory.py evaluates it against ``peak_inflight``."""
    peak_activations: Callable[[int, int], float] | None = None
    """(p, m) -> most activations the worst device holds from F until its backward is
    complete (B, or W after a split one), in full stages x micro-batches, m >= p."""
    weight_versions: Callable[[int, int], int] = one_weight_version
    """(p, r) -> weight versions rank r keeps."""
    weight_versions_latex: str = "1"
    """``weight_versions`` in LaTeX, in p and r, for the lesson pages ("p - r"); tests/test_theory.py
    evaluates it against ``weight_versions``."""


NO_THEORY = ScheduleTheory()
"""A schedule without closed forms (the simulator still plays it)."""
