"""Why a bubble is not the formula's: the bubble breakdown's largest measured effect, in words.

When a claim does not hold, the verdict's reason names the breakdown's largest measured effect
(pipelab.engine.theory.breakdown.breakdown_table): the one thing this run had that the
formula leaves out and that cost the most.
"""

from __future__ import annotations

from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.theory.breakdown import PER_STEP_LABEL, breakdown_table
from pipelab.lessons.verdict import FAILS, say

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
    effect = say(f"effect.{EFFECTS[worst.label]}") if worst.label in EFFECTS else worst.label.removeprefix("+ ")
    return effect, worst.change


def largest_effect(metrics: RunMetrics, name: str | None = None) -> str:
    """A sentence naming the bubble breakdown's largest measured effect on the device clock,
    or "" for a result without a breakdown; ``name``: the schedule it explains, where a verdict
    speaks of several."""
    found = largest(metrics)
    if found is None:
        return ""
    effect, change = found
    start = breakdown_table(metrics)[0]
    values = dict(start=say(f"start.{start.kind}"), start_value=f"{start.value:.3f}",
                  device=f"{metrics.device_bubble_fraction:.3f}", effect=effect, change=f"{change:.3f}")
    return say("why", **values) if name is None else say("why_of", name=name, **values)


def with_why(what: str, metrics: RunMetrics) -> str:
    effect = largest_effect(metrics)
    return say("then", first=what, second=effect) if effect else say("end", sentence=what)


def sentence_with_why(what: str, status: str, metrics: RunMetrics) -> str:
    """A sentence, with the why after it when the claim does not hold."""
    return with_why(what, metrics) if status == FAILS else say("end", sentence=what)


__all__ = ["EFFECTS", "SIMULATED_LABEL", "largest", "largest_effect", "sentence_with_why", "with_why"]
