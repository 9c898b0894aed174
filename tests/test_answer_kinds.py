"""Answers that cannot be impossible: a prediction or a check is read by its kind (a fraction
from 0 to 1, a whole count) and refused, with one line naming the constraint, before it is
locked in or graded; each box's example is of its own kind; feedback never says its verdict twice."""

from __future__ import annotations

import re

import pytest
from test_course_pages import course_page, markdown, submit

from pipelab.app.views.course import _latex_value, formula_line, with_verdict
from pipelab.lessons import LESSONS, i18n
from pipelab.lessons.answer_kinds import CHOICE, COUNT, FRACTION, NUMBER, NUMERIC, fits, is_numeric
from pipelab.lessons.numbers import read_answer
from pipelab.lessons.questions import all_checks, all_predictions

LANGS = ("en", "zh")


# ---- the kinds ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, typed", [
    (FRACTION, "1.5"), (FRACTION, "-1"), (FRACTION, "150%"), (FRACTION, "19/3"), (FRACTION, "nan"), (FRACTION, "inf"),
    (COUNT, "-3"), (COUNT, "2.5"), (COUNT, "16%"), (COUNT, "3/19"), (COUNT, "inf"),
    (NUMBER, "nan"), (NUMBER, "abc"), (FRACTION, "about a fifth"),
])
def test_an_impossible_answer_is_refused(kind, typed):
    with pytest.raises(ValueError):
        read_answer(kind, typed)


@pytest.mark.parametrize("kind, typed, value", [
    (FRACTION, "0", 0.0), (FRACTION, "1", 1.0), (FRACTION, "3/19", 3 / 19), (FRACTION, "16%", 0.16),
    (FRACTION, "0,5", 0.5), (COUNT, "0", 0.0), (COUNT, "4", 4.0), (COUNT, " 4.0 ", 4.0), (COUNT, "8/2", 4.0),
    (NUMBER, "-2.5", -2.5),
])
def test_a_possible_answer_is_read(kind, typed, value):
    assert read_answer(kind, typed) == pytest.approx(value)


SHARES = ("bubble", "idle", "four_k", "third", "share", "ratio")
"""Question ids (after the lesson's name) whose answer is a share of a whole: 0 to 1."""
COUNTS = ("peak", "busy", "versions", "messages", "rank0", "gpipe", "h2_peak")
"""Question ids whose answer is a whole count."""


def test_every_typed_question_has_a_kind_its_answer_fits():
    """Each box knows what it may hold (a bubble a fraction, a peak a count), and the formula's
    own answer at the lesson's settings is never one the box refuses."""
    lessons = {lesson.slug: lesson for lesson in LESSONS}
    for q in all_predictions():
        if q.kind == CHOICE:
            continue
        own = q.id.split(".")[-1]
        assert q.kind == (FRACTION if own in SHARES else COUNT if own in COUNTS else q.kind), q.id
        assert q.kind in NUMERIC, q.id
        knobs = lessons[q.lesson].defaults
        if q.applies(knobs):
            assert fits(q.kind, q.answer(knobs)), (q.id, q.answer(knobs))
            assert fits(q.kind, q.simulated(knobs)), (q.id, q.simulated(knobs))
    for c in all_checks():
        if c.kind != CHOICE:
            own = c.id.split(".")[-1]
            assert c.kind == (FRACTION if own in SHARES else COUNT if own in COUNTS else c.kind), c.id
            assert c.kind in NUMERIC and fits(c.kind, c.answer()), (c.id, c.answer())


