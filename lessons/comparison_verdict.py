"""The verdict a page's side-by-side runs end with: who wins, by how much, against theory,
and why when the two disagree.

Plain data, no Streamlit: lesson 6's "Run all four" (1F1B, ZB-H1, ZB-V, DualPipeV on the
DualPipe README's bubble column) and the recap's chooser ("run the top two") call these on
their finished runs' metrics. The why is the bubble breakdown's largest measured effect
(engine/theory/breakdown.py, as pipelab.lessons.why.largest_effect says it). Texts live in the catalogs
under ``compare.*``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.schedules.registry import schedule_label
from pipelab.lessons.i18n import has, join_sentences, text
from pipelab.lessons.verdict import BUBBLE_TOLERANCE, FAILS, HOLDS, speaking
from pipelab.lessons.verdict import NOISE as WITHIN_NOISE
from pipelab.lessons.why import largest_effect

NOISE = 0.03
"""Two runs closer than this share of the larger figure are a tie: on a shared host the same
run repeated moves by about this much (pipelab.lessons.verdict.BUBBLE_NOISE is the same size on fractions)."""

GAP_TOLERANCE = BUBBLE_TOLERANCE
"""How far a schedule's measured idle time may sit from theory's at the runs' own costs, as a
share of its step, before the verdict names the gap and what made it: the lessons' tolerance
on a bubble fraction (pipelab.lessons.verdict.BUBBLE_TOLERANCE)."""


@dataclass(frozen=True)
class ComparisonVerdict:
    winner: str | None
    """The schedule that won, or None for a tie within NOISE."""
    sentences: tuple[str, ...]
    lang: str = "en"
    status: str | None = None
    """Where the verdict judges a claim (four_way_verdict: theory's ranking), HOLDS, the NOISE
    status or FAILS of pipelab.lessons.verdict; None where it only reports who won."""

    @property
    def text(self) -> str:
        return join_sentences(self.lang, self.sentences)


def worst_idle_ms(metrics: RunMetrics) -> float:
    """The worst device's idle time per step on the device clock, in ms: the DualPipe README's
    bubble column, measured."""
    return max(metrics.device_bubble_fraction_per_device) * metrics.device_step_time_s * 1e3


def _label(name: str) -> str:
    return schedule_label(name)


def _label_in(lang: str, name: str) -> str:
    """``name`` as the page's own words call it where the catalog has a word ("朴素方式" for naive:
    "Naive" read as English in the Chinese list), else its registered label."""
    key = f"claims.label.{name}"
    return text(lang, key) if has(lang, key) else _label(name)


def _ms(x: float) -> str:
    return f"{x:.1f}"


def _why(metrics: RunMetrics, lang: str, name: str) -> str:
    """The breakdown's largest measured effect in ``name``'s run, in ``lang``."""
    with speaking(lang):
        return largest_effect(metrics, _label(name))


def _tie(a: float, b: float) -> bool:
    return abs(a - b) <= NOISE * max(abs(a), abs(b), 1e-12)


PairedRatios = Callable[[str, str], tuple[float, float, float]]
"""(a, b) -> (median, lowest, highest) of a's figure over b's across the pairs of steps of runs
that took turns in one launch (pipelab.engine.runtime.paired.paired_ratio)."""


def _tied(first: str, second: str, values: Mapping[str, float], pairs: PairedRatios | None) -> tuple[bool, bool]:
    """(tie, measured over pairs): where the runs took turns step by step, a tie is a gap that
    some pair of steps reversed (the noise measured in this very launch); else one within NOISE."""
    if pairs is not None:
        _, low, high = pairs(first, second)
        if low != high:
            return high >= 1.0, True
    return _tie(values[first], values[second]), False


def _tie_sentence(say, first: str, second: str, values: Mapping[str, float], over_pairs: bool, label,
                  prefix: str = "") -> str:
    """The tie, said as its own verdict ("compare.tie…") or, with ``prefix`` "dp.", as the
    reason after a status line ("Verdict: holds within noise.")."""
    key = prefix + ("tie_pairs" if over_pairs else "tie")
    return say(key, a=label(first), b=label(second), a_value=_ms(values[first]), b_value=_ms(values[second]),
               unit="ms", noise=f"{NOISE:.0%}")


def four_way_verdict(measured: Mapping[str, RunMetrics], theory_ms: Mapping[str, float],
                     lang: str = "en", pairs: PairedRatios | None = None) -> ComparisonVerdict:
    """Lesson 6's "Run all four": who idles least per step (worst device, device clock), by
    how much, against the formulas at the runs' own costs (``theory_ms``: schedule -> the
    closed form's idle ms, pipelab.engine.theory.dualpipe_table), why when they disagree, and DualPipeV's
    bubble against ZB-H1's with the reason the README's formula does not hold here.

    Its status judges theory's ranking: HOLDS when the schedule theory puts first idles least,
    holds within noise when it ties the least idle (a gap some pair of steps reversed, or under
    NOISE between runs made apart), FAILS when another idles clearly less. The amount is
    not the ranking: where theory's first idles more (or less) than theory says by over
    GAP_TOLERANCE of its step, a sentence names the gap and the breakdown's largest effect."""
    idle = {name: worst_idle_ms(m) for name, m in measured.items()}
    order = sorted(idle, key=idle.get)
    first, second = order[0], order[1]
    say = lambda key, **values: text(lang, f"compare.{key}", **values)  # noqa: E731
    sentences = []
    tie, over_pairs = _tied(first, second, idle, pairs)
    if tie:
        winner = None
        key = "dp.tie_pairs" if over_pairs else "dp.tie"
        sentences.append(say(key, a=_label(first), b=_label(second), a_value=_ms(idle[first]),
                             b_value=_ms(idle[second]), unit="ms", noise=f"{NOISE:.0%}"))
    else:
        winner = first
        gap = idle[second] - idle[first]
        sentences.append(say("dp.winner", winner=_label(first), idle=_ms(idle[first]), gap=_ms(gap),
                             share=f"{gap / idle[second]:.0%}", second=_label(second),
                             second_idle=_ms(idle[second])))
    best_theory = min(theory_ms[name] for name in idle)
    expected = [name for name in order if abs(theory_ms[name] - best_theory) <= 1e-9 * max(1.0, best_theory)]
    explained = set()
    if first in expected:
        # Theory's first idles least: outright, or with the runner-up (theory's too, or not) within the noise.
        favourite = first
        if len(expected) > 1:
            status = HOLDS if winner is not None or second in expected else WITHIN_NOISE
            sentences.append(say("dp.theory_tie" if status == HOLDS else "dp.theory_tie_noise",
                                 names=text(lang, "results.list_sep").join(map(_label, expected)),
                                 theory=_ms(best_theory), winner=_label(first), second=_label(second)))
        elif winner is not None:
            status = HOLDS
            sentences.append(say("dp.theory_agrees", winner=_label(first), theory=_ms(theory_ms[first])))
        else:
            status = WITHIN_NOISE
            sentences.append(say("dp.theory_first_tie", winner=_label(first), theory=_ms(theory_ms[first]),
                                 second=_label(second)))
    elif winner is None and second in expected:
        # Theory's favourite ties the measured first within noise.
        favourite, status = second, WITHIN_NOISE
        sentences.append(say("dp.theory_agrees_tie", expected=_label(second), theory=_ms(theory_ms[second])))
    else:
        favourite, status = expected[0], FAILS
        sentences.append(say("dp.theory_differs", expected=_label(favourite), expected_theory=_ms(theory_ms[favourite]),
                             winner=_label(first), winner_theory=_ms(theory_ms[first]),
                             expected_idle=_ms(idle[favourite])))
        why = _why(measured[favourite], lang, favourite)
        if why:
            sentences.append(why)
            explained.add(favourite)
    sentences += _gap_sentences(say, measured[favourite], favourite, idle[favourite], theory_ms[favourite], lang,
                                explained)
    if "dualpipev" in idle and "zb-h1" in idle:
        dv, zb = idle["dualpipev"], idle["zb-h1"]
        relation = "same" if _tie(dv, zb) else "more" if dv > zb else "less"
        sentences.append(say(f"dp.dualpipev_{relation}", dv=_ms(dv), zb=_ms(zb),
                             dv_theory=_ms(theory_ms["dualpipev"]), zb_theory=_ms(theory_ms["zb-h1"])))
        if relation == "more" and "dualpipev" not in explained:
            why = _why(measured["dualpipev"], lang, "dualpipev")
            if why:
                sentences.append(why)
    return ComparisonVerdict(winner, tuple(sentences), lang, status)


