"""Does the lesson's claim hold in this run? One check per lesson, on finished results.

Each check takes what a page finished (its one run, its comparison, or its sweep) as
(label, result) pairs and returns a Verdict: the claim, the one or two numbers that test
it (measured on the device clock beside the formula and the simulator), and the verdict in
words. When a claim does not hold, the reason names the bubble breakdown's largest measured
effect (pipelab.engine.theory.breakdown.breakdown_table): the one thing this run had that the formula
leaves out and that cost the most.

Pure Python, no Streamlit: a result is anything with ``schedule`` (name, num_ranks,
num_microbatches, chunks), ``config`` (microbatch_size, steps), ``metrics`` and ``memory``
as pipelab.engine.results.result.RunResult has them, so tests can pass small fakes.

Texts (row names, reasons) come from the course's catalogs (lessons/i18n) in the language
``verdict`` is asked for; the status stays a language-neutral id (HOLDS, ...), which the
app shows through the catalog's ``verdict.status.<id>``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.breakdown import PER_STEP_LABEL, breakdown_table
from pipelab.engine.results.metrics import RunMetrics
from pipelab.lessons.i18n import has, text

_LANG: contextvars.ContextVar[str] = contextvars.ContextVar("claims_lang", default="en")
"""The language of the verdict being built (set by ``verdict``), so every check writes in it
without passing it through each helper."""


def _t(key: str, **values) -> str:
    return text(_LANG.get(), f"claims.{key}", **values)

HOLDS = "holds"
NOISE = "holds within noise"
FAILS = "does not hold here"
UNTESTED = "not tested by this run"
STATUS_KEYS = {HOLDS: "verdict.status.holds", NOISE: "verdict.status.noise", FAILS: "verdict.status.fails",
               UNTESTED: "verdict.status.untested"}
"""Each status's catalog key: the words a page shows for it."""

BUBBLE_TOLERANCE = 0.05
"""How far a measured bubble fraction may sit from the formula's and still follow it."""
BUBBLE_NOISE = 0.03
"""Beyond the tolerance, this much more is "within noise": what a busy shared host moves a
device-clock bubble between two identical runs (tests/test_lesson_claims.py takes medians)."""
RATIO_NOISE = 0.10
"""The same for a ratio of two runs: a threshold missed by under 10 % holds within noise."""
RATIO_TOLERANCE = 0.10
"""How far a measured ratio of two runs may sit from theory at the runs' own costs."""

RUN, COMPARISON, SWEEP = "run", "comparison", "sweep"


@dataclass(frozen=True)
class ClaimRow:
    quantity: str
    measured: float | None
    """On the device clock (memory and counts as the ranks measured them)."""
    formula: float | None
    simulated: float | None
    unit: str = ""
    """"" for a fraction, or "ms", "MiB", "x" (a ratio), "count"."""


@dataclass(frozen=True)
class Verdict:
    claim: str
    rows: tuple[ClaimRow, ...]
    status: str
    """HOLDS, NOISE, FAILS or UNTESTED."""
    reason: str
    """One or two sentences: what the numbers say, and when it fails, why."""
    columns: tuple[str, ...] = ()
    """Columns of the app's comparison and sweep tables that test the claim (shown first)."""
    tests: str = ""
    """The part of the claim this run, comparison or sweep can test (a run of 1F1B alone tests
    its memory, not that its bubble is GPipe's), in the verdict's language."""


Entries = Sequence[tuple[object, object]]
"""(label, result) pairs: one for a run, the lesson's run first for a comparison, one per
swept value for a sweep."""

BUBBLE_COLUMNS = ("bubble (device)", "bubble (formula)", "bubble (simulated)")
STEP_COLUMNS = ("step ms (device)",)


# ---- reading a result ----------------------------------------------------------------------

def _name(result) -> str:
    return result.schedule.name


def idle_ms(metrics: RunMetrics, simulated: bool = False) -> float:
    """Mean over devices of the idle time in one step (device clock, or the simulator's)."""
    if simulated:
        return metrics.simulated_bubble_fraction * metrics.simulated_step_time_s * 1e3
    return statistics.fmean(b * metrics.device_step_time_s * 1e3 for b in metrics.bubble_fraction_per_device)


def _peak_mib(result) -> float:
    """The worst device's peak activation memory."""
    return max(r.peak_activation_bytes for r in result.memory.values()) / 2**20


def _simulated_peak_mib(result) -> float | None:
    peaks = result.metrics.simulated_peak_activation_bytes_per_device
    return max(peaks) / 2**20 if peaks else None


def _mean_costs(metrics: RunMetrics) -> tuple[float, float, float]:
    """Mean T_F, T_I, T_W over stages, as the run measured them."""
    return metrics.costs_s.mean_f_i_w()


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _find(entries: Entries, schedule: str):
    """The first result of this schedule, or None."""
    return next((r for _, r in entries if _name(r) == schedule), None)