@pytest.mark.parametrize("lang", LANGS)
def test_each_kind_has_its_own_help_and_one_line_refusal(lang):
    for kind in NUMERIC:
        help_text, bad = i18n.text(lang, f"predict.help.{kind}"), i18n.text(lang, f"predict.bad.{kind}", text="x")
        assert "\n" not in help_text and "\n" not in bad
        if kind == COUNT:  # a whole number's example, never a fraction's or a percentage's
            assert not re.search(r"\d/\d|%|0\.\d", help_text + bad), (help_text, bad)
            assert "4" in help_text and "4" in bad
        if kind == FRACTION:  # names the range it takes
            assert "0" in bad and "1" in bad and "3/19" in help_text
        if lang == "zh":
            assert bad.startswith("“x”") and "：" in bad and bad.endswith("。"), bad
            assert not re.search(r"[:,;]", help_text + bad.replace("“x”", "")), (help_text, bad)


# ---- on the page ----------------------------------------------------------------------------------

@pytest.mark.parametrize("lang, box, typed, key", [
    ("en", "gpipe.bubble", "1.5", "predict.bad.fraction"),
    ("en", "gpipe.bubble", "-1", "predict.bad.fraction"),
    ("en", "gpipe.peak", "-3", "predict.bad.count"),
    ("en", "gpipe.peak", "2.5", "predict.bad.count"),
    ("zh", "gpipe.bubble", "1.5", "predict.bad.fraction"),
    ("zh", "gpipe.peak", "2.5", "predict.bad.count"),
])
def test_an_impossible_prediction_is_not_locked_in(lang, box, typed, key):
    at = course_page(lang)
    at.text_input(key=f"gpipe:predict:{box}").input(typed)
    submit(at, i18n.text(lang, "predict.submit"))
    assert [e.value for e in at.error] == [i18n.text(lang, key, text=typed)]
    assert "THEORY PREVIEW" not in markdown(at), "nothing was locked in"


def test_a_count_above_what_the_settings_allow_is_not_locked_in():
    """GPipe's device 0 holds at most the m micro-batches of a step: m + 1 is refused, naming m
    (the page's m = 16, test_course_pages.gpipe_course_page)."""
    at = course_page()
    m = 16
    at.text_input(key="gpipe:predict:gpipe.peak").input(str(m + 1))
    submit(at, i18n.text("en", "predict.submit"))
    reason = i18n.text("en", "predict.most.microbatches", m=m)
    assert [e.value for e in at.error] == [i18n.text("en", "predict.bad.at_most", text=str(m + 1), most=m,
                                                     reason=reason)]
    assert "THEORY PREVIEW" not in markdown(at), "nothing was locked in"
    at.text_input(key="gpipe:predict:gpipe.peak").input(str(m))
    submit(at, i18n.text("en", "predict.submit"))
    assert not at.error and "THEORY PREVIEW" in markdown(at)


@pytest.mark.parametrize("qid, settings, most, reason", [
    ("naive.busy", {"schedule": "gpipe", "stages": 4, "microbatches": 8}, 4, "predict.most.devices"),
    ("gpipe.peak", {"schedule": "gpipe", "stages": 2, "microbatches": 6}, 6, "predict.most.microbatches"),
    ("1f1b.peak", {"schedule": "1f1b", "stages": 4, "microbatches": 8}, 8, "predict.most.microbatches"),
    ("zero-bubble.peak", {"schedule": "zb-v", "stages": 4, "microbatches": 8}, 16, "predict.most.visits"),
    ("pipedream.versions", {"schedule": "pipedream", "stages": 4, "microbatches": 8}, 4, "predict.most.versions"),
])
def test_a_count_knows_the_most_it_can_be(qid, settings, most, reason):
    """The bound never refuses the formula's or the simulator's own answer."""
    q = next(q for q in all_predictions() if q.id == qid)
    knobs = lesson_knobs(q.lesson).with_overrides(settings)
    assert q.at_most(knobs) == (most, reason)
    assert q.answer(knobs) <= most and q.simulated(knobs) <= most


def test_no_formula_answer_is_above_its_bound_at_any_lesson_default():
    for q in all_predictions():
        knobs = lesson_knobs(q.lesson)
        if q.at_most(knobs) is not None and q.applies(knobs):
            assert q.answer(knobs) <= q.at_most(knobs)[0], q.id


