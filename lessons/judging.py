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
from pipelab.engine.runtime.paired import paired_ratio
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.breakdown import breakdown_table
from pipelab.lessons.verdict import (
    BUBBLE_COLUMNS,
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    EQUAL_COSTS_LABEL,
    FAILS,
    HOLDS,
    NOISE,
    RATIO_NOISE,
    RATIO_TOLERANCE,
    UNTESTED,
    ClaimRow,
    Entries,
    Verdict,
    WalkRow,
    say,
    say_own,
)
from pipelab.lessons.why import largest_effect, sentence_with_why


def schedule_name(result) -> str:
    return result.schedule.name

def idle_ms(metrics: RunMetrics, simulated: bool = False) -> float:
    """Mean over devices of the idle time in one step (device clock, or the simulator's)."""
    if simulated:
        return metrics.simulated_bubble_fraction * metrics.simulated_step_time_s * 1e3
    return statistics.fmean(b * metrics.device_step_time_s * 1e3 for b in metrics.device_bubble_fraction_per_device)

def peak_mib(result) -> float:
    """The worst device's peak activation memory."""
    return max(r.peak_activation_bytes for r in result.memory.values()) / 2**20

def worst_device(result) -> int:
    """The device whose peak activation memory is the largest (the first of equals)."""
    return max(sorted(result.memory), key=lambda r: result.memory[r].peak_activation_bytes)

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


@dataclass(frozen=True)
class Against:
    """A figure judged against the limit its verdict states (``against``)."""
    ok: bool
    """It keeps the limit, as the verdict prints the two."""
    near: bool
    """It keeps it, or misses it by no more than the noise band."""
    band: str
    """Where it misses the limit within the band, the sentence that says by how much, the band
    allowed and where that band comes from; else ""."""

    def after(self, said: str) -> str:
        """``said`` (the sentence that states the limit) with the band's sentence after it, if any."""
        return say("then", first=said, second=self.band) if self.band else said


def against(measured: float, limit: float, band: float, at_most: bool = True, digits: int = 3,
            strict: bool = False) -> Against:
    """``measured`` against the ``limit`` its verdict states (at most, or with ``at_most=False``
    at least; ``strict``: beyond it, as "shorter" is below 1x), ``band`` more allowed as noise
    (BUBBLE_NOISE, RATIO_NOISE: what a busy shared host moves the figure between two identical
    runs). The two are compared as the verdict prints them, to ``digits`` decimals, so "holds"
    never sits beside a figure that reads past its limit (a limit of 0.2019 printed "0.20"
    beside a measured 0.202 did); one that misses it within the band holds within noise, and
    its sentence (the speaking lesson's ``claims.band``) names the miss, the band and its source."""
    over = round(measured, digits) - round(limit, digits)
    over = round(over if at_most else -over, digits)
    ok = over < 0 if strict else over <= 0
    near = ok or over <= round(band, digits)
    sentence = "" if ok or not near else say_own(
        "band", over=f"{over:.{digits}f}", limit=f"{limit:.{digits}f}", band=f"{band:.{digits}f}")
    return Against(ok, near, sentence)

def value_or_na(x: float | None) -> str:
    return say("n_a") if x is None else f"{x:.3f}"

def untested(claim: str, wanted: str, kind: str, entries: Entries) -> Verdict:
    ran = ", ".join(sorted({schedule_name(r) for _, r in entries}))
    return Verdict(claim, (), UNTESTED, say("untested", kind=say(f"kind.{kind}"), ran=ran, wanted=wanted))

def bubble_row(label: str, result) -> ClaimRow:
    m = result.metrics
    return ClaimRow(label, m.device_bubble_fraction, m.formula_bubble_fraction, m.simulated_bubble_fraction)

def at_own_costs(metrics: RunMetrics) -> float:
    """Theory at this run's own costs: the simulator fed the run's measured mean cost of each
    stage's F, B (I, W), the link and the engine's time between actions (never a measured
    start time). The equal-cost formula assumes every stage alike and free messages; a host
    where the last stage also computes the loss, or where W is cheaper than F, moves the
    bubble that far, and the verdict does not read that as a failed claim."""
    return metrics.simulated_bubble_fraction

