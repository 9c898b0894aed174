"""What a student types reaches the page: predictions typed before Run count, and settings
that cannot run disable Run with the reason beside the field and beside Run (issue 26,
items 3 and 4), and lesson 1's and lesson 5's questions ask what the run measures."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from pipelab.engine.results.timeline import Event, Timeline
from pipelab.lessons import LESSONS, i18n
from pipelab.lessons.engine_answers import most_devices_busy
from pipelab.lessons.questions import all_predictions
from tests.app_pages import switch
from tests.fake_results import fake_metrics

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
PAGES = [lesson.slug for lesson in LESSONS]
"""Every lesson page's address (/<slug>), from the catalog."""


STARTED: list[str] = []


@pytest.fixture
def no_ranks(monkeypatch):
    """Run records what it would start instead of starting ranks."""
    STARTED.clear()
    monkeypatch.setattr("pipelab.app.runner.runs.start", lambda name, items, **how: STARTED.append(name) or False)
    return STARTED


def predict_then_run_page():
    """GPipe's prediction and its Run button as the lesson page wires them."""
    import streamlit as st

    from pipelab.app.screens import lesson_page
    from pipelab.app.views import course
    from pipelab.lessons import Knobs, get_lesson
    lesson = get_lesson("gpipe")
    knobs = Knobs(schedule="gpipe", stages=4, microbatches=16)
    lesson_page.run_controls("gpipe:main", "Run", lambda: [("gpipe", None)], primary=True,
                             before_start=lambda: course.lock_typed(lesson, knobs))
    course.prediction_form(lesson, knobs)
    if "fake_result" in st.session_state:
        course.prediction_report(lesson, knobs, st.session_state["fake_result"])


def interleaved_report_page():
    """Lesson 5's report at p = 4, m = 8, v = 2, on a fake run."""
    import streamlit as st

    from pipelab.app.views import course
    from pipelab.lessons import Knobs, get_lesson
    lesson = get_lesson("interleaved")
    knobs = Knobs(schedule="interleaved", stages=4, microbatches=8, chunks=2)
    course.prediction_form(lesson, knobs)
    if "fake_result" in st.session_state:
        course.prediction_report(lesson, knobs, st.session_state["fake_result"])


def fake_run(schedule: str, p: int, m: int, v: int = 1, **metrics) -> SimpleNamespace:
    """What prediction_report reads of a finished RunResult (engine/results/result.py)."""
    return SimpleNamespace(config=SimpleNamespace(schedule=schedule, stages=p, microbatches=m),
                           schedule=SimpleNamespace(name=schedule, chunks=v, num_microbatches=m),
                           metrics=fake_metrics(p, **{"peak_inflight_per_device": (m,) * p, **metrics}), memory={})


