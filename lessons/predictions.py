"""A prediction: a question asked before Run, answered by the formula, the simulator and the run.

Plain data, no Streamlit and no torch. Texts live in the catalogs, under the keys each
question names (``q.<id>.*``, in its lesson's folder, written without the lesson's name); the
LaTeX in ``formula`` is the same in every language. Each lesson's folder lists its own (lessons/<name>/questions.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pipelab.engine.schedules import chunks_for
from pipelab.lessons.answer_kinds import FRACTION, Value, is_right
from pipelab.lessons.engine_answers import bubble_latex, formula_bubble, peak_rank, replicas_of, timeline_of
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.run_readers import measured_bubble


@dataclass(frozen=True, kw_only=True)
class Prediction:
    """A question asked before Run, answered by the formula, the simulator and the run."""

    id: str
    """As the lesson's folder writes it ("bubble"); the lesson that asks it puts its slug in
    front ("naive.bubble", pipelab.lessons.own_keys.asked_by)."""
    lesson: str = ""
    """Slug of the lesson that asks it, set by that lesson."""
    kind: str
    """FRACTION, COUNT, NUMBER or CHOICE (pipelab.lessons.answer_kinds): what a typed
    answer may be, checked before it is locked in."""
    answer_fn: Callable[[Knobs], Value]
    """The formula's answer at the student's settings (pipelab.engine.theory.formulas)."""
    simulated_fn: Callable[[Knobs], Value]
    """The simulator's answer on unit costs at the student's settings."""
    formula_fn: Callable[[Knobs], str]
    """LaTeX of the formula, the same in every language."""
    measured_fn: Callable[[object, Knobs], Value | None] | None = None
    """The run's answer (device clock), or None when one run cannot show it."""
    tolerance: float = 0.0
    """How far a numeric prediction may be from the formula's answer and still count."""
    options: tuple[str, ...] = ()
    """Option ids of a CHOICE question; texts under ``q.<id>.option.<option>``."""
    applies_fn: Callable[[Knobs], bool] = lambda knobs: True
    """False when the question does not fit the chosen settings (e.g. another schedule)."""
    compared_fn: Callable[[list, Knobs], Value | None] | None = None
    """The answer read off a comparison, for a question one run cannot answer (a ratio of two
    schedules): (label, result) pairs as the page ran them side by side."""
    alternative_fn: Callable[[Knobs], Value] | None = None
    """The same quantity as a paper states it in another form, where that differs from the one
    asked (and graded): the report says both, under ``q.<id>.note``."""
    at_most_fn: Callable[[Knobs], tuple[int, str]] | None = None
    """The largest value a count can take at the student's settings and the catalog key that
    says why ((p, "predict.most.devices"): no more devices than p are busy): a larger typed
    count is refused before it is locked in, like a bubble of 1.5."""

    @property
    def prompt(self) -> str:
        return f"q.{self.id}.prompt"

    @property
    def why(self) -> str:
        return f"q.{self.id}.why"

    @property
    def note(self) -> str:
        return f"q.{self.id}.note"

    def option_key(self, option: str) -> str:
        return f"q.{self.id}.option.{option}"

    def alternative(self, knobs: Knobs) -> Value | None:
        return None if self.alternative_fn is None else self.alternative_fn(knobs)

    def at_most(self, knobs: Knobs) -> tuple[int, str] | None:
        return None if self.at_most_fn is None else self.at_most_fn(knobs)

    def applies(self, knobs: Knobs) -> bool:
        try:
            return self.applies_fn(knobs) and self.answer_fn(knobs) is not None
        except Exception:  # settings the engine rejects: the Run button names the reason
            return False

    def answer(self, knobs: Knobs) -> Value:
        return self.answer_fn(knobs)

    def simulated(self, knobs: Knobs) -> Value:
        return self.simulated_fn(knobs)

    def measured(self, result, knobs: Knobs, compared=None) -> Value | None:
        """The run's answer, or, for a question only a comparison answers, the comparison's
        (``compared``: its (label, result) pairs), or None."""
        try:
            if self.measured_fn is not None:
                return self.measured_fn(result, knobs)
            if self.compared_fn is not None and compared:
                return self.compared_fn(list(compared), knobs)
        except (KeyError, IndexError, TypeError, ZeroDivisionError):  # a result saved before runs reported it
            return None
        return None

    def is_right(self, value: Value, knobs: Knobs) -> bool:
        return is_right(self.kind, value, self.answer(knobs), self.tolerance)

    def context(self, knobs: Knobs) -> dict:
        """Values the prompt and the why sentence may name."""
        p, m = knobs.stages, knobs.microbatches
        v = chunks_for(knobs.schedule, knobs.chunks)
        return {"schedule": knobs.schedule, "p": p, "m": m, "v": v, "r": peak_rank(knobs),
                "p1": p - 1, "mp1": m + p - 1, "vp1": v * p - 1, "twice_vp1": 2 * (v * p - 1),
                "p_r": p - peak_rank(knobs), "twice_p1": 2 * p - 1, "twice_p1_messages": 2 * (p - 1)}