def _gap_sentences(say, metrics: RunMetrics, name: str, idle: float, theory: float, lang: str,
                   explained: set) -> list[str]:
    """Theory's first schedule: its measured idle time against theory's at the runs' own costs.
    Within GAP_TOLERANCE of its step, one short sentence; past it, the gap (ms and share of the
    step) and the bubble breakdown's largest measured effect, unless a sentence gave it already."""
    step = metrics.device_step_time_s * 1e3
    gap = idle - theory
    share = abs(gap) / step if step > 0 else 0.0
    values = dict(name=_label(name), idle=_ms(idle), theory=_ms(theory), gap=_ms(abs(gap)), share=f"{share:.3f}",
                  tolerance=f"{GAP_TOLERANCE:.2f}")
    if share <= GAP_TOLERANCE:
        return [say("dp.gap_within", **values)]
    sentences = [say("dp.gap_more" if gap > 0 else "dp.gap_less", **values)]
    if name not in explained:
        why = _why(metrics, lang, name)
        if why:
            sentences.append(why)
            explained.add(name)
    return sentences


def chooser_verdict(measured: Sequence[tuple[str, RunMetrics]], simulated_steps: Mapping[str, float],
                    lang: str = "en", pairs: PairedRatios | None = None) -> ComparisonVerdict:
    """The recap's "run the top two": whose step is shorter on the device clock, by how much,
    against the chooser's ranking (``simulated_steps``: schedule -> its unit-cost step time,
    the order the chooser gave), and why when the run reverses it. Its status judges that
    ranking: HOLDS when the chooser's first runs the shorter step, holds within noise when the
    two tie, FAILS when the other wins (a verdict with no status left the student guessing)."""
    (a, ma), (b, mb) = measured[0], measured[1]  # in the chooser's order: a was expected first
    step = {a: ma.device_step_time_s * 1e3, b: mb.device_step_time_s * 1e3}
    metrics = {a: ma, b: mb}
    first, second = sorted(step, key=step.get)
    say = lambda key, **values: text(lang, f"compare.{key}", **values)  # noqa: E731
    theory_ratio = simulated_steps[b] / simulated_steps[a]
    measured_ratio = step[b] / step[a]
    ratios = dict(ratio_name=f"{b} ÷ {a}", theory_ratio=f"{theory_ratio:.2f}", measured_ratio=f"{measured_ratio:.2f}")
    tie, over_pairs = _tied(first, second, step, pairs)
    if tie:
        sentences = [_tie_sentence(say, first, second, step, over_pairs, str, prefix="dp."),
                     say("chooser.theory", expected=a, **ratios)]
        return ComparisonVerdict(None, tuple(sentences), lang, WITHIN_NOISE)
    gap = step[second] - step[first]
    sentences = [say("chooser.winner", winner=first, step=_ms(step[first]), gap=_ms(gap),
                     share=f"{gap / step[second]:.0%}", second=second, second_step=_ms(step[second]))]
    if first == a:
        sentences.append(say("chooser.theory_agrees", **ratios))
    else:
        sentences.append(say("chooser.theory_differs", expected=a, **ratios))
        why = _why(metrics[a], lang, a)
        if why:
            sentences.append(why)
    return ComparisonVerdict(first, tuple(sentences), lang, HOLDS if first == a else FAILS)


