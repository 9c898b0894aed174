"""Lesson 6's "Run all four" verdict: 1F1B, ZB-H1, ZB-V and DualPipeV on the DualPipe README's
bubble column, who idles least, and whether theory says so and by how much.

Plain data, no Streamlit (app/views/extras/dualpipe_table.py shows it). Theory here is two
things, and the verdict keeps them apart so no figure is read against the wrong one:

- the table's theory: the README's closed form and the simulator, every schedule at 1F1B's
  measured mean stage costs, equal stages, free messages, nothing between two actions (the
  papers' setting; engine/theory/dualpipe_table.py);
- theory at each run's own costs: the simulator fed what that run measured, each stage's
  costs, the link and the engine's time between actions (RunMetrics.simulated_*), what the
  lessons' claims are judged by (pipelab.lessons.judging.at_own_costs).

The status judges what the sentences state: theory's ranking at the runs' own costs, and
its favourite's idle time within GAP_TOLERANCE of its step from that theory, GAP_NOISE more
allowed as noise. Each gap past the tolerance, against either theory, is named with the bubble
breakdown's largest effect (engine/theory/breakdown.py, pipelab.lessons.why.largest). Texts
live under ``compare.dp.*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from pipelab.engine.results.metrics import RunMetrics
from pipelab.lessons.comparison_verdict import (
    NOISE,
    ComparisonVerdict,
    PairedRatios,
    _label,
    _tie,
    _tied,
    worst_idle_ms,
)
from pipelab.lessons.i18n import join_sentences, text
from pipelab.lessons.verdict import BUBBLE_NOISE, BUBBLE_TOLERANCE, FAILS, HOLDS, speaking
from pipelab.lessons.verdict import NOISE as WITHIN_NOISE
from pipelab.lessons.why import largest

GAP_TOLERANCE = BUBBLE_TOLERANCE
"""How far a schedule's measured idle time may sit from theory, as a share of its step, before
the verdict names the gap and what made it: the lessons' tolerance on a bubble fraction."""

GAP_NOISE = BUBBLE_NOISE
"""Past GAP_TOLERANCE, this much more of a step still holds within noise: what a busy shared
host moves a device-clock bubble between two identical runs (pipelab.lessons.verdict.BUBBLE_NOISE)."""

IDLE_DIGITS = 2
"""Decimals of an idle time in ms, in the verdict and in the section's bubble table alike."""

SHARE_DIGITS = 3
"""Decimals of a share of a step (a bubble fraction)."""


class TableIdle(NamedTuple):
    """One schedule's idle ms per step in the section's table, at 1F1B's measured stage costs."""
    formula: float
    """The README's closed form (DualPipeV's an upper bound on this engine)."""
    simulated: float
    """The simulator, worst device."""


def idle_text(ms: float) -> str:
    """An idle time as the verdict prints it and the table rounds it (IDLE_DIGITS)."""
    return f"{ms:.{IDLE_DIGITS}f}"


def gap_text(a: float, b: float) -> str:
    """``a`` - ``b`` as the difference of the two figures the table shows, so the page's own
    subtraction gives it (15.66 - 14.27 reads 1.39, not the unrounded 1.40)."""
    return idle_text(round(a, IDLE_DIGITS) - round(b, IDLE_DIGITS))


def own_theory_ms(metrics: RunMetrics) -> float:
    """Theory at this run's own costs: the worst device's idle ms per step in the run's simulated
    timeline (the simulator fed its measured stage costs, link and engine time)."""
    return max(metrics.simulated_bubble_fraction_per_device) * metrics.simulated_step_time_s * 1e3


def _step_ms(metrics: RunMetrics) -> float:
    return metrics.device_step_time_s * 1e3


def _share(gap_ms: float, metrics: RunMetrics) -> float:
    step = _step_ms(metrics)
    return abs(gap_ms) / step if step > 0 else 0.0


def _status_of(share: float) -> str:
    """A share of the step off theory: within the tolerance, within the noise band past it, or not."""
    share = round(share, SHARE_DIGITS)  # judged as printed
    if share <= GAP_TOLERANCE:
        return HOLDS
    return WITHIN_NOISE if share <= round(GAP_TOLERANCE + GAP_NOISE, SHARE_DIGITS) else FAILS


def _worst(*statuses: str) -> str:
    order = (HOLDS, WITHIN_NOISE, FAILS)
    return max(statuses, key=order.index)


