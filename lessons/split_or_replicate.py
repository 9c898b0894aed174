"""The section "split or replicate" (PipeDream, arXiv 1806.03377, section 3.1): a stage much heavier than the
rest, should it be cut or given several workers? Its verdict, table rows and answers, from the planner's plans
and the runs that played them.

Plain Python, no Streamlit, no torch: a plan is anything with ``config``, ``stage_layers``, ``step_s`` and
``throughput`` (engine/theory/planner.py Plan), a run anything with ``config.microbatches`` and
``metrics.device_step_time_s`` (and, where the runs took turns in one launch, the per-step figures
engine/runtime/paired.py pairs), so tests pass fakes. Texts: ``extras.split_*`` in lessons/i18n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelab.engine.runtime.paired import paired_ratio
from pipelab.engine.runtime.planned_runs import CHOSEN, REPLICATED, STRAIGHT
from pipelab.lessons.i18n import text
from pipelab.lessons.judging import STEP_GAIN, against, status_of
from pipelab.lessons.verdict import RATIO_NOISE, RATIO_TOLERANCE, speaking

ROLES = ("straight", "replicated", "chosen")
"""Each plan's name in the catalogs: ``extras.split_role.<role>``."""

FASTER_REPLICATED, FASTER_STRAIGHT, ABOUT_EVEN = "replicated", "straight", "even"
"""What the planner predicts of the two: the replicated configuration's throughput more than STEP_GAIN above
the straight pipeline's, more than STEP_GAIN below it, or within it."""


def step_s(result) -> float:
    """A run's step, median over its measured steps, on the device clock."""
    return result.metrics.device_step_time_s


def throughput(result) -> float:
    """Micro-batches per second on the device clock: the step's global batch over its step."""
    return result.config.microbatches / step_s(result)


def throughput_ratio(straight, replicated) -> tuple[float, float, float]:
    """The replicated run's throughput over the straight one's: (median, lowest, highest) over pairs of steps
    where they took turns in one launch. Both train the same global batch, so it is the straight step over
    the replicated one (engine/runtime/paired.py paired_ratio)."""
    return paired_ratio(straight, replicated, step_s)


def expectation(predicted_ratio: float) -> str:
    """What the planner's throughput ratio (replicated over straight) predicts of the two runs."""
    if predicted_ratio > 1 + STEP_GAIN:
        return FASTER_REPLICATED
    return FASTER_STRAIGHT if predicted_ratio < 1 - STEP_GAIN else ABOUT_EVEN


def faster(ratio: float) -> str | None:
    """The prediction card's answer, as the verdict prints the ratio: which ran faster, or None for a tie."""
    shown = round(ratio, 2)
    return None if shown == 1.0 else FASTER_REPLICATED if shown > 1 else FASTER_STRAIGHT


@dataclass(frozen=True)
class SplitVerdict:
    status: str
    """pipelab.lessons.verdict HOLDS, NOISE or FAILS: does the planner's ranking of the two hold in the runs?"""
    text: str
    """One sentence (two where it holds within noise: the band it allowed)."""
    ratio: tuple[float, float, float]
    """The replicated throughput over the straight one, measured: (median, lowest, highest) over pairs of steps."""
    predicted: float
    """The planner's ratio."""
    expected: str
    """FASTER_REPLICATED, FASTER_STRAIGHT or ABOUT_EVEN."""


def _judged(expected: str, ratio: float):
    """The measured ratio against the planner's ranking, as printed (two decimals), RATIO_NOISE allowed beyond."""
    if expected == FASTER_REPLICATED:
        return against(ratio, 1.0, RATIO_NOISE, at_most=False, strict=True, digits=2)
    if expected == FASTER_STRAIGHT:
        return against(ratio, 1.0, RATIO_NOISE, strict=True, digits=2)
    return against(abs(ratio - 1.0), RATIO_TOLERANCE, RATIO_NOISE, digits=2)


def ratio_text(ratio: tuple[float, float, float], lang: str = "en") -> str:
    """"1.19x (1.13 – 1.20)": the median over pairs of steps and their spread; "1.19x" for runs made apart."""
    value = text(lang, "extras.split_ratio", value=f"{ratio[0]:.2f}")
    if ratio[1] == ratio[2]:
        return value
    return text(lang, "verdict.spread", value=value, low=f"{ratio[1]:.2f}", high=f"{ratio[2]:.2f}")


