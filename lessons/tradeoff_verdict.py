"""Lesson 6's "Run them all" verdict: every synchronous schedule on the memory / bubble plane,
the measured schedules no other beats on both axes, and whether theory names the same ones.

Plain data, no Streamlit (app/views/extras/memory_tradeoff.py shows it). Its status judges the
measured frontier against theory at each run's own costs (the simulator fed what that run
measured: its held count is the order's, its bubble RunMetrics.simulated_bubble_fraction):
HOLDS where the two frontiers name the same schedules, holds within noise where no schedule is
on one by more than BUBBLE_NOISE and off the other by more than it (contradicted), FAILS
otherwise. The chart's circles are theory on unit costs (pipelab.engine.theory.memory_tradeoff);
each diamond further than BUBBLE_TOLERANCE from its circle is named, with the bubble
breakdown's largest effect in its run (engine/theory/breakdown.py). The controllable-memory
sequel to Zero Bubble (arXiv 2405.15362) draws the same plane. Texts live under ``compare.tradeoff.*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.theory.memory_tradeoff import TradeoffPoint, frontier
from pipelab.lessons.comparison_verdict import ComparisonVerdict, _label
from pipelab.lessons.four_way_verdict import effects_sentence
from pipelab.lessons.i18n import has, text
from pipelab.lessons.verdict import BUBBLE_NOISE, BUBBLE_TOLERANCE, FAILS, HOLDS, speaking
from pipelab.lessons.verdict import NOISE as WITHIN_NOISE

BUBBLE_DIGITS = 3
"""Decimals of a bubble fraction, in the verdict and the chart's hover alike."""


def label_in(lang: str, name: str) -> str:
    """``name`` as the page's own words call it where the catalog has a word ("朴素方式" for naive:
    "Naive" read as English in the Chinese list), else its registered label; a name that opens an
    item of a list, so capitalised as the registered labels are ("Naive", not "naive": walk finding 20)."""
    key = f"claims.label.{name}"
    said = text(lang, key) if has(lang, key) else _label(name)
    return said[:1].upper() + said[1:]


def clearly_on(a: TradeoffPoint, points: Sequence[TradeoffPoint], band: float) -> bool:
    """On the frontier by more than ``band``: no other point holding no more comes within ``band``
    of its bubble."""
    return not any(b is not a and b.peak_activations <= a.peak_activations
                   and b.bubble_fraction <= a.bubble_fraction + band for b in points)


def clearly_off(a: TradeoffPoint, points: Sequence[TradeoffPoint], band: float) -> bool:
    """Off the frontier by more than ``band``: another point holding no more idles less by over ``band``."""
    return any(b is not a and b.peak_activations <= a.peak_activations
               and b.bubble_fraction < a.bubble_fraction - band for b in points)


def contradicted(measured: Sequence[TradeoffPoint], theory: Sequence[TradeoffPoint], band: float) -> tuple[str, ...]:
    """The schedules clearly on one frontier and clearly off the other (``band`` allowed as noise
    either way): where the two name different schedules for more than the noise."""
    at = {pt.schedule: pt for pt in theory}
    return tuple(a.schedule for a in measured if a.schedule in at
                 and ((clearly_on(a, measured, band) and clearly_off(at[a.schedule], theory, band))
                      or (clearly_off(a, measured, band) and clearly_on(at[a.schedule], theory, band))))


def own_cost_points(measured: Sequence[TradeoffPoint], metrics: Mapping[str, RunMetrics]) -> tuple[TradeoffPoint, ...]:
    """Theory at each run's own costs: its measured held count (the order it ran, which the
    simulator plays too) and the simulator's bubble fed that run's measured costs."""
    return tuple(TradeoffPoint(pt.schedule, pt.chunks, pt.peak_activations,
                               metrics[pt.schedule].simulated_bubble_fraction)
                 for pt in measured if pt.schedule in metrics)