def lesson_knobs(slug: str):
    return next(lesson for lesson in LESSONS if lesson.slug == slug).defaults


def test_each_box_shows_the_example_of_its_kind():
    at = course_page()
    assert at.text_input(key="gpipe:predict:gpipe.bubble").help == i18n.text("en", "predict.help.fraction")
    assert at.text_input(key="gpipe:predict:gpipe.peak").help == i18n.text("en", "predict.help.count")
    assert at.text_input(key="gpipe:check:gpipe.bubble").help == i18n.text("en", "predict.help.fraction")


def test_an_impossible_check_answer_is_refused_not_graded():
    at = course_page()
    at.text_input(key="gpipe:check:gpipe.bubble").input("1.5")
    submit(at, "Check")
    assert [e.value for e in at.error] == [i18n.text("en", "predict.bad.fraction", text="1.5")]
    assert not any(w.value.startswith("Not quite.") for w in at.warning)


# ---- feedback says its verdict once ----------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
def test_feedback_never_says_its_verdict_twice(lang):
    own = i18n.text(lang, "check.own_verdicts")
    verdicts = {True: i18n.text(lang, "check.right"), False: i18n.text(lang, "check.wrong")}
    # Each verdict word, and the lesson feedback's own openers, as they start a sentence.
    words = {v.rstrip(".。") for v in verdicts.values()} | {o.rstrip(":：。") for o in own.split("|")}
    alternatives = "|".join(map(re.escape, words))
    twice = re.compile(rf"^(?:{alternatives})[.。:：]\s*(?:{alternatives})[.。:：]")
    for c in all_checks():
        for right, verdict in verdicts.items():
            feedback = i18n.text(lang, c.right if right else c.wrong, **c.context())
            said = with_verdict(verdict, feedback, own)
            assert not twice.match(said), said
            assert said.endswith(feedback), "the lesson's own words are kept whole"
    for q in all_predictions():  # a prediction's "Right." before its why sentence
        why = i18n.text(lang, q.why)
        assert not twice.match(with_verdict(i18n.text(lang, "report.right"), why, own)), why


def test_a_verdict_is_dropped_only_where_the_feedback_has_its_own():
    own = "Right:|Yes:"
    assert with_verdict("Right.", "Right: it walks in groups of p.", own) == "Right: it walks in groups of p."
    assert with_verdict("Right.", "Yes: memory, not speed.", own) == "Yes: memory, not speed."
    assert with_verdict("Right.", "2(vp - 1) = 6.", own) == "Right. 2(vp - 1) = 6."
    assert with_verdict("答对了。", "对：它以 p 个微批次为一组推进。", "对：") == "对：它以 p 个微批次为一组推进。"
    assert with_verdict("答对了。", "2(vp - 1) = 6。", "对：") == "答对了。2(vp - 1) = 6。"


def test_is_numeric_covers_every_typed_kind():
    assert all(is_numeric(kind) for kind in NUMERIC) and not is_numeric(CHOICE)


# ---- the formula line under each prediction -----------------------------------------------------

@pytest.mark.parametrize("formula, value, shown", [
    ("p - r", "4", "p - r = 4"),  # a formula, then its value at the run's settings
    ("1", "1", "1"),              # the number itself: "1 = 1" said nothing
    ("1F1B", None, "1F1B"),       # a choice: no value
])
def test_the_formula_line_gives_a_value_only_where_it_adds_one(formula, value, shown):
    assert formula_line(formula, value) == shown


def test_no_prediction_at_any_lesson_default_reads_a_number_equal_to_itself():
    for q in all_predictions():
        knobs = lesson_knobs(q.lesson)
        formula = q.formula_fn(knobs) if q.applies(knobs) else None
        if formula and q.kind != CHOICE:
            line = formula_line(formula, _latex_value(q.answer(knobs)))
            left, _, right = line.partition(" = ")
            assert left.strip() != right.strip(), (q.id, line)
