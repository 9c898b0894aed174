"""Helpers the lessons' claim checks share: reading a result, and judging a bubble against its formula.

Pure Python, no Streamlit: a result is anything with ``schedule`` (name, num_ranks,
num_microbatches, chunks), ``config`` (microbatch_size, steps), ``metrics`` and ``memory``
as pipelab.engine.results.result.RunResult has them, so tests can pass small fakes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipelab.engine.results.metrics import RunMetrics
from pipelab.lessons.verdict import (
    BUBBLE_COLUMNS,
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    FAILS,
    HOLDS,
    NOISE,
    UNTESTED,
    ClaimRow,
    Entries,
    Verdict,
    say,
)
from pipelab.lessons.why import largest_effect, sentence_with_why


def schedule_name(result) -> str:
    return result.schedule.name

def idle_ms(metrics: RunMetrics, simulated: bool = False) -> float:
    """Mean over devices of the idle time in one step (device clock, or the simulator's)."""
    if simulated:
        return metrics.simulated_bubble_fraction * metrics.simulated_step_time_s * 1e3
    return statistics.fmean(b * metrics.device_step_time_s * 1e3 for b in metrics.bubble_fraction_per_device)

def peak_mib(result) -> float:
    """The worst device's peak activation memory."""
    return max(r.peak_activation_bytes for r in result.memory.values()) / 2**20

def simulated_peak_mib(result) -> float | None:
    peaks = result.metrics.simulated_peak_activation_bytes_per_device
    return max(peaks) / 2**20 if peaks else None

def mean_costs(metrics: RunMetrics) -> tuple[float, float, float]:
    """Mean T_F, T_I, T_W over stages, as the run measured them."""
    return metrics.costs_s.mean_f_i_w()

def safe_ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b

def find_result(entries: Entries, schedule: str):
    """The first result of this schedule, or None."""
    return next((r for _, r in entries if schedule_name(r) == schedule), None)

def status_of(ok: bool, near: bool) -> str:
    return HOLDS if ok else NOISE if near else FAILS

def value_or_na(x: float | None) -> str:
    return say("n_a") if x is None else f"{x:.3f}"

def value2_or_na(x: float | None) -> str:
    return say("n_a") if x is None else f"{x:.2f}"

def untested(claim: str, wanted: str, kind: str, entries: Entries) -> Verdict:
    ran = ", ".join(sorted({schedule_name(r) for _, r in entries}))
    return Verdict(claim, (), UNTESTED, say("untested", kind=say(f"kind.{kind}"), ran=ran, wanted=wanted))

def bubble_row(label: str, result) -> ClaimRow:
    m = result.metrics
    return ClaimRow(label, m.bubble_fraction, m.formula_bubble_fraction, m.simulated_bubble_fraction)

def at_own_costs(metrics: RunMetrics) -> float:
    """Theory at this run's own costs: the simulator fed the run's measured mean cost of each
    stage's F, B (I, W), the link and the engine's time between actions (never a measured
    start time). The equal-cost formula assumes every stage alike and free messages; a host
    where the last stage also computes the loss, or where W is cheaper than F, moves the
    bubble that far, and the verdict does not read that as a failed claim."""
    return metrics.simulated_bubble_fraction

def bubble_gap(row: ClaimRow) -> tuple[float, bool]:
    """(gap, against_costs): the measured bubble's distance from the formula, or from theory
    at the run's own costs when that is nearer (the breakdown names what separates the two)."""
    to_formula = abs(row.measured - row.formula)
    to_costs = abs(row.measured - row.simulated) if row.simulated is not None else float("inf")
    return (to_costs, True) if to_costs < to_formula else (to_formula, False)

def bubble_follows_formula(claim: str, entries: Entries, columns: tuple[str, ...] = BUBBLE_COLUMNS) -> Verdict:
    """Every run's device-clock bubble within BUBBLE_TOLERANCE of its formula, or of theory at
    the run's own costs (at_own_costs), the sentence saying which."""
    rows = tuple(bubble_row(say("row.bubble_of", label=label) if len(entries) > 1 else say("row.bubble"), r)
                 for label, r in entries)
    gaps = [(*bubble_gap(row), row, label, r) for row, (label, r) in zip(rows, entries) if row.formula is not None]
    if not gaps:
        return Verdict(claim, rows, UNTESTED, say("no_formula"), columns)
    gap, against_costs, row, label, worst = max(gaps, key=lambda g: g[0])
    status = status_of(gap <= BUBBLE_TOLERANCE, gap <= BUBBLE_TOLERANCE + BUBBLE_NOISE)
    where = say("where", label=label) if len(entries) > 1 else ""
    if against_costs:
        said = say("bubble_gap_costs", where=where, measured=f"{row.measured:.3f}", gap=f"{gap:.3f}",
                  costs=f"{row.simulated:.3f}", formula=f"{row.formula:.3f}", allowed=BUBBLE_TOLERANCE)
        effect = largest_effect(worst.metrics)
        if status != FAILS and effect:
            return Verdict(claim, rows, status, say("then", first=said, second=effect), columns)
    else:
        said = say("bubble_gap", where=where, gap=f"{gap:.3f}", allowed=BUBBLE_TOLERANCE)
    return Verdict(claim, rows, status, sentence_with_why(said, status, worst.metrics), columns)


@dataclass(frozen=True)
class Part:
    """One schedule's share of a claim (a lesson's check joins several): its rows, whether it holds (or nearly), the
    sentence that says so, and the run whose breakdown explains a failure."""
    rows: tuple[ClaimRow, ...]
    ok: bool
    near: bool
    said: str
    metrics: RunMetrics


def ratio_headline(measure: Callable[[object], float]) -> Callable[[Sequence[object]], float]:
    return lambda results: measure(results[0]) / measure(results[1])

__all__ = ["Part", "at_own_costs", "bubble_follows_formula", "bubble_gap", "bubble_row", "find_result", "idle_ms",
           "mean_costs", "peak_mib", "ratio_headline", "safe_ratio", "schedule_name", "simulated_peak_mib", "status_of",
           "untested", "value2_or_na", "value_or_na"]