def shown_gap(a: float, b: float) -> float:
    """The distance between two fractions as the page prints them (three decimals): the table's
    0.312 and 0.307 are 0.005 apart, and a sentence that said 0.004 read as a third figure."""
    return round(abs(round(a, 3) - round(b, 3)), 3)


def bubble_gap(row: ClaimRow) -> tuple[float, bool]:
    """(gap, against_costs): the measured bubble's distance from the formula, or from theory
    at the run's own costs when that is nearer (the breakdown names what separates the two),
    as the table prints them (shown_gap)."""
    to_formula = shown_gap(row.measured, row.formula)
    to_costs = shown_gap(row.measured, row.simulated) if row.simulated is not None else float("inf")
    return (to_costs, True) if to_costs < to_formula else (to_formula, False)

def walk_of(result) -> tuple[WalkRow, ...]:
    """From the claim's number to this run's measured bubble, one effect a row: the formula at
    equal costs and free messages (the paper's statement), then the run's bubble breakdown
    (engine/theory/breakdown.py: at the run's mean costs, each stage's own costs, messages, the
    engine's own time, ...) down to the device clock. Empty for a result without a breakdown."""
    m, s = result.metrics, result.schedule
    if not m.bubble_breakdown:
        return ()
    rows = [row for row in breakdown_table(m) if row.kind != "wall"]
    equal = theory.formula_bubble_fraction(s.name, s.num_ranks, s.num_microbatches, s.chunks)
    walk = [WalkRow(EQUAL_COSTS_LABEL, equal)] if equal is not None else []
    for row in rows:
        walk.append(WalkRow(row.label, row.value, None if not walk else row.value - walk[-1].value))
    return tuple(walk)


def bubble_follows_formula(claim: str, entries: Entries, columns: tuple[str, ...] = BUBBLE_COLUMNS) -> Verdict:
    """Every run's device-clock bubble within BUBBLE_TOLERANCE of its formula, or of theory at
    the run's own costs (at_own_costs), the sentence saying which."""
    rows = tuple(bubble_row(say("row.bubble_of", label=label) if len(entries) > 1 else say("row.bubble"), r)
                 for label, r in entries)
    gaps = [(*bubble_gap(row), row, label, r) for row, (label, r) in zip(rows, entries) if row.formula is not None]
    if not gaps:
        return Verdict(claim, rows, UNTESTED, say("no_formula"), columns)
    gap, against_costs, row, label, worst = max(gaps, key=lambda g: g[0])
    judged = against(gap, BUBBLE_TOLERANCE, BUBBLE_NOISE)
    status = status_of(judged.ok, judged.near)
    where = say("where", label=label) if len(entries) > 1 else ""
    walk = walk_of(worst)
    if against_costs:
        # Judged against theory at the run's own costs: the sentence names it, and the walk
        # below the table goes from the formula's number to the measured one.
        said = judged.after(say("bubble_gap_costs", where=where, measured=f"{row.measured:.3f}", gap=f"{gap:.3f}",
                                costs=f"{row.simulated:.3f}", formula=f"{row.formula:.3f}",
                                allowed=BUBBLE_TOLERANCE))
        effect = largest_effect(worst.metrics)
        if status != FAILS and effect:
            return Verdict(claim, rows, status, say("then", first=said, second=effect), columns, walk=walk)
    else:
        said = judged.after(say("bubble_gap", where=where, gap=f"{gap:.3f}", allowed=BUBBLE_TOLERANCE))
    return Verdict(claim, rows, status, sentence_with_why(said, status, worst.metrics), columns, walk=walk)


@dataclass(frozen=True)
class Part:
    """One schedule's share of a claim (a lesson's check joins several): its rows, whether it holds (or nearly), the
    sentence that says so, and the run whose breakdown explains a failure."""
    rows: tuple[ClaimRow, ...]
    ok: bool
    near: bool
    said: str
    metrics: RunMetrics


