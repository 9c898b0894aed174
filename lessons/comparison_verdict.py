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
from pipelab.lessons.i18n import join_sentences, schedule_said, text
from pipelab.lessons.verdict import BUBBLE_TOLERANCE, FAILS, HOLDS, speaking
from pipelab.lessons.verdict import NOISE as WITHIN_NOISE
from pipelab.lessons.why import largest_effect

NOISE = 0.03
"""Two runs closer than this share of the larger figure are a tie: on a shared host the same
run repeated moves by about this much (pipelab.lessons.verdict.BUBBLE_NOISE is the same size on fractions)."""

@dataclass(frozen=True)
class ComparisonVerdict:
    winner: str | None
    """The schedule that won, or None for a tie within NOISE."""
    sentences: tuple[str, ...]
    lang: str = "en"
    status: str | None = None
    """HOLDS, the NOISE status or FAILS of pipelab.lessons.verdict: what the verdict's sentences
    state, judged (a ranking, an amount against the limit it names)."""

    notes: tuple[str, ...] = ()
    """What the status does not judge but the page must say, below the verdict: each gap past the
    tolerance against a theory the status is not held to, and what made it."""

    @property
    def text(self) -> str:
        return join_sentences(self.lang, self.sentences)

    @property
    def notes_text(self) -> str:
        return join_sentences(self.lang, self.notes)


def worst_idle_ms(metrics: RunMetrics) -> float:
    """The worst device's idle time per step on the device clock, in ms: the DualPipe README's
    bubble column, measured."""
    return max(metrics.device_bubble_fraction_per_device) * metrics.device_step_time_s * 1e3


def _label(name: str) -> str:
    return schedule_label(name)


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


def chooser_verdict(measured: Sequence[tuple[str, RunMetrics]], simulated_steps: Mapping[str, float],
                    lang: str = "en", pairs: PairedRatios | None = None) -> ComparisonVerdict:
    """The recap's "run the top two": whose step is shorter on the device clock, by how much,
    against the chooser's ranking (``simulated_steps``: schedule -> its unit-cost step time,
    the order the chooser gave), and why when the run reverses it. Its status judges that
    ranking: holds within noise when the two medians lie within NOISE of the longer step (the
    band, stated in the verdict), else HOLDS when the chooser's first runs the shorter step and
    FAILS when the other wins (a verdict with no status left the student guessing)."""
    (a, ma), (b, mb) = measured[0], measured[1]  # in the chooser's order: a was expected first
    step = {a: ma.device_step_time_s * 1e3, b: mb.device_step_time_s * 1e3}
    metrics = {a: ma, b: mb}
    first, second = sorted(step, key=step.get)
    say = lambda key, **values: text(lang, f"compare.{key}", **values)  # noqa: E731
    theory_ratio = simulated_steps[b] / simulated_steps[a]
    measured_ratio = step[b] / step[a]
    named = lambda name: schedule_said(lang, name)  # noqa: E731 (prose names a schedule by its label)
    ratios = dict(ratio_name=f"{named(b)} ÷ {named(a)}", theory_ratio=f"{theory_ratio:.2f}",
                  measured_ratio=f"{measured_ratio:.2f}")
    band = say("chooser.band", noise=f"{NOISE:.0%}")
    # The band is the gap of the medians, never "some pair of steps disagreed": with a dozen
    # pairs some nearly always do, and a reversal beyond the band was graded within noise.
    if _tie(step[first], step[second]):
        over_pairs = pairs is not None and _pairs_disagree(first, second, pairs)
        sentences = [_tie_sentence(say, first, second, step, over_pairs, named, prefix="dp."),
                     say("chooser.theory", expected=named(a), **ratios), band]
        return ComparisonVerdict(None, tuple(sentences), lang, WITHIN_NOISE, _bubble_gaps(metrics, lang))
    gap = step[second] - step[first]
    sentences = [say("chooser.winner", winner=named(first), step=_ms(step[first]), gap=_ms(gap),
                     share=f"{gap / step[second]:.0%}", second=named(second), second_step=_ms(step[second]))]
    if first == a:
        sentences += [say("chooser.theory_agrees", **ratios), band]
    else:
        sentences += [say("chooser.theory_differs", expected=named(a), **ratios), band]
        why = _why(metrics[a], lang, named(a))
        if why:
            sentences.append(why)
    explained = () if first == a else (a,)
    return ComparisonVerdict(first, tuple(sentences), lang, HOLDS if first == a else FAILS,
                             _bubble_gaps(metrics, lang, explained))


def _bubble_gaps(metrics: Mapping[str, RunMetrics], lang: str, explained: Sequence[str] = ()) -> tuple[str, ...]:
    """Why each run's measured bubble sits past BUBBLE_TOLERANCE from its formula's (issue 47: a
    measured 0.174 stood beside a formula's 0.075 unexplained); ``explained``: runs the verdict
    already gave a why."""
    return tuple(why for name, m in metrics.items()
                 if name not in explained and m.formula_bubble_fraction is not None
                 and abs(m.device_bubble_fraction - m.formula_bubble_fraction) > BUBBLE_TOLERANCE
                 and (why := _why(m, lang, schedule_said(lang, name))))


def _pairs_disagree(first: str, second: str, pairs: PairedRatios) -> bool:
    _, low, high = pairs(first, second)
    return low < 1.0 <= high


__all__ = ["ComparisonVerdict", "NOISE", "PairedRatios", "chooser_verdict", "worst_idle_ms"]