# ---- why a bubble is not the formula's -------------------------------------------------------

EFFECTS = {
    "simulator: every stage at the run's mean costs": "approximation",
    "+ each stage's own costs": "stage_costs",
    "+ message latency": "latency",
    "+ the engine's own time between actions": "host",
    "+ each action's own mean cost (its place in the step)": "per_action",
    PER_STEP_LABEL: "per_step",
    "measured, device clock": "waiting",
}
"""The breakdown's row labels -> the effect each adds (catalog ``claims.effect.<id>``)."""


def largest_effect(metrics: RunMetrics) -> str:
    """A sentence naming the bubble breakdown's largest measured effect on the device clock,
    or "" for a result without a breakdown."""
    if not metrics.bubble_breakdown:
        return ""
    table = breakdown_table(metrics)
    rows = [row for row in table if row.change is not None and row.kind != "wall"]
    if not rows:
        return ""
    worst = max(rows, key=lambda row: row.change)
    if worst.change <= 0:
        return ""
    effect = _t(f"effect.{EFFECTS[worst.label]}") if worst.label in EFFECTS else worst.label.removeprefix("+ ")
    start = table[0]
    return _t("why", start=_t(f"start.{start.kind}"), start_value=f"{start.value:.3f}",
              device=f"{metrics.bubble_fraction:.3f}", effect=effect, change=f"{worst.change:.3f}")


def _why(what: str, metrics: RunMetrics) -> str:
    effect = largest_effect(metrics)
    return _t("then", first=what, second=effect) if effect else _t("end", sentence=what)


def _said(what: str, status: str, metrics: RunMetrics) -> str:
    """A sentence, with the why after it when the claim does not hold."""
    return _why(what, metrics) if status == FAILS else _t("end", sentence=what)


def _status(ok: bool, near: bool) -> str:
    return HOLDS if ok else NOISE if near else FAILS


# ---- checks shared by several lessons ------------------------------------------------------

def _untested(claim: str, wanted: str, kind: str, entries: Entries) -> Verdict:
    ran = ", ".join(sorted({_name(r) for _, r in entries}))
    return Verdict(claim, (), UNTESTED, _t("untested", kind=_t(f"kind.{kind}"), ran=ran, wanted=wanted))


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


def _bubble_gap(row: ClaimRow) -> tuple[float, bool]:
    """(gap, against_costs): the measured bubble's distance from the formula, or from theory
    at the run's own costs when that is nearer (the breakdown names what separates the two)."""
    to_formula = abs(row.measured - row.formula)
    to_costs = abs(row.measured - row.simulated) if row.simulated is not None else float("inf")
    return (to_costs, True) if to_costs < to_formula else (to_formula, False)


def bubble_follows_formula(claim: str, entries: Entries, columns: tuple[str, ...] = BUBBLE_COLUMNS) -> Verdict:
    """Every run's device-clock bubble within BUBBLE_TOLERANCE of its formula, or of theory at
    the run's own costs (at_own_costs), the sentence saying which."""
    rows = tuple(bubble_row(_t("row.bubble_of", label=label) if len(entries) > 1 else _t("row.bubble"), r)
                 for label, r in entries)
    gaps = [(*_bubble_gap(row), row, label, r) for row, (label, r) in zip(rows, entries) if row.formula is not None]
    if not gaps:
        return Verdict(claim, rows, UNTESTED, _t("no_formula"), columns)
    gap, against_costs, row, label, worst = max(gaps, key=lambda g: g[0])
    status = _status(gap <= BUBBLE_TOLERANCE, gap <= BUBBLE_TOLERANCE + BUBBLE_NOISE)
    where = _t("where", label=label) if len(entries) > 1 else ""
    if against_costs:
        said = _t("bubble_gap_costs", where=where, measured=f"{row.measured:.3f}", gap=f"{gap:.3f}",
                  costs=f"{row.simulated:.3f}", formula=f"{row.formula:.3f}", allowed=BUBBLE_TOLERANCE)
        effect = largest_effect(worst.metrics)
        if status != FAILS and effect:
            return Verdict(claim, rows, status, _t("then", first=said, second=effect), columns)
    else:
        said = _t("bubble_gap", where=where, gap=f"{gap:.3f}", allowed=BUBBLE_TOLERANCE)
    return Verdict(claim, rows, status, _said(said, status, worst.metrics), columns)


# ---- the lessons ----------------------------------------------------------------------------