def tradeoff_verdict(measured: Sequence[TradeoffPoint], theory: Sequence[TradeoffPoint],
                     metrics: Mapping[str, RunMetrics], lang: str = "en") -> ComparisonVerdict:
    """The measured frontier, from least memory to least bubble; theory's at each run's own
    costs against it (the status); the chart's dashed curve on unit costs; and every diamond
    past BUBBLE_TOLERANCE from its circle, with what made the gap. ``measured`` and ``theory``:
    TradeoffPoints; ``metrics``: schedule -> its run's RunMetrics."""
    def say(key: str, **values) -> str:
        return text(lang, key if key.startswith("results.") else f"compare.{key}", **values)

    def names(schedules) -> str:
        return say("results.list_sep").join(label_in(lang, name) for name in schedules)

    with speaking(lang):
        best = frontier(tuple(measured))
        items = say("results.list_sep").join(
            say("tradeoff.item", name=label_in(lang, pt.schedule), held=f"{pt.peak_activations:g}",
                bubble=f"{pt.bubble_fraction:.{BUBBLE_DIGITS}f}") for pt in best)
        sentences = [say("tradeoff.frontier", items=items)]
        got = [pt.schedule for pt in best]
        own = own_cost_points(measured, metrics)
        own_best = [pt.schedule for pt in frontier(own)]
        if got == own_best:
            status = HOLDS
            sentences.append(say("tradeoff.own_agrees"))
        elif not contradicted(measured, own, BUBBLE_NOISE):
            status = WITHIN_NOISE
            sentences.append(say("tradeoff.own_noise", names=names(own_best), band=f"{BUBBLE_NOISE:.2f}"))
        else:
            status = FAILS
            sentences.append(say("tradeoff.own_differs", names=names(own_best)))
            sentences += _own_gaps(say, measured, own, metrics, lang)
        # The status judges the sentences above; below it, the chart's circles, each gap named.
        ran = {pt.schedule for pt in measured}
        drawn = [pt.schedule for pt in frontier(tuple(pt for pt in theory if pt.schedule in ran))]
        notes = [say("tradeoff.agrees") if drawn == got else say("tradeoff.differs", names=names(drawn))]
        notes += _circle_gaps(say, measured, theory, metrics, lang)
    return ComparisonVerdict(None, tuple(s for s in sentences if s), lang, status, tuple(s for s in notes if s))


def _own_gaps(say, measured, own, metrics, lang) -> list[str]:
    """Where the frontiers differ: each run whose bubble sits past BUBBLE_TOLERANCE from theory at
    its own costs, and the breakdown's largest effect beyond that theory in each."""
    at = {pt.schedule: pt.bubble_fraction for pt in own}
    far = [pt for pt in measured if pt.schedule in at
           and round(abs(pt.bubble_fraction - at[pt.schedule]), BUBBLE_DIGITS) > BUBBLE_TOLERANCE]
    if not far:
        return []
    items = say("results.list_sep").join(
        say("tradeoff.gap_item", name=label_in(lang, pt.schedule), measured=f"{pt.bubble_fraction:.{BUBBLE_DIGITS}f}",
            theory=f"{at[pt.schedule]:.{BUBBLE_DIGITS}f}") for pt in far)
    runs = [(pt.schedule, metrics[pt.schedule]) for pt in far]
    return [say("tradeoff.own_gaps", items=items, tolerance=f"{BUBBLE_TOLERANCE:.2f}"),
            effects_sentence(say, runs, label=lambda name: label_in(lang, name), beyond_simulated=True)]


def _circle_gaps(say, measured, theory, metrics, lang) -> list[str]:
    """Each diamond whose bubble sits past BUBBLE_TOLERANCE from its circle (unit costs), in one
    sentence, and in one more the bubble breakdown's largest effect in each of those runs."""
    drawn = {pt.schedule: pt.bubble_fraction for pt in theory}
    far = [pt for pt in measured if pt.schedule in drawn
           and round(abs(pt.bubble_fraction - drawn[pt.schedule]), BUBBLE_DIGITS) > BUBBLE_TOLERANCE]
    if not far:
        return [say("tradeoff.circles_within", tolerance=f"{BUBBLE_TOLERANCE:.2f}")]
    items = say("results.list_sep").join(
        say("tradeoff.gap_item", name=label_in(lang, pt.schedule), measured=f"{pt.bubble_fraction:.{BUBBLE_DIGITS}f}",
            theory=f"{drawn[pt.schedule]:.{BUBBLE_DIGITS}f}") for pt in far)
    runs = [(pt.schedule, metrics[pt.schedule]) for pt in far if pt.schedule in metrics]
    return [say("tradeoff.circle_gaps", items=items, tolerance=f"{BUBBLE_TOLERANCE:.2f}"),
            effects_sentence(say, runs, label=lambda name: label_in(lang, name))]


__all__ = ["BUBBLE_DIGITS", "clearly_off", "clearly_on", "contradicted", "label_in", "own_cost_points",
           "tradeoff_verdict"]
