"""Why a bubble is not the formula's: the bubble breakdown's largest measured effect, in words.

When a claim does not hold, the verdict's reason names the breakdown's largest measured effect
(pipelab.engine.theory.breakdown.breakdown_table): the one thing this run had that the
formula leaves out and that cost the most.
"""

from __future__ import annotations

from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.theory.breakdown import PER_STEP_LABEL, breakdown_table
from pipelab.lessons.verdict import FAILS, say, say_own

EFFECTS = {
    "simulator: every stage at the run's mean costs": "approximation",
    "+ each stage's own costs": "stage_costs",
    "+ message latency": "latency",
    "+ the data-parallel all-reduce": "reduce",
    "+ the engine's own time between actions": "host",
    "+ each action's own mean cost (its place in the step)": "per_action",
    PER_STEP_LABEL: "per_step",
    "measured, device clock": "waiting",
}
"""The breakdown's row labels -> the effect each adds (catalog ``claims.effect.<id>``)."""


SIMULATED_LABEL = "+ the engine's own time between actions"
"""The breakdown's row that is the run's simulated timeline (theory at its own costs, the
simulator fed each stage's costs, the link and the engine's time: RunMetrics.simulated_bubble_fraction)."""


def largest(metrics: RunMetrics, beyond_simulated: bool = False) -> tuple[str, float] | None:
    """The bubble breakdown's largest measured effect on the device clock, in words, and how
    much it adds to the bubble fraction; None for a result without a breakdown or where no
    effect adds anything. ``beyond_simulated``: only the effects after theory at the run's own
    costs (SIMULATED_LABEL), what a gap between the measured bubble and that theory is made of."""
    if not metrics.bubble_breakdown:
        return None
    table = breakdown_table(metrics)
    if beyond_simulated:
        at = next((i for i, row in enumerate(table) if row.label == SIMULATED_LABEL), None)
        table = table if at is None else table[at + 1:]
    rows = [row for row in table if row.change is not None and row.kind != "wall"]
    if not rows:
        return None
    worst = max(rows, key=lambda row: row.change)
    if worst.change <= 0:
        return None
    return _words(worst.label), worst.change


def _words(label: str) -> str:
    return say(f"effect.{EFFECTS[label]}") if label in EFFECTS else label.removeprefix("+ ")


MOST = 2 / 3
"""The share of a gap the named effects must cover: one effect of +0.042 in a gap of +0.080
(lesson 5, v = 4) left half of it unnamed, so the next largest are named until this much is."""

REST_SAID = 0.0005
"""The smallest remainder of a gap said as a figure: anything that prints as +0.001 or more."""

MOST_NAMED = 3
"""At most this many effects in one sentence; past them the rest of the gap is said as a figure."""


def covering(metrics: RunMetrics) -> tuple[list[tuple[str, float]], float] | None:
    """The breakdown's largest measured effects, largest first, until together they cover MOST
    of the gap from its first row to the device clock (at most MOST_NAMED), and that gap; None
    where largest() finds none."""
    if largest(metrics) is None:
        return None
    table = breakdown_table(metrics)
    gap = metrics.device_bubble_fraction - table[0].value
    rows = sorted((row for row in table if row.change is not None and row.kind != "wall" and row.change > 0),
                  key=lambda row: -row.change)
    named: list[tuple[str, float]] = []
    for row in rows[:MOST_NAMED]:
        named.append((_words(row.label), row.change))
        if sum(change for _, change in named) >= MOST * gap:
            break
    return named, gap


def largest_effect(metrics: RunMetrics, name: str | None = None, own: str = "") -> str:
    """A sentence naming the bubble breakdown's largest measured effects on the device clock
    (covering(): enough to cover most of the gap, or what remains said as a figure), or "" for a
    result without a breakdown; ``name``: the schedule it explains, where a verdict speaks of several;
    ``own``: with a name, the speaking lesson's own key for the sentence (``<own>_many`` for several
    effects): a layout's name read badly in "Why p = 2, d = 2, all-reduce at the flush's bubble"."""
    found = covering(metrics)
    if found is None:
        return ""
    speak, of, of_many = (say_own, own, f"{own}_many") if own else (say, "why_of", "why_many_of")
    named, gap = found
    start = breakdown_table(metrics)[0]
    values = dict(start=say(f"start.{start.kind}"), start_value=f"{start.value:.3f}",
                  device=f"{metrics.device_bubble_fraction:.3f}")
    total = sum(change for _, change in named)
    # Whatever the named effects leave of the gap is said as a figure, however small: a
    # sentence that names +0.041 of a +0.051 gap left the student to find the other 0.010.
    rest = gap - total
    values["rest"] = say("why_rest", rest=f"{rest:.3f}") if rest >= REST_SAID else ""
    if len(named) == 1 and named[0][1] >= MOST * gap:
        values.update(effect=named[0][0], change=f"{named[0][1]:.3f}")
        return say("why", **values) if name is None else speak(of, name=name, **values)
    listed = say("effects_sep").join(say("effect_item", effect=effect, change=f"{change:.3f}")
                                     for effect, change in named)
    values.update(gap=f"{gap:.3f}", effects=listed, named=f"{total:.3f}")
    return say("why_many", **values) if name is None else speak(of_many, name=name, **values)


def with_why(what: str, metrics: RunMetrics) -> str:
    effect = largest_effect(metrics)
    return say("then", first=what, second=effect) if effect else say("end", sentence=what)


def sentence_with_why(what: str, status: str, metrics: RunMetrics) -> str:
    """A sentence, with the why after it when the claim does not hold."""
    return with_why(what, metrics) if status == FAILS else say("end", sentence=what)


__all__ = ["EFFECTS", "MOST", "MOST_NAMED", "REST_SAID", "SIMULATED_LABEL", "covering", "largest",
           "largest_effect", "sentence_with_why", "with_why"]