def naive(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 1: each device busy about 1/p of the step; GPipe's step with 8 micro-batches on
    the same rows at least 1.5x shorter (theory p m / (m + p - 1), about 2.9 for p = 4)."""
    slow = _find(entries, "naive")
    if slow is None:
        return _untested(claim, "naive", kind, entries)
    m, p = slow.metrics, slow.schedule.num_ranks
    if kind == COMPARISON and _find(entries, "gpipe") is not None:
        fast = _find(entries, "gpipe")
        # Work per device in rows of the batch: naive passes m_n x b_n rows through the p
        # devices one after another; GPipe's step lasts m + p - 1 micro-batch slots of b_g rows.
        formula = (p * slow.schedule.num_microbatches * slow.config.microbatch_size
                   / ((fast.schedule.num_microbatches + p - 1) * fast.config.microbatch_size))
        measured = m.device_step_time_s / fast.metrics.device_step_time_s
        simulated = _ratio(m.simulated_step_time_s, fast.metrics.simulated_step_time_s)
        rows = (ClaimRow(_t("row.step_ratio", a="naive", b="GPipe"), measured, formula, simulated, "x"),
                ClaimRow(_t("row.step_of", name="naive"), m.device_step_time_s * 1e3, None,
                         m.simulated_step_time_s * 1e3, "ms"),
                ClaimRow(_t("row.step_of", name="GPipe"), fast.metrics.device_step_time_s * 1e3, None,
                         fast.metrics.simulated_step_time_s * 1e3, "ms"))
        status = _status(measured >= 1.5, measured >= 1.5 * (1 - RATIO_NOISE))
        said = _t("naive.faster", measured=f"{measured:.2f}", formula=f"{formula:.2f}")
        return Verdict(claim, rows, status, _said(said, status, fast.metrics),
                       ("step ms (device)", "step ms (simulated)", "bubble (device)"))
    busy = [1 - b for b in m.bubble_fraction_per_device]
    simulated = [1 - b for b in m.simulated_bubble_fraction_per_device]
    far = max(range(p), key=lambda r: abs(busy[r] - 1 / p))
    rows = (ClaimRow(_t("row.busy_mean"), statistics.fmean(busy), 1 / p, statistics.fmean(simulated)),
            ClaimRow(_t("row.busy_far", device=far), busy[far], 1 / p, simulated[far]))
    gap = abs(busy[far] - 1 / p)
    status = _status(gap <= BUBBLE_TOLERANCE, gap <= BUBBLE_TOLERANCE + BUBBLE_NOISE)
    said = _t("naive.busy", gap=f"{gap:.3f}", share=f"{1 / p:.3f}", allowed=BUBBLE_TOLERANCE)
    return Verdict(claim, rows, status, _said(said, status, m), BUBBLE_COLUMNS)


def gpipe(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 2: the bubble within 0.05 of (p-1)/(m+p-1), and falling as m grows."""
    if _find(entries, "gpipe") is None:
        return _untested(claim, "gpipe", kind, entries)
    entries = [(label, r) for label, r in entries if _name(r) == "gpipe"]
    plain = next((r for _, r in entries if not r.config.recompute), None)
    redone = next((r for _, r in entries if r.config.recompute), None)
    if kind == COMPARISON and plain is not None and redone is not None:
        return rematerialization(claim, plain, redone)
    if kind != SWEEP:
        return bubble_follows_formula(claim, entries)
    entries = sorted(entries, key=lambda e: e[0])
    rows = tuple(bubble_row(_t("row.bubble_at_m", m=r.schedule.num_microbatches), r) for _, r in entries)
    near_formula = bubble_follows_formula(claim, [(f"m = {r.schedule.num_microbatches}", r) for _, r in entries])
    bubbles = [row.measured for row in rows]
    falling = all(b < a for a, b in zip(bubbles, bubbles[1:]))
    falling_near = all(b < a + BUBBLE_NOISE for a, b in zip(bubbles, bubbles[1:]))
    rank = {HOLDS: 0, NOISE: 1, FAILS: 2, UNTESTED: 2}
    status = (HOLDS, NOISE, FAILS)[max(rank[near_formula.status], 0 if falling else 1 if falling_near else 2)]
    trend = _t("gpipe.falls" if falling else "gpipe.does_not_fall", bubbles=", ".join(f"{b:.3f}" for b in bubbles))
    if not falling_near and near_formula.status != FAILS:  # the formula's reason has no why yet
        return Verdict(claim, rows, status, _why(trend, entries[-1][1].metrics), BUBBLE_COLUMNS)
    return Verdict(claim, rows, status, _t("then", first=trend, second=near_formula.reason), BUBBLE_COLUMNS)


RECOMPUTE_COLUMNS = ("max peak activations (MiB)", "step ms (device)", "step ms (simulated)", "bubble (device)")


def rematerialization(claim: str, plain, redone) -> Verdict:
    """Lesson 2's comparison: re-materialization (GPipe, arXiv 1811.06965, section 2.3) keeps
    only each stage's input per micro-batch, so the worst device's peak activations fall, and
    pays one more forward per micro-batch inside the backward, so the step grows. Theory for
    the step at the plain run's own costs: (2 T_F + T_B) / (T_F + T_B) per micro-batch; the
    simulator, fed each run's costs, says what the recomputing run's cheaper first forward
    (no activations kept) leaves of that."""
    peak = _peak_mib(redone) / _peak_mib(plain)
    peak_simulated = _ratio(_simulated_peak_mib(redone), _simulated_peak_mib(plain))
    step = redone.metrics.device_step_time_s / plain.metrics.device_step_time_s
    t_f, t_i, t_w = _mean_costs(plain.metrics)
    step_formula = (2 * t_f + t_i + t_w) / (t_f + t_i + t_w)
    step_simulated = _ratio(redone.metrics.simulated_step_time_s, plain.metrics.simulated_step_time_s)
    rows = (ClaimRow(_t("row.peak_ratio", a=_t("recompute.redone"), b=_t("recompute.plain")), peak, None,
                     peak_simulated, "x"),
            ClaimRow(_t("row.step_ratio", a=_t("recompute.redone"), b=_t("recompute.plain")), step, step_formula,
                     step_simulated, "x"),
            ClaimRow(_t("row.peak_of", label=_t("recompute.plain")), _peak_mib(plain), None,
                     _simulated_peak_mib(plain), "MiB"),
            ClaimRow(_t("row.peak_of", label=_t("recompute.redone")), _peak_mib(redone), None,
                     _simulated_peak_mib(redone), "MiB"))
    # Memory falls by most of the activations (each stage keeps one micro-batch's whole set at
    # a time); the step grows, by less than a whole forward when the first one keeps nothing.
    ok = peak <= 0.5 and step > 1.0
    near = peak <= 0.5 * (1 + RATIO_NOISE) and step > 1.0 - RATIO_NOISE / 2
    said = _t("recompute.said", peak=f"{peak:.2f}", peak_simulated=_value(peak_simulated), step=f"{step:.2f}",
              step_formula=f"{step_formula:.2f}", step_simulated=_value(step_simulated))
    status = _status(ok, near)
    return Verdict(claim, rows, status, _said(said, status, redone.metrics), RECOMPUTE_COLUMNS)


PIPEDREAM_COLUMNS = ("max weight versions", "bubble (device)", "final loss")


def pipedream(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 3: stage r keeps p - r weight versions (PipeDream), two (2BW), one (1F1B)."""
    if kind == COMPARISON:
        rows = tuple(ClaimRow(_t("row.most_versions", label=label),
                              max(mem.weight_versions for mem in r.memory.values()),
                              max(mem.theory_weight_versions for mem in r.memory.values()), None, "count")
                     for label, r in entries)
    else:
        (label, r), = entries
        rows = tuple(ClaimRow(_t("row.versions", device=rank), mem.weight_versions,
                              mem.theory_weight_versions, None, "count")
                     for rank, mem in sorted(r.memory.items()))
    wrong = [row for row in rows if row.measured != row.formula]
    # Every asynchronous run's steady idle is shown; the claim names PipeDream's, so the
    # lesson's own run (the first) is judged: 2BW's queue of p micro-batches between its
    # updates idles more on this host (its row says how much, beside its theory).
    shown = [_steady_busy_part(label, r) for label, r in entries if r.schedule.is_async]
    busy = shown[:1] if shown and entries[0][1].schedule.is_async else []
    rows = tuple(part.rows[0] for part in shown) + rows
    if wrong:
        row = wrong[0]
        steps = entries[0][1].config.steps
        reason = _t("pipedream.fails", quantity=row.quantity, measured=row.measured, formula=row.formula,
                    steps=steps)
        return Verdict(claim, rows, FAILS, reason, PIPEDREAM_COLUMNS)
    said = functools.reduce(lambda first, second: _t("then", first=first, second=second),
                            [p.said for p in busy] + [_t("pipedream.holds").rstrip(".")])
    status = _status(all(p.ok for p in busy), all(p.near for p in busy))
    failing = next((p for p in busy if not p.ok), None)
    reason = _why(said, failing.metrics) if failing is not None and status == FAILS else _t("end", sentence=said)
    return Verdict(claim, rows, status, reason, PIPEDREAM_COLUMNS)


STEADY_IDLE = 0.10
"""Asynchronous PipeDream's claim, "every stage busy in steady state" (arXiv 1806.03377,
section 3.1): its idle share over the steady steps at most this, or within BUBBLE_TOLERANCE of
theory at the run's own costs (the engine's own time between actions is idle too)."""


def _steady_busy_part(label: str, result) -> "_Part":
    """The steady state of an asynchronous run: no flush, so each device idles only for what
    the engine and unequal stages cost (formula 0)."""
    m = result.metrics
    measured, simulated = m.steady_bubble_fraction, m.simulated_bubble_fraction
    row = ClaimRow(_t("row.steady_idle", label=label), measured, 0.0, simulated)
    limit = max(STEADY_IDLE, simulated + BUBBLE_TOLERANCE)
    said = _t("pipedream.busy", label=label, measured=f"{measured:.3f}", simulated=f"{simulated:.3f}",
              limit=f"{limit:.2f}")
    return _Part((row,), measured <= limit, measured <= limit + BUBBLE_NOISE, said, m)


def one_f_one_b(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 4: rank r holds at most p - r micro-batches; the bubble within 0.05 of GPipe's;
    peak activations flat in m (m >= p) where GPipe's grow."""
    mem_columns = ("max peak activations (MiB)", "bubble (device)", "bubble (formula)")
    ours = _find(entries, "1f1b")
    if ours is None:
        return _untested(claim, "1f1b", kind, entries)
    p = ours.schedule.num_ranks
    if kind == COMPARISON and _find(entries, "gpipe") is not None:
        other = _find(entries, "gpipe")
        rows = (bubble_row(_t("row.bubble_of", label="1F1B"), ours),
                bubble_row(_t("row.bubble_of", label="GPipe"), other),
                ClaimRow(_t("row.peak_of", label="1F1B"), _peak_mib(ours), None, _simulated_peak_mib(ours), "MiB"),
                ClaimRow(_t("row.peak_of", label="GPipe"), _peak_mib(other), None, _simulated_peak_mib(other), "MiB"))
        gap = abs(ours.metrics.bubble_fraction - other.metrics.bubble_fraction)
        m = ours.schedule.num_microbatches
        less = _peak_mib(ours) < _peak_mib(other) if m > p else _peak_mib(ours) <= _peak_mib(other) * 1.1
        less_near = _peak_mib(ours) <= _peak_mib(other) * (1 + RATIO_NOISE) if m > p else True
        status = _status(gap <= BUBBLE_TOLERANCE and less, gap <= BUBBLE_TOLERANCE + BUBBLE_NOISE and less_near)
        said = _t("1f1b.compare", gap=f"{gap:.3f}", allowed=BUBBLE_TOLERANCE, ours=f"{_peak_mib(ours):.2f}",
                  other=f"{_peak_mib(other):.2f}")
        if m <= p:
            said += _t("1f1b.few_m", m=m, p=p)
        return Verdict(claim, rows, status, _said(said, status, ours.metrics), mem_columns)
    if kind == SWEEP:
        points = sorted(((r.schedule.num_microbatches, r) for _, r in entries if _name(r) == "1f1b"),
                        key=lambda e: e[0])
        rows = tuple(ClaimRow(_t("row.peak_at_m", m=m), _peak_mib(r), None, _simulated_peak_mib(r), "MiB")
                     for m, r in points)
        rows += tuple(ClaimRow(_t("row.alive_device0", m=m),
                               r.metrics.peak_inflight_per_device[0], min(p, m), None, "count") for m, r in points)
        deep = [(m, r) for m, r in points if m >= p]
        if len(deep) < 2:
            return Verdict(claim, rows, UNTESTED, _t("1f1b.few_points", p=p), mem_columns)
        growth = _peak_mib(deep[-1][1]) / _peak_mib(deep[0][1])
        status = _status(growth <= 1.1, growth <= 1.1 + RATIO_NOISE)
        said = _t("1f1b.sweep", first=deep[0][0], last=deep[-1][0], growth=f"{growth:.2f}",
                  gpipe=f"{deep[-1][0] / deep[0][0]:.0f}")
        return Verdict(claim, rows, status, _t("end", sentence=said), mem_columns)
    inflight = ours.metrics.peak_inflight_per_device
    rows = tuple(ClaimRow(_t("row.alive", device=r), inflight[r], min(p - r, ours.schedule.num_microbatches),
                          None, "count") for r in range(p))
    over = [row for row in rows if row.measured > row.formula]
    if over:
        return Verdict(claim, rows, FAILS, _t("1f1b.over", quantity=over[0].quantity, measured=over[0].measured,
                                              formula=over[0].formula), mem_columns)
    return Verdict(claim, rows, HOLDS, _t("1f1b.holds", m=ours.schedule.num_microbatches), mem_columns)


