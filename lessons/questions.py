"""The course's questions: predictions asked before a run, and checks at the end of a lesson.

Plain data, no Streamlit and no torch. Every numeric answer is computed, never typed in:
the formula side from ``pipelab.engine.theory.formulas`` (or a closed form cited here), the simulator side by
playing the schedule built from the student's own ``Knobs`` on ``UNIT_COSTS``, and the
measured side read off a finished run. Texts live in the catalogs (lessons/i18n/*.json),
under the keys each question names; the LaTeX in ``formula`` is the same in every language.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from pipelab.engine.theory import formulas as theory
from pipelab.engine.schedules import chunks_for
from pipelab.lessons import Knobs

NUMBER = "number"
CHOICE = "choice"

Value = float | str
"""A number for NUMBER questions, an option id for CHOICE questions."""


# ---- the engine's answers at given settings -------------------------------------------------

@functools.lru_cache(maxsize=256)
def _schedule(name: str, p: int, m: int, v: int | None):
    from pipelab.engine.schedules import build_schedule
    return build_schedule(name, p, m, v)


@functools.lru_cache(maxsize=256)
def simulated(name: str, p: int, m: int, v: int | None = None, chunk_share: bool = False):
    """The unit-cost timeline (T_F = T_I = T_W = 1, the papers' figures) of a registered schedule,
    cached and shared: callers must not change it.

    ``chunk_share``: each of a rank's v chunks costs 1/v, so every schedule runs the same model
    (for comparing step times across schedules); the default gives each chunk unit costs, as
    the lesson pages' theory preview does. Bubble fractions are the same either way."""
    from pipelab.engine.theory.simulate import UNIT_COSTS, CostModel, simulate
    schedule = _schedule(name, p, m, v)
    cost = UNIT_COSTS
    if chunk_share and schedule.chunks > 1:
        share = 1.0 / schedule.chunks
        cost = CostModel(forward=share, backward_input=share, backward_weight=share)
    return simulate(schedule, cost)


def chunks_of(knobs: Knobs, schedule: str | None = None) -> int:
    """The chunk count the engine builds ``schedule`` (default: the knobs' own) with at these
    knobs: the student's v where it takes any, else its only count (the registry's ChunkRule)."""
    return chunks_for(schedule or knobs.schedule, knobs.chunks)


def timeline_of(knobs: Knobs, schedule: str | None = None):
    """The unit-cost simulation of ``schedule`` (default: the knobs' own) at the knobs' p, m, v."""
    name = schedule or knobs.schedule
    return simulated(name, knobs.stages, knobs.microbatches, chunks_of(knobs, name))


def messages_per_step(name: str, p: int, m: int, v: int | None = None) -> int:
    """Point-to-point messages of one step, counted from the schedule's sends (engine/runtime/comm.py)."""
    from pipelab.engine.runtime.comm import sends_by_channel
    return sum(len(sent) for sent in sends_by_channel(_schedule(name, p, m, v)).values())


def boundary_messages_per_microbatch(p: int, v: int = 1) -> int:
    """2(vp - 1): each of the vp - 1 chunk boundaries carries an activation forward and its
    gradient back (arXiv 2104.04473, section 2.2: about v times 1F1B's messages)."""
    return 2 * (v * p - 1)


PIPELINE_KINDS = ("F", "B", "I", "W")
"""The pipeline's own work: forward and backward. A synchronous step's optimizer update (U)
comes after a device's last backward, where it overlaps its neighbours' backwards: counting it
made one run of the naive schedule show 2 devices busy at once, where the lesson (and the
simulator, which plays no update) count 1."""


def most_devices_busy(timeline) -> int:
    """Most devices computing forward or backward work at the same moment anywhere in the
    timeline (the optimizer update left out: PIPELINE_KINDS)."""
    events = [e for e in timeline.compute_events() if e.kind in PIPELINE_KINDS]
    edges = sorted([(e.start, 1) for e in events] + [(e.end, -1) for e in events], key=lambda x: (x[0], x[1]))
    busy = best = 0
    for _, delta in edges:
        busy += delta
        best = max(best, busy)
    return best


def bubble_time_device0(timeline) -> float:
    """Device 0's idle time between its own first and last action: the zero-bubble paper's count."""
    return timeline.idle_within_own_span()[0]


def bubble_latex(name: str) -> str | None:
    """The schedule's bubble fraction at T_F = T_I = T_W in LaTeX, as it registered it
    (ScheduleTheory.bubble_latex), or None without a closed form or with one that only
    bounds it (a question's answer must be the bubble itself)."""
    forms = theory.schedule_theory(name)
    return None if forms.bubble_is_bound else forms.bubble_latex


def bubble_text(name: str) -> str | None:
    """The same as plain text for tables (ScheduleTheory.bubble_text)."""
    return theory.schedule_theory(name).bubble_text


def formula_bubble(knobs: Knobs, schedule: str | None = None) -> float:
    name = schedule or knobs.schedule
    return theory.formula_bubble_fraction(name, knobs.stages, knobs.microbatches, chunks_of(knobs, name))


def peak_rank(knobs: Knobs) -> int:
    """The rank 1F1B's question asks about: rank 2 when there is one, else the last."""
    return min(2, knobs.stages - 1)


# ---- readers of a finished run (pipelab.engine.results.result.RunResult) -------------------------------------

def measured_bubble(result) -> float:
    return result.metrics.bubble_fraction


def measured_peak(rank_fn: Callable[[Knobs], int]):
    def read(result, knobs: Knobs):
        peaks = result.metrics.peak_inflight_per_device or []
        r = rank_fn(knobs)
        return peaks[r] if r < len(peaks) else None
    return read


def measured_most_busy(result) -> int:
    step = result.measured_steps()[-1]
    return most_devices_busy(result.timeline.of_step(step))


# ---- predictions ------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Prediction:
    """A question asked before Run, answered by the formula, the simulator and the run."""

    id: str
    lesson: str
    """Slug of the lesson that asks it."""
    kind: str
    """NUMBER or CHOICE."""
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
        v = chunks_of(knobs)
        return {"schedule": knobs.schedule, "p": p, "m": m, "v": v, "r": peak_rank(knobs),
                "p1": p - 1, "mp1": m + p - 1, "vp1": v * p - 1, "twice_vp1": 2 * (v * p - 1),
                "p_r": p - peak_rank(knobs), "twice_p1": 2 * p - 1, "twice_p1_messages": 2 * (p - 1)}


def is_right(kind: str, value: Value, answer: Value, tolerance: float) -> bool:
    if kind == CHOICE:
        return value == answer
    return abs(float(value) - float(answer)) <= tolerance + 1e-9


def _bubble_question(qid: str, lesson: str) -> Prediction:
    """The bubble fraction at the student's settings, for whichever schedule they chose."""
    return Prediction(
        id=qid, lesson=lesson, kind=NUMBER, tolerance=0.02,
        answer_fn=formula_bubble,
        simulated_fn=lambda k: timeline_of(k).bubble_fraction(),
        formula_fn=lambda k: bubble_latex(k.schedule) or "",
        measured_fn=lambda result, k: measured_bubble(result),
        applies_fn=lambda k: bubble_latex(k.schedule) is not None)


def _same_as(schedule: str, other: str, p: int, m: int, v: int | None) -> str:
    """"smaller", "same" or "larger": ``schedule``'s formula bubble against ``other``'s."""
    mine = theory.formula_bubble_fraction(schedule, p, m, v or 1)
    theirs = theory.formula_bubble_fraction(other, p, m, 1)
    return "same" if abs(mine - theirs) < 1e-9 else ("smaller" if mine < theirs else "larger")


def _simulated_vs(knobs: Knobs, other: str) -> str:
    mine, theirs = timeline_of(knobs).bubble_fraction(), timeline_of(knobs, other).bubble_fraction()
    return "same" if abs(mine - theirs) < 1e-9 else ("smaller" if mine < theirs else "larger")


def _interleaved_ratio_formula(k: Knobs) -> float:
    v = chunks_of(k)
    return (theory.formula_bubble_fraction("interleaved", k.stages, k.microbatches, v)
            / theory.gpipe_bubble_fraction(k.stages, k.microbatches))


def _interleaved_ratio_simulated(k: Knobs) -> float:
    mine = simulated("interleaved", k.stages, k.microbatches, chunks_of(k)).bubble_fraction()
    return mine / simulated("1f1b", k.stages, k.microbatches).bubble_fraction()


def _messages_formula(k: Knobs) -> int:
    v = chunks_of(k)
    if k.schedule == "zb-v":  # the V's turn: stages p-1 and p share a rank, no message there
        return 2 * (2 * k.stages - 2)
    return boundary_messages_per_microbatch(k.stages, v)


def _of(compared: list, schedule: str):
    """The result of ``schedule`` among a comparison's (label, result) pairs, or None (the
    student chose another schedule for the lesson's own run)."""
    return next((r for _, r in compared if r.schedule.name == schedule), None)


def _interleaved_ratio_measured(compared: list, k: Knobs) -> float | None:
    """Interleaved's bubble share of the step over 1F1B's, as the comparison measured them."""
    ours, other = _of(compared, "interleaved"), _of(compared, "1f1b")
    if ours is None or other is None:
        return None
    return ours.metrics.bubble_fraction / other.metrics.bubble_fraction


def _zb_share_measured(compared: list, k: Knobs) -> float | None:
    """ZB-H1's idle time on device 0 over 1F1B's, as the comparison measured them (device clock)."""
    def idle(r):
        return r.metrics.bubble_fraction_per_device[0] * r.metrics.device_step_time_s
    ours, other = _of(compared, "zb-h1"), _of(compared, "1f1b")
    return None if ours is None or other is None else idle(ours) / idle(other)


def _zb_share_formula(k: Knobs) -> float:
    p = k.stages
    return theory.zb_h1_bubble_time(p, 1, 1, 1) / theory.one_f_one_b_bubble_time(p, 1, 1, 1)


def _zb_share_simulated(k: Knobs) -> float:
    zb = bubble_time_device0(simulated("zb-h1", k.stages, k.microbatches))
    one = bubble_time_device0(simulated("1f1b", k.stages, k.microbatches))
    return zb / one


def _messages_measured(result, k: Knobs) -> float:
    return result.metrics.messages_per_step / result.schedule.num_microbatches


PREDICTIONS: tuple[Prediction, ...] = (
    _bubble_question("naive.bubble", "naive"),
    Prediction(
        id="naive.busy", lesson="naive", kind=NUMBER,
        answer_fn=lambda k: 1 if k.schedule == "naive" else min(k.stages, k.microbatches),
        simulated_fn=lambda k: most_devices_busy(timeline_of(k)),
        formula_fn=lambda k: "1" if k.schedule == "naive" else r"\min(p, m)",
        measured_fn=lambda result, k: measured_most_busy(result),
        applies_fn=lambda k: k.schedule in ("naive", "gpipe")),
    _bubble_question("gpipe.bubble", "gpipe"),
    Prediction(
        id="gpipe.peak", lesson="gpipe", kind=NUMBER,
        answer_fn=lambda k: theory.peak_inflight(k.schedule, k.stages, k.microbatches, 0),
        simulated_fn=lambda k: timeline_of(k).peak_inflight()[0],
        formula_fn=lambda k: "m" if k.schedule == "gpipe" else "1",
        measured_fn=measured_peak(lambda k: 0),
        applies_fn=lambda k: k.schedule in ("gpipe", "naive")),
    Prediction(
        id="pipedream.versions", lesson="pipedream", kind=NUMBER,
        answer_fn=lambda k: theory.weight_versions(k.schedule, k.stages, 0),
        simulated_fn=lambda k: timeline_of(k).weight_versions()[0],
        formula_fn=lambda k: {"pipedream": "p - r", "pipedream-2bw": "2"}.get(k.schedule, "1"),
        measured_fn=lambda result, k: result.memory[0].weight_versions,
        applies_fn=lambda k: k.schedule in ("pipedream", "pipedream-2bw", "1f1b")),
    Prediction(
        id="pipedream.steady", lesson="pipedream", kind=CHOICE, options=("busy", "idle_half", "idle_most"),
        answer_fn=lambda k: "busy",
        # The simulator's answer: does device 0 idle between its first and last action once
        # the pipeline is full? The asynchronous schedules never flush, so the steady state
        # is what a long run sees (arXiv 1806.03377, section 3.2).
        simulated_fn=lambda k: "busy" if _steady_idle(k) == 0 else "idle_half",
        formula_fn=lambda k: r"\text{1F1B: } F, B, F, B, \dots",
        applies_fn=lambda k: k.schedule in ("pipedream", "pipedream-2bw", "1f1b")),
    Prediction(
        id="1f1b.peak", lesson="1f1b", kind=NUMBER,
        answer_fn=lambda k: theory.peak_inflight(k.schedule, k.stages, k.microbatches, peak_rank(k)),
        simulated_fn=lambda k: timeline_of(k).peak_inflight()[peak_rank(k)],
        formula_fn=lambda k: r"\min(p - r,\ m)" if k.schedule == "1f1b" else "m",
        measured_fn=measured_peak(peak_rank),
        applies_fn=lambda k: k.schedule in ("1f1b", "gpipe")),
    Prediction(
        id="1f1b.same_bubble", lesson="1f1b", kind=CHOICE, options=("smaller", "same", "larger"),
        answer_fn=lambda k: _same_as("1f1b", "gpipe", k.stages, k.microbatches, None),
        simulated_fn=lambda k: _simulated_vs(k.with_overrides({"schedule": "1f1b"}), "gpipe"),
        formula_fn=lambda k: (r"\frac{p-1}{m+p-1}\ \text{(1F1B)} \quad\text{vs.}\quad "
                              r"\frac{p-1}{m+p-1}\ \text{(GPipe)}")),
    Prediction(
        id="interleaved.messages", lesson="interleaved", kind=NUMBER,
        answer_fn=_messages_formula,
        simulated_fn=lambda k: messages_per_step(k.schedule, k.stages, k.microbatches, chunks_of(k)) / k.microbatches,
        formula_fn=lambda k: r"2(vp-1)" if k.schedule == "interleaved" else r"2(p-1)",
        measured_fn=_messages_measured,
        applies_fn=lambda k: k.schedule in ("interleaved", "1f1b")),
    Prediction(
        id="interleaved.ratio", lesson="interleaved", kind=NUMBER, tolerance=0.05,
        answer_fn=_interleaved_ratio_formula,
        simulated_fn=_interleaved_ratio_simulated,
        formula_fn=lambda k: r"\frac{p-1}{vm+p-1} \Big/ \frac{p-1}{m+p-1} = \frac{m+p-1}{vm+p-1}",
        # Megatron (arXiv 2104.04473, section 2.2) divides the bubble by the ideal time,
        # (p-1)/(vm) against (p-1)/m: exactly 1/v. The page asks and measures the share of
        # the step, which is what a run's bubble fraction is.
        compared_fn=_interleaved_ratio_measured,
        alternative_fn=lambda k: 1 / chunks_of(k),
        applies_fn=lambda k: k.microbatches % k.stages == 0),
    Prediction(
        id="zero-bubble.share", lesson="zero-bubble", kind=NUMBER, tolerance=0.05,
        answer_fn=_zb_share_formula,
        simulated_fn=_zb_share_simulated,
        compared_fn=_zb_share_measured,
        formula_fn=lambda k: r"\frac{(p-1)(T_F+T_I-T_W)}{(p-1)(T_F+T_I+T_W)} = \frac{1}{3}"),
    Prediction(
        id="zero-bubble.peak", lesson="zero-bubble", kind=NUMBER,
        answer_fn=lambda k: theory.peak_inflight(k.schedule, k.stages, k.microbatches, 0, chunks_of(k)),
        simulated_fn=lambda k: timeline_of(k).peak_inflight()[0],
        formula_fn=lambda k: {"zb-h1": r"\min(p,\ m)", "1f1b": r"\min(p,\ m)", "zb-h2": r"\min(2p-1,\ m)",
                              "zb-v": r"\min(2p,\ 2m)"}[k.schedule],
        measured_fn=measured_peak(lambda k: 0),
        applies_fn=lambda k: k.schedule in ("zb-h1", "zb-h2", "zb-v", "1f1b")),
    _bubble_question("playground.bubble", "playground"),
)


def _steady_idle(knobs: Knobs) -> float:
    """Device 0's idle time between its first backward and its last forward (the steady state)."""
    events = [e for e in timeline_of(knobs).compute_events() if e.rank == 0 and e.kind in ("F", "B")]
    first_b = min(e.start for e in events if e.kind == "B")
    last_f = max(e.end for e in events if e.kind == "F")
    inside = sorted((e for e in events if e.start >= first_b and e.end <= last_f), key=lambda e: e.start)
    return sum(max(0.0, b.start - a.end) for a, b in zip(inside, inside[1:]))


def predictions_for(lesson: str) -> tuple[Prediction, ...]:
    return tuple(q for q in PREDICTIONS if q.lesson == lesson)


# ---- check yourself ---------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Check:
    """A short question at the end of a lesson, with feedback for a right and a wrong answer."""

    id: str
    lesson: str
    kind: str
    answer_fn: Callable[[], Value]
    """Computed from the engine at the settings the prompt names (``settings``)."""
    settings: dict
    """Values the prompt and the feedback name, e.g. {"p": 4, "m": 16}."""
    options: tuple[str, ...] = ()
    tolerance: float = 0.0

    @property
    def prompt(self) -> str:
        return f"check.{self.id}.prompt"

    @property
    def right(self) -> str:
        return f"check.{self.id}.right"

    @property
    def wrong(self) -> str:
        return f"check.{self.id}.wrong"

    def option_key(self, option: str) -> str:
        return f"check.{self.id}.option.{option}"

    def answer(self) -> Value:
        return self.answer_fn()

    def is_right(self, value: Value) -> bool:
        return is_right(self.kind, value, self.answer(), self.tolerance)

    def context(self) -> dict:
        answer = self.answer()
        return {**self.settings, "answer": format_value(answer, exact=True) if self.kind == NUMBER else answer}


def _validation_outcome(text: str) -> str:
    """"valid", "order" (a backward before its forward) or "deadlock", as pipelab.engine.theory.validate says."""
    from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate
    try:
        validate(parse_schedule(text))
    except InvalidSchedule as err:
        return "deadlock" if "deadlock" in err.rule else "order"
    return "valid"


SWAPPED = "0B0 0F0 0F1 0B1\n1F0 1B0 1F1 1B1"
"""Lesson 7's example with 0F0 and 0B0 swapped on rank 0."""
CROSSED = "0F0 0B0 0F1 0B1\n1F0 1F1 1B0 1B1"
"""Lesson 7's deadlock: each rank waits for the other."""

CHECKS: tuple[Check, ...] = (
    Check(id="naive.idle", lesson="naive", kind=NUMBER, tolerance=0.01, settings={"p": 8},
          answer_fn=lambda: theory.naive_bubble_fraction(8)),
    Check(id="naive.buys", lesson="naive", kind=CHOICE, settings={}, options=("memory", "speed", "both"),
          answer_fn=lambda: "memory"),
    Check(id="gpipe.bubble", lesson="gpipe", kind=NUMBER, tolerance=0.01, settings={"p": 4, "m": 16},
          answer_fn=lambda: theory.gpipe_bubble_fraction(4, 16)),
    Check(id="gpipe.four_k", lesson="gpipe", kind=NUMBER, tolerance=0.01, settings={"p": 8, "m": 32},
          answer_fn=lambda: theory.gpipe_bubble_fraction(8, 32)),
    Check(id="gpipe.remat", lesson="gpipe", kind=CHOICE, settings={}, options=("memory_for_time", "bubble", "messages"),
          answer_fn=lambda: "memory_for_time"),
    Check(id="pipedream.versions", lesson="pipedream", kind=NUMBER, settings={"p": 6, "r": 1},
          answer_fn=lambda: theory.weight_versions("pipedream", 6, 1)),
    Check(id="pipedream.two_bw", lesson="pipedream", kind=CHOICE, settings={"p": 6}, options=("1", "2", "6"),
          answer_fn=lambda: str(theory.weight_versions("pipedream-2bw", 6, 0))),
    Check(id="pipedream.loss", lesson="pipedream", kind=CHOICE, settings={}, options=("stale", "data", "rounding"),
          answer_fn=lambda: "stale"),
    Check(id="1f1b.rank0", lesson="1f1b", kind=NUMBER, settings={"p": 8, "m": 32},
          answer_fn=lambda: theory.peak_inflight("1f1b", 8, 32, 0)),
    Check(id="1f1b.gpipe", lesson="1f1b", kind=NUMBER, settings={"p": 8, "m": 32},
          answer_fn=lambda: theory.peak_inflight("gpipe", 8, 32, 0)),
    Check(id="1f1b.warmup", lesson="1f1b", kind=CHOICE, settings={}, options=("p_r_1", "p", "m"),
          answer_fn=lambda: "p_r_1"),
    Check(id="interleaved.bubble", lesson="interleaved", kind=NUMBER, tolerance=0.01, settings={"p": 4, "m": 8, "v": 4},
          answer_fn=lambda: theory.interleaved_bubble_fraction(4, 8, 4)),
    Check(id="interleaved.messages", lesson="interleaved", kind=NUMBER, settings={"p": 4, "v": 4},
          answer_fn=lambda: messages_per_step("interleaved", 4, 4, 4) / 4),
    Check(id="interleaved.constraint", lesson="interleaved", kind=CHOICE, settings={},
          options=("m_mod_p", "p_mod_v", "m_ge_4p"), answer_fn=lambda: "m_mod_p"),
    Check(id="zero-bubble.third", lesson="zero-bubble", kind=NUMBER, tolerance=0.02, settings={"p": 4},
          answer_fn=lambda: theory.zb_h1_bubble_time(4, 1, 1, 1) / theory.one_f_one_b_bubble_time(4, 1, 1, 1)),
    Check(id="zero-bubble.defer", lesson="zero-bubble", kind=CHOICE, settings={}, options=("w", "i", "f"),
          answer_fn=lambda: "w"),
    Check(id="zero-bubble.h2_peak", lesson="zero-bubble", kind=NUMBER, settings={"p": 4, "m": 8},
          answer_fn=lambda: theory.peak_inflight("zb-h2", 4, 8, 0)),
    Check(id="playground.swapped", lesson="playground", kind=CHOICE, settings={"text": SWAPPED},
          options=("valid", "order", "deadlock"), answer_fn=lambda: _validation_outcome(SWAPPED)),
    Check(id="playground.crossed", lesson="playground", kind=CHOICE, settings={"text": CROSSED},
          options=("valid", "order", "deadlock"), answer_fn=lambda: _validation_outcome(CROSSED)),
)


def checks_for(lesson: str) -> tuple[Check, ...]:
    return tuple(c for c in CHECKS if c.lesson == lesson)


# ---- numbers as students type and read them ---------------------------------------------------

def parse_number(text: str) -> float:
    """A number as typed: "0.16", "16%", "3/19" or "3 / 19"; ValueError names what is accepted."""
    raw = (text or "").strip().replace(",", ".").replace("／", "/").replace("％", "%")
    try:
        if raw.endswith("%"):
            return float(raw[:-1]) / 100
        if "/" in raw:
            top, bottom = raw.split("/", 1)
            return float(top) / float(bottom)
        return float(raw)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"not a number: {text!r}") from None


def format_value(value: Value | None, exact: bool = False) -> str:
    """Whole numbers as such, others to three decimals; an ``exact`` value (a formula's or the
    simulator's on unit costs) as "3/19 ≈ 0.158" when a small fraction fits it."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if abs(value - round(value)) < 1e-9:
        return str(int(round(value)))
    fraction = Fraction(value).limit_denominator(100)
    if exact and abs(float(fraction) - value) < 1e-9:
        return f"{fraction.numerator}/{fraction.denominator} ≈ {value:.3f}"
    return f"{value:.3f}"


__all__ = ["CHECKS", "CHOICE", "Check", "NUMBER", "PREDICTIONS",
           "Prediction", "checks_for", "format_value", "messages_per_step", "most_devices_busy",
           "parse_number", "predictions_for", "simulated"]