def at_most_devices(knobs: Knobs) -> tuple[int, str]:
    """No more than the p devices can be busy at once."""
    return knobs.stages, "predict.most.devices"


def at_most_microbatches(knobs: Knobs) -> tuple[int, str]:
    """A device holds no more micro-batches (chunk visits, where a stage is split into v
    chunks) than a step has: m, or m · v."""
    v = chunks_for(knobs.schedule, knobs.chunks)
    return knobs.microbatches * v, ("predict.most.microbatches" if v == 1 else "predict.most.visits")


def at_most_in_flight(knobs: Knobs) -> tuple[int, str]:
    """A stage keeps a weight version for each micro-batch in flight through it, and 1F1B-style
    admission lets at most p be in flight (PipeDream, arXiv 1806.03377, section 3.3)."""
    return knobs.stages, "predict.most.versions"


def bubble_question(qid: str) -> Prediction:
    """The bubble fraction at the student's settings, for whichever schedule they chose."""
    return Prediction(
        id=qid, kind=FRACTION, tolerance=0.02,
        answer_fn=formula_bubble,
        simulated_fn=lambda k: timeline_of(k).bubble_fraction(),
        formula_fn=lambda k: bubble_latex(k.schedule) or "",
        measured_fn=lambda result, k: measured_bubble(result),
        # Replicated stages have no closed form (pipelab.engine.schedules.replication): no card.
        applies_fn=lambda k: bubble_latex(k.schedule) is not None and replicas_of(k) is None)


RIGHT, WRONG, OTHER_FORM, UNANSWERED = "right", "wrong", "other_form", "unanswered"
ELSEWHERE_RIGHT, ELSEWHERE_WRONG, ELSEWHERE_UNGRADED = "elsewhere_right", "elsewhere_wrong", "elsewhere_ungraded"
"""How a prediction is graded. ELSEWHERE_*: it was made for other settings than the run's, so
it is graded against the formula at its own settings (or not at all when the question does
not fit them), never against this run: a prediction locked at p = 2 says nothing about p = 4."""


def same_settings(a: Knobs, b: Knobs) -> bool:
    """True when a question asked at ``a`` has the same answer's settings as at ``b``: the
    schedule, p, m and the v the engine builds (the knobs every question's answer reads)."""
    return ((a.schedule, a.stages, a.microbatches, chunks_for(a.schedule, a.chunks))
            == (b.schedule, b.stages, b.microbatches, chunks_for(b.schedule, b.chunks)))


def grade(question: Prediction, value: Value | None, predicted_at: Knobs | None, ran: Knobs) -> str:
    """RIGHT, WRONG, OTHER_FORM (the paper's other form of the quantity), UNANSWERED, or, for a
    prediction made at other settings than ``ran``, one of ELSEWHERE_*: graded at its own."""
    if value is None:
        return UNANSWERED
    if predicted_at is not None and not same_settings(predicted_at, ran):
        if not question.applies(predicted_at):
            return ELSEWHERE_UNGRADED
        return ELSEWHERE_RIGHT if question.is_right(value, predicted_at) else ELSEWHERE_WRONG
    if question.is_right(value, ran):
        return RIGHT
    alternative = question.alternative(ran)
    if alternative is not None and is_right(question.kind, value, alternative, question.tolerance):
        return OTHER_FORM
    return WRONG


def result_of(compared: list, schedule: str):
    """The result of ``schedule`` among a comparison's (label, result) pairs, or None (the
    student chose another schedule for the lesson's own run)."""
    return next((r for _, r in compared if r.schedule.name == schedule), None)


__all__ = ["ELSEWHERE_RIGHT", "ELSEWHERE_UNGRADED", "ELSEWHERE_WRONG", "OTHER_FORM", "Prediction", "RIGHT",
           "UNANSWERED", "WRONG", "at_most_devices", "at_most_in_flight", "at_most_microbatches", "bubble_question",
           "grade", "result_of", "same_settings"]