def interleaved(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 5: with v = 2 the bubble at most 0.7 of 1F1B's and the step shorter; the
    messages multiplied by (vp - 1)/(p - 1)."""
    ours = _find(entries, "interleaved")
    if ours is None:
        return _untested(claim, "interleaved", kind, entries)
    other = _find(entries, "1f1b")
    columns = ("bubble (device)", "bubble (formula)", "step ms (device)", "messages/step")
    if kind != COMPARISON or other is None:
        return bubble_follows_formula(claim, [(label, r) for label, r in entries if r is ours], columns)
    mo, m1 = ours.metrics, other.metrics
    p, v = ours.schedule.num_ranks, ours.schedule.chunks
    measured = mo.bubble_fraction / m1.bubble_fraction
    formula = _ratio(mo.formula_bubble_fraction, m1.formula_bubble_fraction)
    simulated = _ratio(mo.simulated_bubble_fraction, m1.simulated_bubble_fraction)
    steps = (mo.device_step_time_s, m1.device_step_time_s)
    rows = (ClaimRow(_t("row.bubble_ratio_v", v=v), measured, formula, simulated, "x"),
            ClaimRow(_t("row.step_of", name="interleaved"), steps[0] * 1e3, None, mo.simulated_step_time_s * 1e3,
                     "ms"),
            ClaimRow(_t("row.step_of", name="1F1B"), steps[1] * 1e3, None, m1.simulated_step_time_s * 1e3, "ms"),
            ClaimRow(_t("row.messages_ratio"), mo.messages_per_step / m1.messages_per_step,
                     (v * p - 1) / (p - 1), None, "x"))
    messages = mo.messages_per_step / m1.messages_per_step
    # The claim: the bubble is cut (clearly: at most CUT of 1F1B's), by what theory at these
    # runs' own costs says; the step is reported beside its simulation, not judged (with every
    # action's fixed cost doubled by v, a host may lose to the messages what the bubble gains).
    # The messages are counted, so they must be exactly (vp - 1) / (p - 1).
    messages_ok = abs(messages - (v * p - 1) / (p - 1)) < 1e-9
    agrees = simulated is not None and abs(measured - simulated) <= RATIO_TOLERANCE
    agrees_near = simulated is not None and abs(measured - simulated) <= RATIO_TOLERANCE + RATIO_NOISE / 2
    ok = measured <= INTERLEAVED_CUT and agrees and messages_ok
    near = measured <= INTERLEAVED_CUT + RATIO_NOISE / 2 and agrees_near and messages_ok
    status = _status(ok, near)
    step_simulated = _ratio(mo.simulated_step_time_s, m1.simulated_step_time_s)
    said = _t("interleaved.said", measured=f"{measured:.2f}", costs=_value2(simulated), formula=_value2(formula),
              inverse=f"{1 / v:.2f}", step=f"{steps[0] / steps[1]:.2f}", step_simulated=_value2(step_simulated),
              messages=f"{messages:.2f}", v=v, p=p)
    return Verdict(claim, rows, status, _said(said, status, mo), columns)


INTERLEAVED_CUT = 0.9
"""Lesson 5's bubble ratio (interleaved ÷ 1F1B) that counts as cut: 0.58 at p = 4, m = 8,
v = 2 on equal costs; the engine's own time per action, which v doubles, lifts it here."""


def _value2(x: float | None) -> str:
    return _t("n_a") if x is None else f"{x:.2f}"


NO_GAP_RATIO = 0.8
"""ZB-H2 and ZB-V "without a gap inside each device's span": their idle share there at most
this much of 1F1B's (the paper's zero, less this engine's own costs per action); with
overlapping steps, their bubble at most this much of what a barrier between steps costs."""

ZB_COLUMNS = ("idle ms per step (device)", "max peak activations (MiB)", "step ms (device)", "bubble (device)")
SPAN_COLUMN = "bubble inside each device's span"


@dataclass(frozen=True)
class _Part:
    """One schedule's share of lesson 6's claim: its rows, whether it holds (or nearly), the
    sentence that says so, and the run whose breakdown explains a failure."""
    rows: tuple[ClaimRow, ...]
    ok: bool
    near: bool
    said: str
    metrics: RunMetrics


def _zb_h1_part(ours, other) -> _Part:
    """ZB-H1 idles at most 0.6 of 1F1B's time, at 1F1B's worst-device peak memory, with a
    shorter step."""
    mo, m1 = ours.metrics, other.metrics
    p = ours.schedule.num_ranks
    t_f, t_i, t_w = _mean_costs(mo)
    idle = idle_ms(mo) / idle_ms(m1)
    idle_formula = _ratio(theory.zb_h1_bubble_time(p, t_f, t_i, t_w), theory.one_f_one_b_bubble_time(p, t_f, t_i, t_w))
    idle_simulated = _ratio(idle_ms(mo, simulated=True), idle_ms(m1, simulated=True))
    memory = _peak_mib(ours) / _peak_mib(other)
    memory_simulated = _ratio(_simulated_peak_mib(ours), _simulated_peak_mib(other))
    step = mo.device_step_time_s / m1.device_step_time_s
    rows = (ClaimRow(_t("row.idle_ratio", a="ZB-H1", b="1F1B"), idle, idle_formula, idle_simulated, "x"),
            ClaimRow(_t("row.peak_ratio", a="ZB-H1", b="1F1B"), memory, 1.0, memory_simulated, "x"),
            ClaimRow(_t("row.step_ratio", a="ZB-H1", b="1F1B"), step, None,
                     _ratio(mo.simulated_step_time_s, m1.simulated_step_time_s), "x"))
    # The claim: idle cut to about a third (at most ZB_H1_CUT of 1F1B's, by what theory at these
    # runs' own costs says: the paper's (p-1)(T_F + T_B - T_W) against (p-1)(T_F + T_B + T_W) is
    # more than a third where W is cheaper than F) at 1F1B's memory. The step is reported.
    agrees = idle_simulated is not None and abs(idle - idle_simulated) <= RATIO_TOLERANCE
    agrees_near = idle_simulated is not None and abs(idle - idle_simulated) <= RATIO_TOLERANCE + RATIO_NOISE / 2
    ok = idle <= ZB_H1_CUT and agrees and memory <= 1.1
    near = idle <= ZB_H1_CUT + RATIO_NOISE / 2 and agrees_near and memory <= 1.1 + RATIO_NOISE
    said = _t("zero_bubble.said", idle=f"{idle:.2f}", costs=_value2(idle_simulated), formula=f"{idle_formula:.2f}",
              memory=f"{memory:.2f}", step=f"{step:.2f}")
    return _Part(rows, ok, near, said, mo)


ZB_H1_CUT = 0.75
"""Lesson 6's idle ratio (ZB-H1 ÷ 1F1B) that counts as cut: a third on equal costs."""


def _own_span_formula(result) -> float | None:
    """The idle share inside each device's span that theory gives this run's schedule: the
    overlapped formula, which keeps only that part (theory.formula_bubble_fraction), for the
    schedules whose claim it is (ZB-H2, ZB-V); None for the others."""
    s = result.schedule
    if s.name not in ("zb-h2", "zb-v"):
        return None
    try:
        return theory.formula_bubble_fraction(s.name, s.num_ranks, s.num_microbatches, s.chunks,
                                              *_mean_costs(result.metrics), overlapped=True)
    except ValueError:
        return None


def _simulated_own_span(result) -> float | None:
    """The simulator's idle share inside each device's span, for a result that carries its
    simulated timeline (a RunResult; the tests' fakes do not)."""
    simulated = getattr(result, "simulated", None)
    return None if simulated is None else simulated.steady_bubble_fraction()


def _no_gap_part(label: str, ours, other) -> _Part:
    """ZB-H2 or ZB-V: with a barrier between steps, little idle inside each device's span
    against 1F1B's (the two ends stay); with overlapping steps, the two ends gone too: a
    bubble well under what a barrier costs (arXiv 2401.10241, sections 2.2 and 4)."""
    mo = ours.metrics
    s = ours.schedule
    if mo.overlapped_steps:
        barrier_formula = theory.formula_bubble_fraction(s.name, s.num_ranks, s.num_microbatches, s.chunks,
                                                         *_mean_costs(mo), overlapped=False)
        # The yardstick is a barrier at this run's own costs (the simulator fed them): the
        # formula's barrier leaves out the engine's time and unequal stages, which the
        # overlapped run pays, so against it ZB-V's half-size ends read as a loss.
        barrier = mo.simulated_barrier_bubble_fraction
        if barrier is None:  # a result saved before runs reported it
            barrier = barrier_formula
        measured = mo.bubble_fraction
        rows = (ClaimRow(_t("row.bubble_overlapped", label=label), measured, mo.formula_bubble_fraction,
                         mo.simulated_bubble_fraction),
                ClaimRow(_t("row.bubble_barrier", label=label), None, barrier_formula,
                         mo.simulated_barrier_bubble_fraction))
        ratio = measured / barrier if barrier else float("inf")
        said = _t("zero_bubble.overlapped", label=label, measured=f"{measured:.3f}",
                  formula=_value(mo.formula_bubble_fraction), ratio=f"{ratio:.2f}", barrier=f"{barrier:.3f}",
                  limit=NO_GAP_RATIO)
        return _Part(rows, ratio <= NO_GAP_RATIO, ratio <= NO_GAP_RATIO * (1 + RATIO_NOISE), said, mo)
    ours_span, other_span = mo.steady_bubble_fraction, other.metrics.steady_bubble_fraction
    rows = (ClaimRow(_t("row.span_of", label=label), ours_span, _own_span_formula(ours), _simulated_own_span(ours)),
            ClaimRow(_t("row.span_of", label="1F1B"), other_span, _own_span_formula(other),
                     _simulated_own_span(other)))
    ratio = ours_span / other_span if other_span else float("inf")
    said = _t("zero_bubble.span", label=label, ours=f"{ours_span:.3f}", ratio=f"{ratio:.2f}",
              other=f"{other_span:.3f}", limit=NO_GAP_RATIO, whole=f"{mo.bubble_fraction:.3f}")
    return _Part(rows, ratio <= NO_GAP_RATIO, ratio <= NO_GAP_RATIO * (1 + RATIO_NOISE), said, mo)


def _value(x: float | None) -> str:
    return _t("n_a") if x is None else f"{x:.3f}"


def zero_bubble(claim: str, kind: str, entries: Entries) -> Verdict:
    """Lesson 6, each part on the schedules the comparison ran beside 1F1B: ZB-H1's idle time
    (_zb_h1_part), and ZB-H2's and ZB-V's span without gaps, or with overlapping steps their
    bubble without the two ends (_no_gap_part). The verdict is its worst part's."""
    h1, other = _find(entries, "zb-h1"), _find(entries, "1f1b")
    shaped = [(label, r) for name, label in (("zb-h2", "ZB-H2"), ("zb-v", "ZB-V"))
              if (r := _find(entries, name)) is not None]
    if kind != COMPARISON or other is None or (h1 is None and not shaped):
        if kind == COMPARISON:
            return _untested(claim, _t("zero_bubble.wanted"), kind, entries)
        return bubble_follows_formula(claim, entries[:1], ZB_COLUMNS)
    parts = (([_zb_h1_part(h1, other)] if h1 is not None else [])
             + [_no_gap_part(label, r, other) for label, r in shaped])
    status = _status(all(p.ok for p in parts), all(p.near for p in parts))
    said = functools.reduce(lambda first, second: _t("then", first=first, second=second), (p.said for p in parts))
    failing = next((p for p in parts if not p.near), None)
    reason = _why(said, failing.metrics) if failing is not None else _t("end", sentence=said)
    columns = ZB_COLUMNS + ((SPAN_COLUMN,) if shaped else ())
    rows: dict[str, ClaimRow] = {}
    for part in parts:
        for row in part.rows:
            rows.setdefault(row.quantity, row)  # 1F1B's row once, beside ZB-H2 and ZB-V alike
    return Verdict(claim, tuple(rows.values()), status, reason, columns)


def simulator_predicts(claim: str, kind: str, entries: Entries) -> Verdict:
    """The playground: the simulator, fed the run's mean costs, predicts its bubble and step."""
    (label, r), = entries[:1]
    m = r.metrics
    rows = (ClaimRow(_t("row.bubble"), m.bubble_fraction, m.formula_bubble_fraction,
                     m.simulated_bubble_fraction),
            ClaimRow(_t("row.step"), m.device_step_time_s * 1e3, None, m.simulated_step_time_s * 1e3, "ms"))
    gap = abs(m.bubble_fraction - m.simulated_bubble_fraction)
    status = _status(gap <= BUBBLE_TOLERANCE, gap <= BUBBLE_TOLERANCE + BUBBLE_NOISE)
    said = _t("playground.said", gap=f"{gap:.3f}", allowed=BUBBLE_TOLERANCE)
    return Verdict(claim, rows, status, _said(said, status, m), BUBBLE_COLUMNS)


def _ratio_of(measure: Callable[[object], float]) -> Callable[[Sequence[object]], float]:
    return lambda results: measure(results[0]) / measure(results[1])


HEADLINES: dict[str, Callable[[Sequence[object]], float]] = {
    "naive": _ratio_of(lambda r: r.metrics.device_step_time_s),
    "gpipe": _ratio_of(lambda r: r.metrics.device_step_time_s),
    "1f1b": lambda results: results[0].metrics.bubble_fraction - results[1].metrics.bubble_fraction,
    "interleaved": _ratio_of(lambda r: r.metrics.bubble_fraction),
    "zero-bubble": _ratio_of(lambda r: idle_ms(r.metrics)),
}
"""Lesson slug -> the figure its comparison's rounds are ranked by (engine/runtime/paired.py: the page
shows the round of the median one), from one round's results in the comparison's order."""


def headline(slug: str) -> Callable[[Sequence[object]], float] | None:
    """The lesson's comparison headline (HEADLINES), or None (the first run's step time ranks)."""
    return HEADLINES.get(slug)


CHECKS: dict[str, Callable[[str, str, Entries], Verdict]] = {
    "naive": naive, "gpipe": gpipe, "pipedream": pipedream, "1f1b": one_f_one_b, "interleaved": interleaved,
    "zero-bubble": zero_bubble, "playground": simulator_predicts,
}
"""Lesson slug -> its check."""


def verdict(slug: str, claim: str, kind: str, entries: Entries, lang: str = "en") -> Verdict | None:
    """The lesson's verdict on what a page finished (kind: RUN, COMPARISON or SWEEP), its
    texts in ``lang``, or None when there is nothing to judge."""
    if not entries or slug not in CHECKS:
        return None
    token = _LANG.set(lang)
    try:
        judged = CHECKS[slug](claim, kind, list(entries))
        key = f"tests.{slug}.{kind}"
        if judged.status != UNTESTED and has(lang, f"claims.{key}"):
            judged = dataclasses.replace(judged, tests=_t(key))
        return judged
    finally:
        _LANG.reset(token)