def tradeoff_verdict(measured: Sequence, theory: Sequence, lang: str = "en") -> ComparisonVerdict:
    """Lesson 6's "Run them all": the measured schedules no other beats on both held activations and
    bubble (pipelab.engine.theory.memory_tradeoff.frontier), from least memory to least bubble,
    and whether theory's curve names the same ones. ``measured`` and ``theory``: TradeoffPoints."""
    from pipelab.engine.theory.memory_tradeoff import frontier
    say = lambda key, **values: text(lang, f"compare.{key}", **values)  # noqa: E731
    best = frontier(tuple(measured))
    items = text(lang, "results.list_sep").join(
        say("tradeoff.item", name=_label_in(lang, pt.schedule), held=f"{pt.peak_activations:g}",
            bubble=f"{pt.bubble_fraction:.3f}") for pt in best)
    ran = {pt.schedule for pt in measured}
    expected = [pt.schedule for pt in frontier(tuple(pt for pt in theory if pt.schedule in ran))]
    got = [pt.schedule for pt in best]
    sentences = [say("tradeoff.frontier", items=items)]
    if got == expected:
        sentences.append(say("tradeoff.agrees"))
    else:
        sentences.append(say("tradeoff.differs", names=text(lang, "results.list_sep").join(
            _label_in(lang, name) for name in expected)))
    return ComparisonVerdict(None, tuple(sentences), lang)


__all__ = ["ComparisonVerdict", "NOISE", "chooser_verdict", "four_way_verdict", "tradeoff_verdict", "worst_idle_ms"]