def ratio_row(quantity: str, ours, other, measure: Callable[[object], float], formula: float | None,
              simulated: float | None) -> ClaimRow:
    """A measured ratio, ``measure(ours) / measure(other)``: the median over pairs of steps where the
    two runs took turns in one launch, with its spread (pipelab.engine.runtime.paired.paired_ratio)."""
    ratio, low, high = paired_ratio(ours, other, measure)
    return ClaimRow(quantity, ratio, formula, simulated, "x", None if low == high else (low, high))


STEP_GAIN = 0.05
"""Theory at a run's own costs promises a shorter step when it puts the step ratio below
1 - STEP_GAIN; closer to 1, the verdict says how small a gain theory expects, and does not
count on it."""


def step_time(result) -> float:
    return result.metrics.device_step_time_s


def step_part(ours, other, a: str, b: str) -> Part:
    """The step the schedule promises, judged (arXiv 2401.10241 and every paper here measure
    iteration time): ``a``'s step ÷ ``b``'s on the device clock, the median over pairs of steps,
    against theory at the runs' own costs (the simulator fed each run's measured costs).
    Holds when the two agree within RATIO_TOLERANCE and, where theory promises a step shorter by
    more than STEP_GAIN, the step is shorter; the sentence says by how much, that theory's gain
    is too small to count on, or that at these costs theory itself expects none (the messages
    and each action's fixed costs eat what the bubble saves)."""
    row = ratio_row(say("row.step_ratio", a=a, b=b), ours, other, step_time, None,
                    safe_ratio(ours.metrics.simulated_step_time_s, other.metrics.simulated_step_time_s))
    ratio, theory = row.measured, row.simulated
    gap = abs(ratio - theory) if theory is not None else 0.0
    promised = theory is not None and theory < 1 - STEP_GAIN
    # Shorter as the sentence prints the ratio (three decimals, as the claim table shows it): a
    # 1.000x is not shorter.
    shorter = against(ratio, 1.0, RATIO_NOISE / 2, digits=3, strict=True)
    if promised and shorter.ok:
        said = say("step.shorter", a=a, b=b, by=shorter_by(ratio), theory=shorter_by(theory))
    elif promised:
        said = say("step.not_shorter", a=a, b=b, ratio=f"{ratio:.3f}", theory=shorter_by(theory))
    elif theory is not None and theory < 1:
        # Theory at these costs saves a little, under STEP_GAIN: "no shorter step (0.96x)" read
        # as a contradiction, so the sentence gives the small gain and why it is not counted on.
        said = say_own("step.small_gain", a=a, b=b, theory=shorter_by(theory), gain=shorter_by(1 - STEP_GAIN),
                       ratio=f"{ratio:.3f}")
    else:
        said = say("step.no_gain", a=a, b=b, ratio=f"{ratio:.3f}",
                   theory=say("n_a") if theory is None else f"{theory:.3f}")
    ok = gap <= RATIO_TOLERANCE and (not promised or shorter.ok)
    near = gap <= RATIO_TOLERANCE + RATIO_NOISE / 2 and (not promised or shorter.near)
    if promised and near:
        said = shorter.after(said)
    return Part((row,), ok, near, said, ours.metrics)


def shorter_by(ratio: float) -> str:
    """How much shorter a step ratio below 1 is, as a student says it: "12 %" or, from half on,
    "2.7x" (catalog ``claims.step.by_pct`` / ``by_times``)."""
    if ratio <= 0.5:
        return say("step.by_times", times=f"{1 / ratio:.1f}")
    return say("step.by_pct", pct=f"{(1 - ratio) * 100:.0f}")


def ratio_headline(measure: Callable[[object], float]) -> Callable[[Sequence[object]], float]:
    return lambda results: measure(results[0]) / measure(results[1])

__all__ = ["STEP_GAIN", "Against", "against", "at_own_costs", "bubble_follows_formula", "bubble_gap", "bubble_row",
           "find_result", "idle_ms", "mean_costs", "peak_mib", "ratio_headline", "ratio_row", "safe_ratio",
           "schedule_name", "shorter_by", "shown_gap", "simulated_peak_mib", "status_of", "step_part", "step_time",
           "untested", "value_or_na", "walk_of", "Part"]