def page(fn) -> AppTest:
    at = AppTest.from_function(fn, default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    return at


def cells(at: AppTest) -> list[str]:
    """The report's cells (bold values under their captions), in page order."""
    return [m.value[2:-2] for m in at.markdown if re.fullmatch(r"\*\*[^*]+\*\*", m.value)]


# ---- item 3: a prediction typed before Run counts -------------------------------------------

@pytest.mark.slow
def test_a_prediction_typed_but_not_locked_in_is_locked_by_run(no_ranks):
    at = page(predict_then_run_page)
    at.text_input(key="gpipe:predict:gpipe.bubble").input("3/19")
    at.button(key="gpipe:main:start").click().run()
    assert not at.exception, at.exception
    assert no_ranks == ["gpipe:main"]
    assert any(c.value == "Your prediction: 0.158" for c in at.caption), "Run locked it in"
    at.session_state["fake_result"] = fake_run("gpipe", 4, 16, device_bubble_fraction=0.16)
    at.run()
    assert cells(at)[0] == "0.158", "the report's first cell is the typed prediction"
    assert any(s.value.startswith("Right.") for s in at.success)
    no_prediction = i18n.text("en", "report.no_prediction")
    bubble_box = [i.value for i in at.info if "m + p - 1 = 19" in i.value]
    assert not any(x.startswith(no_prediction) for x in bubble_box)


def test_a_bad_number_stops_run_and_says_so_beside_it(no_ranks):
    at = page(predict_then_run_page)
    at.text_input(key="gpipe:predict:gpipe.bubble").input("about a fifth")
    at.button(key="gpipe:main:start").click().run()
    assert no_ranks == []
    beside_run = [m.value for m in at.markdown if m.value.startswith(":red[")]
    assert beside_run == [':red[Not started: "about a fifth" is not a fraction from 0 to 1: '
                          'type e.g. 0.16, 3/19 or 16%. '
                          'Fix or clear your prediction, then press Run again.]']


def test_a_number_still_in_the_box_is_graded_not_called_missing():
    at = page(predict_then_run_page)
    at.session_state["fake_result"] = fake_run("gpipe", 4, 16, device_bubble_fraction=0.16)
    at.run()
    at.text_input(key="gpipe:predict:gpipe.bubble").input("0.5").run()  # typed after the run, never locked
    assert cells(at)[0] == "0.500"
    assert any(c.value == i18n.text("en", "report.unlocked") for c in at.caption)
    assert any(w.value.startswith("Not quite.") and "m + p - 1 = 19" in w.value for w in at.warning)
    assert not any("m + p - 1 = 19" in i.value for i in at.info), "not 'You did not predict this one'"


# ---- lesson 5: the question's quantity, both forms, never cut off ---------------------------

def test_lesson_5_grades_the_share_of_the_step_and_names_megatrons_form():
    at = page(interleaved_report_page)
    at.text_input(key="interleaved:predict:interleaved.ratio").input("0.5")  # 1/v: Megatron's ratio
    at.button(key="interleaved:predict:submit").click().run()
    at.session_state["fake_result"] = fake_run("interleaved", 4, 8, 2, device_bubble_fraction=0.1)
    at.run()
    assert not at.exception, at.exception
    # The formula's cell in full: st.metric cut it to "11/19 ≈ 0.…".
    assert "11/19 ≈ 0.579" in cells(at)
    note = [c.value for c in at.caption if c.value.startswith("Two forms of the same bubble.")]
    assert len(note) == 1 and "(p-1)/(vm)" in note[0] and "1/2 ≈ 0.500" in note[0] and "11/19 ≈ 0.579" in note[0]
    assert any(w.value.startswith("Not the quantity asked: 0.500 is the paper's form") for w in at.warning)


def test_the_ratio_question_has_its_note_in_both_languages():
    for q in all_predictions():
        if q.alternative_fn is not None:
            assert i18n.has("en", q.note) and i18n.has("zh", q.note)


# ---- lesson 1: the busiest moment counts forward and backward work --------------------------

def test_most_devices_busy_leaves_out_the_optimizer_update():
    # Device 1 updates (U) right after its backward while device 0 runs its own backward:
    # the naive schedule's measured step. One device computes F or B at a time.
    events = [Event(1, 1, "B", 0, 0.0, 1.0), Event(1, 1, "U", 0, 1.0, 1.5), Event(0, 0, "B", 0, 1.0, 2.0),
              Event(0, 0, "U", 0, 2.0, 2.5)]
    assert most_devices_busy(Timeline(2, events)) == 1
    # Two forwards at once do count: the function still sees overlap.
    overlapping = [Event(0, 0, "F", 1, 0.0, 1.0), Event(1, 1, "F", 0, 0.5, 1.5)]
    assert most_devices_busy(Timeline(2, overlapping)) == 2


# ---- item 4: an invalid setting disables Run, beside the field and beside Run ----------------

def lesson_page(slug: str, lang: str | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    if lang:
        at.query_params["lang"] = lang
    at.run()
    switch(at, slug)
    at.run()
    assert not at.exception, at.exception
    return at


def red_lines(at: AppTest) -> list[str]:
    return [m.value[len(":red["):-1] for m in at.markdown if m.value.startswith(":red[")]


@pytest.mark.parametrize("lang, knob, value, line", [
    ("en", "microbatches", 0, "micro-batches m must be a whole number ≥ 1, got 0"),
    ("en", "stages", 100, "stages p (devices) is at most 8 on this server, got 100"),
    ("zh", "microbatches", 0, "微批次数 m 必须是 ≥ 1 的整数，当前为 0"),
])
def test_an_invalid_setting_disables_run_and_says_why_beside_field_and_run(lang, knob, value, line):
    at = lesson_page("naive", lang)
    prompt_before = at.text_input(key="naive:predict:naive.bubble").label
    at.text_input(key=f"naive:knob:{knob}").set_value(str(value)).run()
    assert not at.exception, at.exception
    assert at.button(key="naive:main:start").disabled
    beside_run = i18n.text(lang, "page.run_disabled", reason=line)
    # One line under the field, then one beside Run and beside the comparison's button.
    assert red_lines(at) == [line, beside_run, beside_run]
    assert at.button(key="naive:compare:start").disabled
    # The knob's label, never its field name.
    assert not any("microbatches" in x for x in red_lines(at))
    # Under its own input, in its column: the next element after the field.
    column = next(list(c.children.values()) for c in at.columns
                  if any(getattr(k, "key", None) == f"naive:knob:{knob}" for k in c.children.values()))
    field = next(i for i, k in enumerate(column) if getattr(k, "key", None) == f"naive:knob:{knob}")
    assert column[field + 1].value == f":red[{line}]"
    # The questions keep the last settings that can run (the defaults here), and say so.
    assert at.text_input(key="naive:predict:naive.bubble").label == prompt_before
    assert any(c.value.startswith(i18n.text(lang, "predict.last_valid", settings="")[:20]) for c in at.caption)


def line_under(at: AppTest, key: str) -> str | None:
    """The red line right under the field ``key`` in its column, or None."""
    column = next(list(c.children.values()) for c in at.columns
                  if any(getattr(k, "key", None) == key for k in c.children.values()))
    field = next(i for i, k in enumerate(column) if getattr(k, "key", None) == key)
    below = getattr(column[field + 1], "value", "") if field + 1 < len(column) else ""
    return below[len(":red["):-1] if isinstance(below, str) and below.startswith(":red[") else None


@pytest.mark.parametrize("typed, line", [
    ("2.5", "micro-batches m must be a whole number ≥ 1, got '2.5'"),  # not rounded to 2
    ("1e3", "micro-batches m must be a whole number ≥ 1, got '1e3'"),  # not read as 1
    ("", "micro-batches m is empty: type a whole number ≥ 1"),         # not put back to 8
    ("eight", "micro-batches m must be a whole number ≥ 1, got 'eight'"),
])
def test_a_value_the_field_cannot_take_is_refused_under_it_never_changed(typed, line):
    at = lesson_page("naive")
    at.text_input(key="naive:knob:microbatches").input(typed).run()
    assert not at.exception, at.exception
    assert at.text_input(key="naive:knob:microbatches").value == typed, "the field keeps what was typed"
    assert line_under(at, "naive:knob:microbatches") == line
    assert at.button(key="naive:main:start").disabled


def test_an_error_two_fields_cause_stands_under_the_one_just_edited():
    """Lesson 5: p x v stages need as many layers. Raising v says it under v; lowering the
    layers says it under the layers."""
    at = lesson_page("interleaved")
    at.text_input(key="interleaved:knob:chunks").input("5").run()  # 4 x 5 = 20 stages, 16 layers
    assert "need at least as many layers" in (line_under(at, "interleaved:knob:chunks") or "")
    assert line_under(at, "interleaved:knob:layers") is None
    at.text_input(key="interleaved:knob:chunks").input("2").run()
    assert red_lines(at) == []
    at.text_input(key="interleaved:knob:layers").input("6").run()  # 4 x 2 = 8 stages, 6 layers
    assert "need at least as many layers" in (line_under(at, "interleaved:knob:layers") or "")
    assert line_under(at, "interleaved:knob:chunks") is None


def test_run_is_enabled_again_once_the_setting_is_fixed():
    at = lesson_page("naive")
    at.text_input(key="naive:knob:microbatches").set_value("0").run()
    at.text_input(key="naive:knob:microbatches").set_value("4").run()
    assert not at.button(key="naive:main:start").disabled
    assert red_lines(at) == []
    assert "m = 4" in at.text_input(key="naive:predict:naive.bubble").label


@pytest.mark.slow
def test_lesson_1s_busiest_moment_agrees_on_a_real_naive_run():
    """Formula, simulator and a measured naive step all say 1: each device's update after its
    last backward overlaps the previous device's backward (it made the measured count 2 or 3)."""
    from pipelab.lessons import Knobs
    from tests.engine_runs import measured
    question = next(q for q in all_predictions() if q.id == "naive.busy")
    knobs = Knobs(schedule="naive", stages=4, microbatches=8)
    result = measured("naive", 4, 8)
    assert any(e.kind == "U" for e in result.timeline.events), "the run has updates to leave out"
    assert question.answer(knobs) == question.simulated(knobs) == question.measured(result, knobs) == 1


def test_lesson_6s_table_says_nothing_about_settings_that_cannot_run():
    at = lesson_page("zero-bubble")
    at.text_input(key="zero-bubble:knob:microbatches").set_value("0").run()
    assert not at.exception, at.exception
    # No "DualPipeV needs m >= 8, got 0" built from the invalid m: only the settings' reason.
    assert not [i.value for i in at.info if "got 0" in i.value or "m = 0" in i.value]
    assert at.button(key="zero-bubble:main:start").disabled


def test_chinese_feedback_runs_its_sentences_on():
    from test_course_pages import course_page, fake_gpipe_run, submit
    at = course_page("zh")
    at.text_input(key="gpipe:predict:gpipe.bubble").input("3/19")
    submit(at, "提交我的预测")
    at.session_state["fake_result"] = fake_gpipe_run()
    at.run()
    boxes = [b.value for b in [*at.success, *at.info, *at.warning]]
    assert any(b.startswith("答对了。") for b in boxes)
    assert not [b for b in boxes if "。 " in b], "no space after a Chinese full stop"


def test_lesson_5s_message_question_names_the_compare_tables_ratio():
    """Claim, question and measurement name one quantity: messages grow (vp-1)/(p-1) times."""
    from pipelab.lessons import Knobs, get_lesson
    q = next(q for q in all_predictions() if q.id == "interleaved.messages")
    context = q.context(Knobs(schedule="interleaved", stages=4, microbatches=8, chunks=2))
    why = i18n.text("en", q.why, **context)
    assert "2(vp - 1) = 14 messages" in why and "2(p - 1) = 6" in why and "(vp - 1)/(p - 1)" in why
    assert "(vp-1)/(p-1) times as many" in get_lesson("interleaved").claim