def four_way_verdict(measured: Mapping[str, RunMetrics], table: Mapping[str, TableIdle], lang: str = "en",
                     pairs: PairedRatios | None = None) -> ComparisonVerdict:
    """Who idles least per step (worst device, device clock) and by how much; theory's ranking
    at the runs' own costs (HOLDS, holds within noise where the first two tie, FAILS where
    another idles clearly less); theory's first's amount against the same theory; every gap
    past GAP_TOLERANCE named; DualPipeV against ZB-H1 and where the README's formula for it
    is only a bound. ``table``: schedule -> its TableIdle."""
    def say(key: str, **values) -> str:
        return text(lang, key if key.startswith("results.") else f"compare.{key}", **values)

    with speaking(lang):
        return _verdict(measured, table, lang, pairs, say)


def _verdict(measured, table, lang, pairs, say) -> ComparisonVerdict:
    idle = {name: worst_idle_ms(m) for name, m in measured.items()}
    own = {name: own_theory_ms(m) for name, m in measured.items()}
    order = sorted(idle, key=idle.get)
    first, second = order[0], order[1]
    sentences = []
    tie, over_pairs = _tied(first, second, idle, pairs)
    if tie:
        winner = None
        sentences.append(say("dp.tie_pairs" if over_pairs else "dp.tie", a=_label(first), b=_label(second),
                             a_value=idle_text(idle[first]), b_value=idle_text(idle[second]), unit="ms",
                             noise=f"{NOISE:.0%}"))
        if over_pairs:  # the band this tie was judged by: the launch's own pairs, not a share of a median
            sentences[-1] = join_sentences(lang, [sentences[-1], say("dp.band_pairs")])
    else:
        winner = first
        gap = idle[second] - idle[first]
        sentences.append(say("dp.winner", winner=_label(first), idle=idle_text(idle[first]),
                             gap=gap_text(idle[second], idle[first]),
                             share=f"{gap / idle[second]:.0%}", second=_label(second),
                             second_idle=idle_text(idle[second])))
    ranking, favourite, said = _ranking(idle, own, first, second, winner, say)
    sentences += said
    amount, said = _amount(measured[favourite], favourite, idle[favourite], own[favourite], say)
    sentences += said
    # The status judges the sentences above; below it, what it does not judge, each gap named.
    notes = _own_gaps(measured, idle, own, exclude=favourite, say=say) + _table_gaps(measured, idle, table, say)
    if "dualpipev" in idle and "zb-h1" in idle:
        notes += _dualpipev(measured, idle, own, table, say)
    return ComparisonVerdict(winner, tuple(s for s in sentences if s), lang, _worst(ranking, amount),
                             tuple(s for s in notes if s))


def _ranking(idle, own, first, second, winner, say) -> tuple[str, str, list[str]]:
    """(status, theory's favourite, sentences): theory's ranking at the runs' own costs, its
    schedules within NOISE of its least idle counted as tied first."""
    best = min(own.values())
    expected = [name for name in sorted(own, key=own.get) if _tie(own[name], best)]
    names = text_list(say, expected)
    if first in expected:
        if len(expected) > 1:
            status = HOLDS if winner is not None or second in expected else WITHIN_NOISE
            key = "dp.theory_tie" if status == HOLDS else "dp.theory_tie_noise"
            return status, first, [say(key, names=names, theory=idle_text(own[first]), winner=_label(first),
                                       second=_label(second))]
        if winner is not None:
            return HOLDS, first, [say("dp.theory_agrees", winner=_label(first), theory=idle_text(own[first]))]
        return WITHIN_NOISE, first, [say("dp.theory_first_tie", winner=_label(first), theory=idle_text(own[first]),
                                         second=_label(second))]
    if winner is None and second in expected:
        return WITHIN_NOISE, second, [say("dp.theory_agrees_tie", expected=_label(second),
                                          theory=idle_text(own[second]))]
    favourite = expected[0]
    return FAILS, favourite, [say("dp.theory_differs", expected=_label(favourite),
                                  expected_theory=idle_text(own[favourite]), winner=_label(first),
                                  winner_theory=idle_text(own[first]), expected_idle=idle_text(idle[favourite]))]


def text_list(say, names) -> str:
    return say("results.list_sep").join(_label(name) for name in names)


def _amount(metrics, name, idle, theory, say) -> tuple[str, list[str]]:
    """Theory's favourite: its idle time against theory at its run's own costs, judged as a
    share of its step by GAP_TOLERANCE and GAP_NOISE; past the tolerance, what made the gap."""
    gap = idle - theory
    share = _share(gap, metrics)
    status = _status_of(share)
    values = dict(name=_label(name), idle=idle_text(idle), theory=idle_text(theory),
                  gap=gap_text(max(idle, theory), min(idle, theory)),
                  share=f"{share:.{SHARE_DIGITS}f}", tolerance=f"{GAP_TOLERANCE:.2f}", band=f"{GAP_NOISE:.2f}")
    if status == HOLDS:
        return status, [say("dp.gap_within", **values)]
    key = ("dp.gap_near_" if status == WITHIN_NOISE else "dp.gap_") + ("more" if gap > 0 else "less")
    return status, [say(key, **values), _why(say, metrics, name, beyond_simulated=True)]


