"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.engine.theory import formulas as theory
from pipelab.lessons.answer_kinds import CHOICE, COUNT
from pipelab.lessons.engine_answers import timeline_of
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.predictions import Prediction, at_most_in_flight
from pipelab.lessons.self_checks import Check

from .claim import versions_played


def _steady_idle(knobs: Knobs) -> float:
    """Device 0's idle time between its first backward and its last forward (the steady state)."""
    events = [e for e in timeline_of(knobs).compute_events() if e.rank == 0 and e.kind in ("F", "B")]
    first_b = min(e.start for e in events if e.kind == "B")
    last_f = max(e.end for e in events if e.kind == "F")
    inside = sorted((e for e in events if e.start >= first_b and e.end <= last_f), key=lambda e: e.start)
    return sum(max(0.0, b.start - a.end) for a, b in zip(inside, inside[1:]))


def _simulated_versions(knobs: Knobs) -> int:
    """Stage 0's most weight versions in the simulator, over the steps the run plays
    (claim.versions_played: the claim table reads the same figure)."""
    return versions_played(knobs.schedule, knobs.stages, knobs.microbatches, knobs.chunks, knobs.steps,
                           knobs.overlap_steps)[0]


STEADY_OPTIONS = (("busy", 0.0), ("idle_half", 0.5), ("idle_most", 0.85))
"""The steady question's options and the idle share each stands for: a run's answer is the
option nearest its measured share."""


def _measured_steady(result, knobs: Knobs) -> str:
    """The run's answer to the steady question: the option nearest the idle share it measured
    in steady state (device clock, inside each device's span), the figure the verdict's row
    "idle share in steady state" reads, so the card and the verdict say one thing."""
    share = result.metrics.device_steady_bubble_fraction
    return min(STEADY_OPTIONS, key=lambda option: abs(option[1] - share))[0]


PREDICTIONS: tuple[Prediction, ...] = (
    Prediction(
        id="versions", kind=COUNT,
        answer_fn=lambda k: theory.weight_versions(k.schedule, k.stages, 0),
        simulated_fn=_simulated_versions,
        formula_fn=lambda k: theory.schedule_theory(k.schedule).weight_versions_latex,
        measured_fn=lambda result, k: result.memory[0].weight_versions,
        at_most_fn=at_most_in_flight,
        applies_fn=lambda k: k.schedule in ("pipedream", "pipedream-2bw", "1f1b")),
    Prediction(
        id="steady", kind=CHOICE, options=("busy", "idle_half", "idle_most"),
        answer_fn=lambda k: "busy",
        # The simulator's answer: does device 0 idle between its first and last action once
        # the pipeline is full? The asynchronous schedules never flush, so the steady state
        # is what a long run sees (arXiv 1806.03377, section 3.2).
        simulated_fn=lambda k: "busy" if _steady_idle(k) == 0 else "idle_half",
        formula_fn=lambda k: r"\text{1F1B: } F, B, F, B, \dots",
        measured_fn=_measured_steady,
        applies_fn=lambda k: k.schedule in ("pipedream", "pipedream-2bw", "1f1b")),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="versions", kind=COUNT, settings={"p": 6, "r": 1},
          answer_fn=lambda: theory.weight_versions("pipedream", 6, 1)),
    Check(id="two_bw", kind=CHOICE, settings={"p": 6}, options=("1", "2", "6"),
          answer_fn=lambda: str(theory.weight_versions("pipedream-2bw", 6, 0))),
    Check(id="loss", kind=CHOICE, settings={}, options=("stale", "data", "rounding"),
          answer_fn=lambda: "stale"),
)
"""Asked at the end of the page, in page order."""
