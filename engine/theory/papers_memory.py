"""The Zero Bubble paper's memory figures beside our schedules' peak activations.

The paper (arXiv 2401.10241) gives memory two ways. Table 2 is analytic, in M_B (one stage's
activations for one micro-batch): 1F1B and ZB-H1 peak at p M_B, ZB-H2 at (2p - 1) M_B; ZB-1p
and ZB-2p are built under limits of p M_B and 2p M_B (section 3), so those are their ceilings.
1F1B-I has no analytic figure there. Table 4 measured each run's peak memory in GB on its
A100s (1F1B, 1F1B-I, ZB-1p, ZB-2p; weights and optimizer state included), the same for every
m of a model: quoted as the paper's, never compared with a count of ours.

Ours is engine/theory/held_activations.py's count along each device's order (the device that
holds most), twice: a micro-batch counted whole from F until its W, as the lessons count, and
with only W's share of it held after I (Table 1; PassCosts.weight_memory), the unit of the
automatic schedules' limits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.theory.held_activations import peak_activations
from pipelab.engine.theory.papers import TABLE5_SCHEDULES, built

TABLE_2_PEAK: Mapping[str, Callable[[int], int]] = {
    # arXiv 2401.10241, Table 2 (1F1B, ZB-H1, ZB-H2) and section 3's limits (ZB-1p, ZB-2p), in M_B.
    "1F1B": lambda p: p, "ZB-H1": lambda p: p, "ZB-H2": lambda p: 2 * p - 1,
    "ZB-1p": lambda p: p, "ZB-2p": lambda p: 2 * p}

TABLE_4_GB: Mapping[str, Mapping[str, int]] = {
    # arXiv 2401.10241, Table 4, "Memory (GB)": measured peak per GPU, the same at every m.
    "1.5B": {"1F1B": 30, "1F1B-I": 40, "ZB-1p": 32, "ZB-2p": 59},
    "6.2B": {"1F1B": 39, "1F1B-I": 48, "ZB-1p": 42, "ZB-2p": 70},
    "14.6B": {"1F1B": 32, "1F1B-I": 39, "ZB-1p": 33, "ZB-2p": 51},
    "28.3B": {"1F1B": 43, "1F1B-I": 58, "ZB-1p": 44, "ZB-2p": 74}}


@dataclass(frozen=True)
class MemoryRow:
    """One schedule's peak activations: ours beside the paper's."""

    column: str
    """Table 5's column name, e.g. "ZB-2p"."""
    ours_whole: float
    """Our peak in M_B, a micro-batch counted whole until W."""
    ours_weighted: float
    """Our peak in M_B, only W's share held after I (the automatic schedules' unit)."""
    paper: int | None
    """Table 2's peak (or section 3's limit) in M_B; None where the paper gives none."""
    measured_gb: int | None
    """Table 4's measured GB for the model, None without one."""


@functools.lru_cache(maxsize=256)  # pure: a class picks the same rows (papers_page; paper_bubble_rate's note)
def memory_row(column: str, p: int, m: int, costs: PassCosts, chunks: int, model: str | None = None) -> MemoryRow:
    """Table 5's ``column`` built as ``table5_rates`` builds it, with its peaks and the paper's."""
    schedule = built(TABLE5_SCHEDULES[column], p, m, costs, chunks)
    peak = TABLE_2_PEAK.get(column)
    return MemoryRow(column, max(peak_activations(schedule.actions, schedule.chunks)),
                     max(peak_activations(schedule.actions, schedule.chunks, costs.weight_memory)),
                     None if peak is None else peak(p), TABLE_4_GB.get(model or "", {}).get(column))


def memory_rows(p: int, m: int, costs: PassCosts, chunks: int, model: str | None = None) -> tuple[MemoryRow, ...]:
    """``memory_row`` for every column of Table 5, in its order."""
    return tuple(memory_row(column, p, m, costs, chunks, model) for column in TABLE5_SCHEDULES)