def _why(say, metrics, name, beyond_simulated: bool) -> str:
    found = largest(metrics, beyond_simulated=beyond_simulated)
    if found is None:
        return ""
    effect, change = found
    key = "dp.why_beyond" if beyond_simulated else "dp.why_table"
    return say(key, name=_label(name), effect=effect, change=f"{change:.{SHARE_DIGITS}f}")


def _own_gaps(measured, idle, own, exclude, say) -> list[str]:
    """The other schedules past GAP_TOLERANCE from theory at their own costs, one sentence each
    with the breakdown's largest effect beyond that theory (the favourite's is judged apart)."""
    sentences = []
    for name in idle:
        share = _share(idle[name] - own[name], measured[name])
        if name == exclude or round(share, SHARE_DIGITS) <= GAP_TOLERANCE:
            continue
        sentences.append(say("dp.own_gap", name=_label(name), idle=idle_text(idle[name]),
                             theory=idle_text(own[name]), share=f"{share:.{SHARE_DIGITS}f}",
                             tolerance=f"{GAP_TOLERANCE:.2f}"))
        sentences.append(_why(say, measured[name], name, beyond_simulated=True))
    return sentences


def _table_gaps(measured, idle, table, say) -> list[str]:
    """Against the table's simulator at 1F1B's costs: which runs idle more (or less) than it by
    over GAP_TOLERANCE of their step, and in one sentence the breakdown's largest effect in each
    (what the table's setting leaves out: unequal stages, messages, the engine's own time)."""
    far = [(name, _share(idle[name] - table[name].simulated, measured[name])) for name in idle if name in table]
    far = [(name, share) for name, share in far if round(share, SHARE_DIGITS) > GAP_TOLERANCE]
    if not far:
        return [say("dp.table_within", tolerance=f"{GAP_TOLERANCE:.2f}")]
    items = say("results.list_sep").join(
        say("dp.table_gap_item", name=_label(name), idle=idle_text(idle[name]),
            theory=idle_text(table[name].simulated), share=f"{share:.{SHARE_DIGITS}f}") for name, share in far)
    sentences = [say("dp.table_gaps", items=items, tolerance=f"{GAP_TOLERANCE:.2f}")]
    return sentences + [effects_sentence(say, [(name, measured[name]) for name, _ in far])]


def effects_sentence(say, runs, label=_label, beyond_simulated: bool = False) -> str:
    """One sentence: the bubble breakdown's largest effect in each of ``runs`` ((schedule, its
    RunMetrics)), the schedules grouped by effect; "" where no run has a breakdown.
    ``beyond_simulated``: only the effects past theory at the run's own costs."""
    effects: dict[str, list[str]] = {}
    for name, metrics in runs:
        found = largest(metrics, beyond_simulated=beyond_simulated)
        if found is not None:
            effect, change = found
            effects.setdefault(effect, []).append(say("dp.effect_item", name=label(name),
                                                      change=f"{change:.{SHARE_DIGITS}f}"))
    if not effects:
        return ""
    return say("dp.table_effects", items=say("dp.group_sep").join(
        say("dp.effect_group", effect=effect, names=say("results.list_sep").join(names))
        for effect, names in effects.items()))


def _dualpipev(measured, idle, own, table, say) -> list[str]:
    """DualPipeV against ZB-H1, measured and at the runs' own costs; where the README's closed
    form sits past GAP_TOLERANCE above the simulator at the table's costs, the reason: it counts
    an overlapped F&B pair that this engine runs back to back, so here it is only a bound."""
    dv, zb = idle["dualpipev"], idle["zb-h1"]
    relation = "same" if _tie(dv, zb) else "more" if dv > zb else "less"
    sentences = [say(f"dp.dualpipev_{relation}", dv=idle_text(dv), zb=idle_text(zb),
                     dv_theory=idle_text(own["dualpipev"]), zb_theory=idle_text(own["zb-h1"]))]
    row = table.get("dualpipev")
    if row is not None and _share(row.formula - row.simulated, measured["dualpipev"]) > GAP_TOLERANCE:
        sentences.append(say("dp.dualpipev_bound", formula=idle_text(row.formula),
                             simulated=idle_text(row.simulated), times=f"{row.formula / row.simulated:.1f}"))
    return sentences


__all__ = ["GAP_NOISE", "GAP_TOLERANCE", "IDLE_DIGITS", "TableIdle", "effects_sentence", "four_way_verdict",
           "gap_text", "idle_text", "own_theory_ms"]