def verdict(plans: Sequence, runs: Sequence, lang: str = "en", lesson: str = "pipedream") -> SplitVerdict:
    """The planner's ranking of the straight pipeline and the replicated configuration (``plans`` and ``runs``
    in the order STRAIGHT, REPLICATED), against their measured throughputs; ``lesson``: whose words say the band."""
    straight, replicated = runs[STRAIGHT], runs[REPLICATED]
    ratio = throughput_ratio(straight, replicated)
    predicted = plans[REPLICATED].throughput / plans[STRAIGHT].throughput
    expected = expectation(predicted)
    with speaking(lang, lesson):
        judged = _judged(expected, ratio[0])
        said = text(lang, f"extras.split_said.{expected}.{'holds' if judged.ok else 'not'}",
                    replicated=plans[REPLICATED].config, straight=plans[STRAIGHT].config,
                    ratio=ratio_text(ratio, lang),
                    predicted=f"{predicted:.2f}", replicated_tp=f"{throughput(replicated):.0f}",
                    straight_tp=f"{throughput(straight):.0f}", tolerance=f"{RATIO_TOLERANCE:.2f}")
        said = judged.after(said)
    return SplitVerdict(status_of(judged.ok, judged.near), said, ratio, predicted, expected)


def roles_of(ran: Sequence[int], run: int, lang: str) -> str:
    """The names of the plans a run plays (several where the planner chose one of the other two)."""
    return text(lang, "results.list_sep").join(text(lang, f"extras.split_role.{ROLES[i]}")
                                               for i, index in enumerate(ran) if index == run)


def table_rows(plans: Sequence, ran: Sequence[int], runs: Sequence, lang: str = "en") -> list[dict]:
    """One row per run: the plans it plays, their workers and layers per stage, and the planner's throughput
    beside the measured one (device clock), with how far off the prediction was."""
    def col(name: str) -> str:
        return text(lang, f"extras.split_col.{name}")
    rows = []
    for run in sorted(set(ran)):
        plan, result = plans[ran.index(run)], runs[run]
        off = (throughput(result) - plan.throughput) / plan.throughput
        rows.append({col("plan"): roles_of(ran, run, lang), col("workers"): plan.config,
                     col("layers"): "-".join(map(str, plan.stage_layers)),
                     col("tp_predicted"): round(plan.throughput, 1), col("tp_measured"): round(throughput(result), 1),
                     col("off"): f"{off:+.0%}"})
    return rows


def planner_line(plans: Sequence, runs: Sequence, ran: Sequence[int], link, lang: str = "en") -> str:
    """What the planner chose on this host's profile and link, and what its choice ran at."""
    chosen, result = plans[CHOSEN], runs[ran[CHOSEN]]
    name = chosen.config if len(chosen.stage_layers) > 1 else text(lang, "extras.split_whole", chosen=chosen.config)
    off = (throughput(result) - chosen.throughput) / chosen.throughput  # as the table's "off" column says it
    said = text(lang, "extras.split_planner", chosen=name, layers="-".join(map(str, chosen.stage_layers)),
                predicted=f"{chosen.throughput:.0f}", measured=f"{throughput(result):.0f}", off=f"{off:+.0%}",
                bandwidth=f"{link.bandwidth_bytes_per_s / 1e9:.2f}", latency=f"{link.latency_s * 1e6:.0f}")
    # A plan that ran faster than the planner's choice is said (the walk found the choice's 126
    # beside 2-1-1's 140 with no word that the choice lost on this host).
    others = [(throughput(runs[ran[i]]), plans[i].config) for i in range(len(plans))
              if i != CHOSEN and ran[i] != ran[CHOSEN]]
    best = max(others, default=None)
    if best is not None and best[0] > throughput(result) * (1 + BEATEN):
        said += text(lang, "extras.split_planner_beaten", other=best[1], other_measured=f"{best[0]:.0f}",
                     measured=f"{throughput(result):.0f}")
    return said


BEATEN = 0.03
"""Another plan's measured throughput this much above the planner's choice's is said to beat it:
the 3 % within which two runs of one setting tie on this host."""


def prediction_feedback(predicted: str, ratio: float, lang: str = "en") -> tuple[bool | None, str]:
    """(right or not, None for a tie; the sentence) for the card's answer ``predicted`` (FASTER_STRAIGHT or
    FASTER_REPLICATED) against the measured ratio."""
    ran = faster(ratio)
    you = text(lang, f"extras.split_short.{predicted}")
    if ran is None:
        return None, text(lang, "extras.split_feedback.tie", you=you, ratio=f"{ratio:.2f}")
    return ran == predicted, text(lang, f"extras.split_feedback.{'right' if ran == predicted else 'wrong'}", you=you,
                                  ran=text(lang, f"extras.split_short.{ran}"), ratio=f"{ratio:.2f}")


QUESTION_OPTIONS = ("turns", "no_reduce", "messages")
"""The question after the run: why 2-1-1 beats the straight pipeline here; ``turns`` is right."""
QUESTION_ANSWER = "turns"


__all__ = ["ABOUT_EVEN", "CHOSEN", "FASTER_REPLICATED", "FASTER_STRAIGHT", "QUESTION_ANSWER", "QUESTION_OPTIONS",
           "REPLICATED", "ROLES", "STRAIGHT", "SplitVerdict", "expectation", "faster", "planner_line",
           "prediction_feedback", "ratio_text", "roles_of", "step_s", "table_rows", "throughput", "throughput_ratio",
           "verdict"]
