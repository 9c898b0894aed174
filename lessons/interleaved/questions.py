"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.engine.schedules import chunks_for, get_schedule_info
from pipelab.engine.theory import formulas as theory
from pipelab.lessons.answer_kinds import CHOICE, COUNT, FRACTION
from pipelab.lessons.engine_answers import boundary_messages_per_microbatch, messages_per_step, simulated
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.predictions import Prediction, result_of
from pipelab.lessons.self_checks import Check

from .claim import bubble_ratio


def _interleaved_ratio_formula(k: Knobs) -> float:
    v = chunks_for(k.schedule, k.chunks)
    return (theory.formula_bubble_fraction("interleaved", k.stages, k.microbatches, v)
            / theory.gpipe_bubble_fraction(k.stages, k.microbatches))


def _interleaved_ratio_simulated(k: Knobs) -> float:
    mine = simulated("interleaved", k.stages, k.microbatches, chunks_for(k.schedule, k.chunks)).bubble_fraction()
    return mine / simulated("1f1b", k.stages, k.microbatches).bubble_fraction()


def _messages_formula(k: Knobs) -> int:
    return boundary_messages_per_microbatch(k.stages, chunks_for(k.schedule, k.chunks))


def _interleaved_ratio_measured(compared: list, k: Knobs) -> float | None:
    """Interleaved's bubble share of the step over 1F1B's, as the comparison measured them: the
    figure the verdict judges (claim.bubble_ratio), so the card and the verdict say one number."""
    ours, other = result_of(compared, "interleaved"), result_of(compared, "1f1b")
    if ours is None or other is None:
        return None
    return bubble_ratio(ours, other)


def _messages_measured(result, k: Knobs) -> float:
    return result.metrics.messages_per_step / result.schedule.num_microbatches


PREDICTIONS: tuple[Prediction, ...] = (
    Prediction(
        id="messages", kind=COUNT,
        answer_fn=_messages_formula,
        simulated_fn=lambda k: messages_per_step(k.schedule, k.stages, k.microbatches,
                                                 chunks_for(k.schedule, k.chunks)) / k.microbatches,
        formula_fn=lambda k: r"2(vp-1)" if get_schedule_info(k.schedule).chunks.takes_chunks else r"2(p-1)",
        measured_fn=_messages_measured,
        applies_fn=lambda k: k.schedule in ("interleaved", "1f1b")),
    Prediction(
        id="ratio", kind=FRACTION, tolerance=0.05,
        answer_fn=_interleaved_ratio_formula,
        simulated_fn=_interleaved_ratio_simulated,
        formula_fn=lambda k: r"\frac{p-1}{vm+p-1} \Big/ \frac{p-1}{m+p-1} = \frac{m+p-1}{vm+p-1}",
        # Megatron (arXiv 2104.04473, section 2.2) divides the bubble by the ideal time,
        # (p-1)/(vm) against (p-1)/m: exactly 1/v. The page asks and measures the share of
        # the step, which is what a run's bubble fraction is.
        compared_fn=_interleaved_ratio_measured,
        alternative_fn=lambda k: 1 / chunks_for(k.schedule, k.chunks),
        applies_fn=lambda k: k.microbatches % k.stages == 0),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="bubble", kind=FRACTION, tolerance=0.01, settings={"p": 4, "m": 8, "v": 4},
          answer_fn=lambda: theory.interleaved_bubble_fraction(4, 8, 4)),
    Check(id="messages", kind=COUNT, settings={"p": 4, "v": 4},
          answer_fn=lambda: messages_per_step("interleaved", 4, 4, 4) / 4),
    Check(id="constraint", kind=CHOICE, settings={},
          options=("m_mod_p", "p_mod_v", "m_ge_4p"), answer_fn=lambda: "m_mod_p"),
)
"""Asked at the end of the page, in page order."""
