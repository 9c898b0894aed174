"""The course's questions: every answer is the engine's, at the student's own settings."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import pytest

from pipelab.engine.schedules import REGISTRY
from pipelab.lessons import LESSONS, Knobs
from pipelab.lessons.answer_kinds import CHOICE, NUMBER, is_right
from pipelab.lessons.numbers import format_value, parse_number
from pipelab.lessons.questions import all_checks, all_predictions, checks_for, predictions_for
from tests.fake_results import fake_memory, fake_metrics

QUESTIONS = {q.id: q for q in all_predictions()}
CHECKS_BY_ID = {c.id: c for c in all_checks()}


def knobs(schedule: str, p: int, m: int, v: int = 1) -> Knobs:
    return Knobs(schedule=schedule, stages=p, microbatches=m, chunks=v)


ANSWERS = [  # question            schedule        p   m  v  formula's answer
    ("gpipe.bubble",               "gpipe",        4, 16, 1, Fraction(3, 19)),
    ("gpipe.bubble",               "gpipe",        2,  8, 1, Fraction(1, 9)),
    ("gpipe.bubble",               "naive",        4,  1, 1, Fraction(3, 4)),
    ("naive.bubble",               "naive",        8,  1, 1, Fraction(7, 8)),
    ("naive.bubble",               "gpipe",        4,  8, 1, Fraction(3, 11)),
    ("naive.busy",                 "naive",        4,  8, 1, 1),
    ("naive.busy",                 "gpipe",        4,  8, 1, 4),
    ("naive.busy",                 "gpipe",        4,  2, 1, 2),
    ("gpipe.peak",                 "gpipe",        4, 16, 1, 16),
    ("pipedream.versions",         "pipedream",    4,  8, 1, 4),
    ("pipedream.versions",         "pipedream",    6, 12, 1, 6),
    ("pipedream.versions",         "pipedream-2bw", 4, 8, 1, 2),
    ("pipedream.versions",         "1f1b",         4,  8, 1, 1),
    ("pipedream.steady",           "pipedream",    4,  8, 1, "busy"),
    ("1f1b.peak",                  "1f1b",         4,  8, 1, 2),   # rank 2 holds p - 2
    ("1f1b.peak",                  "1f1b",         6, 24, 1, 4),
    ("1f1b.peak",                  "1f1b",         2,  8, 1, 1),   # p = 2: the last rank, 1
    ("1f1b.peak",                  "gpipe",        4,  8, 1, 8),
    ("1f1b.same_bubble",           "1f1b",         4,  8, 1, "same"),
    ("interleaved.messages",       "interleaved",  4,  8, 2, 14),  # 2(vp - 1)
    ("interleaved.messages",       "interleaved",  4,  8, 4, 30),
    ("interleaved.messages",       "1f1b",         4,  8, 1, 6),
    ("interleaved.ratio",          "interleaved",  4,  8, 2, Fraction(11, 19)),
    ("zero-bubble.share",          "zb-h1",        4,  8, 1, Fraction(1, 3)),
    ("zero-bubble.share",          "zb-h1",        6, 12, 1, Fraction(1, 3)),
    ("zero-bubble.peak",           "zb-h1",        4,  8, 1, 4),
    ("zero-bubble.peak",           "zb-h2",        4,  8, 1, 7),
    ("zero-bubble.peak",           "zb-v",         4,  8, 2, 8),
    ("zero-bubble.peak",           "zb-v",         4,  8, 1, 8),   # the page's v = 1: the V's own 2
    ("playground.bubble",          "interleaved",  4,  8, 2, Fraction(3, 19)),
    ("playground.bubble",          "zb-h1",        4,  8, 1, Fraction(1, 9)),
    ("playground.bubble",          "zb-v",         4,  8, 1, Fraction(3, 51)),
]


@pytest.mark.parametrize("qid, schedule, p, m, v, expected", ANSWERS)
def test_formula_answer_at_the_students_settings(qid, schedule, p, m, v, expected):
    question, k = QUESTIONS[qid], knobs(schedule, p, m, v)
    assert question.applies(k)
    answer = question.answer(k)
    if isinstance(expected, str):
        assert answer == expected
    else:
        assert answer == pytest.approx(float(expected))


@pytest.mark.parametrize("qid, schedule, p, m, v, expected", ANSWERS)
def test_simulator_agrees_with_the_formula_on_unit_costs(qid, schedule, p, m, v, expected):
    question, k = QUESTIONS[qid], knobs(schedule, p, m, v)
    simulated = question.simulated(k)
    if question.kind == CHOICE:
        assert simulated == question.answer(k)
    else:
        assert simulated == pytest.approx(float(question.answer(k)))


@pytest.mark.parametrize("qid, schedule", [
    ("gpipe.peak", "1f1b"),              # a question about GPipe's peak, on another schedule
    ("pipedream.versions", "zb-h1"),
    ("zero-bubble.peak", "interleaved"),
    ("playground.bubble", "custom"),      # no closed form for a hand-written schedule
])
def test_a_question_that_does_not_fit_the_settings_is_not_asked(qid, schedule):
    assert not QUESTIONS[qid].applies(Knobs(schedule=schedule, chunks=2 if schedule == "interleaved" else 1))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_bubble_formula_is_the_one_the_schedule_registered(name):
    question, k = QUESTIONS["playground.bubble"], knobs(name, 4, 8, 2)
    theory = REGISTRY[name].theory
    latex = None if theory.bubble_is_bound else theory.bubble_latex  # a bound is no answer (DualPipeV)
    assert question.applies(k) == (latex is not None)
    if latex is not None:
        assert question.formula_fn(k) == latex


def test_interleaved_ratio_is_not_asked_when_the_engine_rejects_m():
    assert not QUESTIONS["interleaved.ratio"].applies(knobs("interleaved", 4, 6, 2))


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_every_lesson_asks_one_or_two_predictions_and_two_or_three_checks(lesson):
    assert 1 <= len(predictions_for(lesson.slug)) <= 2
    assert 2 <= len(checks_for(lesson.slug)) <= 3
    # The lesson's own defaults get at least one question.
    assert any(q.applies(lesson.defaults) for q in predictions_for(lesson.slug))


def test_measured_answers_read_the_run():
    run = SimpleNamespace(metrics=fake_metrics(4, device_bubble_fraction=0.31, peak_inflight_per_device=(4, 3, 2, 1),
                                               messages_per_step=112.0),
                          memory={0: fake_memory(weight_versions=4)},
                          schedule=SimpleNamespace(name="pipedream", num_microbatches=8))
    k = knobs("1f1b", 4, 8)
    assert QUESTIONS["gpipe.bubble"].measured(run, k) == 0.31
    assert QUESTIONS["1f1b.peak"].measured(run, k) == 2
    assert QUESTIONS["pipedream.versions"].measured(run, k) == 4
    assert QUESTIONS["interleaved.messages"].measured(run, k) == 14
    assert QUESTIONS["interleaved.ratio"].measured(run, k) is None  # one run cannot show it
    fewer = SimpleNamespace(metrics=fake_metrics(1), memory={}, schedule=run.schedule)  # no device 2
    assert QUESTIONS["1f1b.peak"].measured(fewer, k) is None


ONE_RUN_CANNOT: set[str] = set()
"""Questions no run or comparison of their page answers. Lesson 4's "same bubble as GPipe's?"
was one until its card read the comparison (Run comparison runs GPipe beside 1F1B)."""


def test_a_card_reads_the_run_wherever_the_run_measured_it():
    """Issue 47: cards said "Measured: — not in one run" where the run had measured it (lesson 3's
    steady state: its verdict's "idle share in steady state"). Every question is answered by the
    run, or by the comparison the page runs, but those one run cannot answer."""
    unmeasured = {q.id for q in all_predictions() if q.measured_fn is None and q.compared_fn is None}
    assert unmeasured == ONE_RUN_CANNOT


@pytest.mark.parametrize("one_f, gpipe, option", [(0.30, 0.31, "same"), (0.30, 0.36, "smaller"),
                                                  (0.40, 0.30, "larger")])
def test_lesson_4_s_same_bubble_card_reads_the_comparison_as_its_verdict_does(one_f, gpipe, option):
    """Within the verdict's 0.05 the two bubbles are the same; past it, the card says which is smaller."""
    def ran(name, bubble):
        return SimpleNamespace(schedule=SimpleNamespace(name=name),
                               metrics=fake_metrics(4, device_bubble_fraction=bubble))
    compared = [("1F1B", ran("1f1b", one_f)), ("GPipe", ran("gpipe", gpipe))]
    assert QUESTIONS["1f1b.same_bubble"].measured(None, knobs("1f1b", 4, 8), compared) == option
    assert QUESTIONS["1f1b.same_bubble"].measured(None, knobs("1f1b", 4, 8)) is None  # one run: the card points on


@pytest.mark.parametrize("steady, option", [(0.07, "busy"), (0.20, "busy"), (0.45, "idle_half"), (0.9, "idle_most")])
def test_lesson_3_s_steady_card_reads_the_verdict_s_steady_idle_share(steady, option):
    run = SimpleNamespace(metrics=fake_metrics(4, device_steady_bubble_fraction=steady), memory={})
    assert QUESTIONS["pipedream.steady"].measured(run, knobs("pipedream", 4, 8)) == option


CHECK_ANSWERS = [  # check                    answer
    ("naive.idle",               Fraction(7, 8)),
    ("gpipe.bubble",             Fraction(3, 19)),
    ("gpipe.four_k",             Fraction(7, 39)),
    ("pipedream.versions",       5),
    ("pipedream.two_bw",         "2"),
    ("1f1b.rank0",               8),
    ("1f1b.gpipe",               32),
    ("interleaved.bubble",       Fraction(3, 35)),
    ("interleaved.messages",     30),
    ("zero-bubble.third",        Fraction(1, 3)),
    ("zero-bubble.h2_peak",      7),
    ("playground.swapped",       "order"),
    ("playground.crossed",       "deadlock"),
]


@pytest.mark.parametrize("cid, expected", CHECK_ANSWERS)
def test_check_answers_come_from_the_engine(cid, expected):
    answer = CHECKS_BY_ID[cid].answer()
    assert answer == (expected if isinstance(expected, str) else pytest.approx(float(expected)))


def test_choice_answers_are_among_the_options():
    lessons = {lesson.slug: lesson for lesson in LESSONS}
    for question in all_predictions():
        if question.kind == CHOICE:
            assert question.answer(lessons[question.lesson].defaults) in question.options, question.id
    for check in all_checks():
        if check.kind == CHOICE:
            assert check.answer() in check.options, check.id


@pytest.mark.parametrize("kind, value, answer, tolerance, right", [
    (NUMBER, 0.16, 3 / 19, 0.02, True),
    (NUMBER, 0.2, 3 / 19, 0.02, False),
    (NUMBER, 4, 4, 0.0, True),
    (NUMBER, 3, 4, 0.0, False),
    (CHOICE, "same", "same", 0.0, True),
    (CHOICE, "smaller", "same", 0.0, False),
])
def test_is_right(kind, value, answer, tolerance, right):
    assert is_right(kind, value, answer, tolerance) is right


@pytest.mark.parametrize("text, value", [("0.16", 0.16), ("3/19", 3 / 19), (" 3 / 19 ", 3 / 19), ("16%", 0.16),
                                         ("0,5", 0.5), ("4", 4.0), ("3／4", 0.75)])
def test_parse_number(text, value):
    assert parse_number(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "abc", "1/0", "3/"])
def test_parse_number_rejects_with_one_line(text):
    with pytest.raises(ValueError, match="not a number"):
        parse_number(text)


@pytest.mark.parametrize("value, exact, shown", [
    (3 / 19, True, "3/19 ≈ 0.158"),   # a formula's value
    (3 / 19, False, "0.158"),         # a measurement or a typed prediction
    (0.21, False, "0.210"),
    (4, True, "4"), (4.0, False, "4"), (0.1234567, True, "0.123"), (None, False, "—"), ("same", False, "same"),
])
def test_format_value(value, exact, shown):
    assert format_value(value, exact) == shown


def _ran(schedule, bubble, per_device=None, step_s=0.1):
    p = 4
    metrics = fake_metrics(p, device_bubble_fraction=bubble,
                           device_bubble_fraction_per_device=per_device or (bubble,) * p, device_step_time_s=step_s)
    return SimpleNamespace(schedule=SimpleNamespace(name=schedule), metrics=metrics, memory={})


@pytest.mark.parametrize("question, compared, expected", [
    # interleaved's bubble share of the step over 1F1B's, from the comparison Run ran side by side
    ("interleaved.ratio", [("this lesson", _ran("interleaved", 0.21)), ("1F1B", _ran("1f1b", 0.30))], 0.7),
    # ZB-H1's idle time on device 0 over 1F1B's: 0.1 x 90 ms against 0.3 x 100 ms
    ("zero-bubble.share", [("this lesson", _ran("zb-h1", 0.1, step_s=0.09)), ("1F1B", _ran("1f1b", 0.3)),
                           ("ZB-H2", _ran("zb-h2", 0.05))], 0.3),
])
def test_a_ratio_one_run_cannot_show_is_read_off_the_comparison(question, compared, expected):
    q, knobs = QUESTIONS[question], Knobs(stages=4, microbatches=8, chunks=2, schedule=compared[0][1].schedule.name)
    assert q.measured(compared[0][1], knobs) is None  # one run cannot show it
    assert q.measured(compared[0][1], knobs, compared) == pytest.approx(expected)
    # The lesson's own run as another schedule (ZB-V on lesson 6, say): not this ratio, no answer.
    assert q.measured(compared[0][1], knobs, compared[1:]) is None


def test_lesson_3_s_weight_versions_card_reads_one_count_at_p_6_m_8():
    """Issue 47: at p = 6, m = 8 the card read formula 6, simulator 4, measured 6. The simulator
    played one step, which ends before stage 0's stash fills (the first p forwards share one
    version, so it fills from 2(p - 1) micro-batches in all); the run plays its steps as one
    stream. The simulator now plays the run's steps too, and the why says when a run is too short."""
    from pipelab.lessons import get_lesson
    from pipelab.lessons.i18n import text
    question = QUESTIONS["pipedream.versions"]
    ran = get_lesson("pipedream").defaults.with_overrides({"stages": 6, "microbatches": 8})
    result = SimpleNamespace(memory={0: fake_memory(weight_versions=6)})  # what the run measured
    assert question.answer(ran) == question.simulated(ran) == question.measured(result, ran) == 6
    short = ran.with_overrides({"steps": 1})  # 8 micro-batches in all, under 2(p - 1) = 10
    assert question.simulated(short) == 4
    assert "2(p - 1)" in text("en", question.why, **question.context(ran))
    assert "2(p - 1)" in text("zh", question.why, **question.context(ran))
