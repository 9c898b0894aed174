"""The active course on a lesson page: predict before Run, compare after, check yourself.

Questions and their answers are data (each lesson's folder, lessons/<name>/questions.py); this module only draws them
and keeps the student's answers in ``st.session_state`` for the browser session:

- ``course:predictions`` {lesson slug: {"knobs": Knobs, "values": {question id: value}}}
- ``course:revealed``    {lesson slug, ...}: theory shown without a prediction
- ``course:checks``      {lesson slug: {check id: answered right}}
- ``course:checked``     {lesson slug: every check answered right}: the course progress, read once
  per session from the server's store (app/runner/storage.py, under this browser's id), which keeps
  it across reloads as it keeps My runs
- ``course:valid_knobs`` {lesson slug: Knobs}: the last settings that could run, which the
  questions ask about while the form holds settings that cannot

A prediction counts once locked in, by its own button or by Run, which locks in whatever the
boxes hold (lock_typed): a number typed and followed by Run is never lost.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import streamlit as st

from pipelab.app import browser, i18n
from pipelab.app.i18n import t
from pipelab.app.runner.runs import get_store
from pipelab.engine.schedules import CUSTOM, chunked_schedules, chunks_for
from pipelab.lessons import LESSONS, Knobs, Lesson, predictions
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.answer_kinds import CHOICE, is_numeric
from pipelab.lessons.numbers import format_value, read_answer
from pipelab.lessons.predictions import Prediction
from pipelab.lessons.questions import checks_for, predictions_for
from pipelab.lessons.self_checks import Check

_PREDICTIONS = "course:predictions"
_REVEALED = "course:revealed"
_CHECKS = "course:checks"
_EDITING = "course:editing"
_CHECKED = "course:checked"
_VALID = "course:valid_knobs"
ELSEWHERE = (predictions.ELSEWHERE_RIGHT, predictions.ELSEWHERE_WRONG, predictions.ELSEWHERE_UNGRADED)


# ---- state ----------------------------------------------------------------------------------

def _state(name: str, default):
    if name not in st.session_state:
        st.session_state[name] = default
    return st.session_state[name]


def saved_prediction(slug: str) -> dict | None:
    """{"knobs": Knobs, "values": {question id: value}} the student locked in, or None."""
    return _state(_PREDICTIONS, {}).get(slug)


def stored_prediction(slug: str) -> dict | None:
    """The locked-in prediction as a stored run keeps it (JSON: the knobs as a dict), or None."""
    saved = saved_prediction(slug)
    if not (saved and saved["values"]):
        return None
    return {"knobs": dataclasses.asdict(saved["knobs"]), "values": dict(saved["values"])}


def from_stored(stored: dict | None) -> dict | None:
    """stored_prediction's dict back as saved_prediction's, or None (none, or unreadable)."""
    if not stored or not stored.get("values"):
        return None
    fields = {f.name for f in dataclasses.fields(Knobs)}
    try:
        knobs = Knobs(**{k: v for k, v in stored["knobs"].items() if k in fields})
    except (TypeError, AttributeError):
        return None
    return {"knobs": knobs, "values": dict(stored["values"])}


def has_predicted(slug: str) -> bool:
    saved = saved_prediction(slug)
    return bool(saved and saved["values"])


def questions_for(lesson: Lesson, knobs: Knobs) -> list[Prediction]:
    """The lesson's prediction questions that fit these settings."""
    return [q for q in predictions_for(lesson.slug) if q.applies(knobs)]


def _checked() -> dict[str, bool]:
    """{lesson slug: checked}, this browser's progress: from the store on a session's first call."""
    if _CHECKED not in st.session_state:
        stored = get_store().checked_lessons(browser.browser_id())
        st.session_state[_CHECKED] = {slug: True for slug in stored}
    return st.session_state[_CHECKED]


def checked_lessons() -> list[str]:
    """Slugs of the lessons whose every check this browser last answered right, in course order."""
    checked = _checked()
    return [lesson.slug for lesson in LESSONS if checks_for(lesson.slug) and checked.get(lesson.slug)]


def _keep_checked(slug: str, checked: bool) -> None:
    """The lesson's progress, in the session and in the store (so a reload keeps it)."""
    progress = _checked()
    if progress.get(slug, False) != checked:
        progress[slug] = checked
        get_store().set_checked(browser.browser_id(), slug, checked)


# ---- predict ----------------------------------------------------------------------------------

def _option_label(question, option) -> str:
    return t("predict.pick") if option is None else t(question.option_key(option))


def _shown(question: Prediction, value, exact: bool = False) -> str:
    """An answer as the student reads it: the option's text, or the number (``exact``: a
    formula's or the simulator's value, shown as a fraction when one fits)."""
    return t(question.option_key(value)) if question.kind == CHOICE else format_value(value, exact)


def _input_key(slug: str, question: Prediction) -> str:
    return f"{slug}:predict:{question.id}"


def _help(kind: str) -> str:
    """What a box of this kind takes, with examples of its kind (a count's are whole numbers)."""
    return t(f"predict.help.{kind}")


def _read(kind: str, typed: str, question: Prediction | None = None,
          knobs: Knobs | None = None) -> tuple[float | None, str | None]:
    """(the typed number, None), or (None, the one line that says what this kind takes): a
    value the kind cannot be (a bubble of 1.5, a count of 2.5) is refused, never graded; so is
    a count above what the ``question`` can be at the student's ``knobs`` (5 devices busy at p = 4)."""
    try:
        value = read_answer(kind, typed)
    except ValueError:
        return None, t(f"predict.bad.{kind}", text=typed.strip())
    at_most = question.at_most(knobs) if question is not None and knobs is not None else None
    if at_most is not None and value > at_most[0] + 1e-9:
        most, reason = at_most
        return None, t("predict.bad.at_most", text=typed.strip(), most=most,
                       reason=t(reason, **question.context(knobs)))
    return value, None


def typed_predictions(lesson: Lesson, knobs: Knobs) -> tuple[dict, list[str]]:
    """What the student has typed or picked in the prediction boxes right now, locked in or
    not: ({question id: value}, [one line per entry its kind cannot be: no number, a bubble
    of 1.5, a count of 2.5]). The boxes are plain widgets (no form), so whatever is in them
    reaches the script on any click."""
    values, errors = {}, []
    for q in questions_for(lesson, knobs):
        answer = st.session_state.get(_input_key(lesson.slug, q))
        if answer is None or (isinstance(answer, str) and not answer.strip()):
            continue
        if is_numeric(q.kind):
            answer, error = _read(q.kind, answer, q, knobs)
            if error:
                errors.append(error)
                continue
        values[q.id] = answer
    return values, errors


def lock_typed(lesson: Lesson, knobs: Knobs) -> str | None:
    """Run's first step: lock in whatever the boxes hold, so a prediction typed but not yet
    locked in counts instead of vanishing. Returns the line that stops Run (an entry its kind
    cannot be: the student fixes or clears it), or None."""
    slug = lesson.slug
    if has_predicted(slug) and slug not in _state(_EDITING, set()):
        return None  # locked in already: the boxes are not on the page
    values, errors = typed_predictions(lesson, knobs)
    if errors:
        return t("predict.fix_before_run", error=errors[0])
    if values:
        _state(_PREDICTIONS, {})[slug] = {"knobs": knobs, "values": values}
        _state(_EDITING, set()).discard(slug)
    return None


def prediction_form(lesson: Lesson, knobs: Knobs, invalid: bool = False) -> None:
    """The lesson's questions, answered before Run; the answers go into the session when the
    student locks them in or presses Run. ``invalid``: the form's settings cannot run, and
    ``knobs`` are the last ones that could (the questions never ask about impossible ones)."""
    slug = lesson.slug
    st.subheader(t("predict.header"))
    questions = questions_for(lesson, knobs)
    if not questions:
        st.caption(t("predict.none_apply"))
        return
    if invalid:
        st.caption(t("predict.last_valid", settings=_settings(knobs)))
    saved = saved_prediction(slug)
    editing = _state(_EDITING, set())
    if has_predicted(slug) and slug not in editing:
        if not predictions.same_settings(saved["knobs"], knobs):
            st.caption(t("predict.locked_elsewhere", then=_settings(saved["knobs"]), now=_settings(knobs)))
        for q in questions:
            if q.id in saved["values"]:
                st.markdown(_prompt(q, saved["knobs"]))
                st.caption(t("predict.locked", value=_shown(q, saved["values"][q.id])))
        if st.button(t("predict.change"), key=f"{slug}:predict:change"):
            editing.add(slug)
            st.rerun()
        return
    # No st.form: a form sends its boxes only when its own button is pressed, so numbers typed
    # and followed by Run were lost while still shown. Plain widgets reach every rerun.
    with st.container(border=True, key=f"predict-{slug}"):  # CSS class st-key-predict-<slug>, for tests
        st.caption(t("predict.intro"))
        for q in questions:
            prompt = _prompt(q, knobs)
            key = _input_key(slug, q)
            if is_numeric(q.kind):
                st.text_input(prompt, key=key, help=_help(q.kind))
            else:
                st.radio(prompt, q.options, index=None, key=key,
                         format_func=lambda option, q=q: _option_label(q, option))
        submitted = st.button(t("predict.submit"), type="primary", key=f"{slug}:predict:submit")
    if not submitted:
        return
    values, errors = typed_predictions(lesson, knobs)
    for error in errors:
        st.error(error)
    if errors:
        return
    if not values:
        st.warning(t("predict.empty"))
        return
    _state(_PREDICTIONS, {})[slug] = {"knobs": knobs, "values": values}
    editing.discard(slug)
    st.rerun()


def last_valid_knobs(lesson: Lesson, knobs: Knobs, valid: bool) -> Knobs:
    """``knobs`` when they can run (and remembered as such), else the last ones of this
    session that could, else the lesson's defaults: the questions and their answers are
    never built for settings the engine refuses."""
    remembered = _state(_VALID, {})
    if valid:
        remembered[lesson.slug] = knobs
        return knobs
    return remembered.get(lesson.slug, lesson.defaults)


def theory_gate(lesson: Lesson, knobs: Knobs, show: Callable[[], None]) -> None:
    """Call ``show`` (the theory preview) once the student has predicted or asked to see it;
    until then a folded note and a reveal button. Lessons without a question that fits these
    settings show the theory at once."""
    slug = lesson.slug
    revealed = _state(_REVEALED, set())
    if has_predicted(slug) or slug in revealed or not questions_for(lesson, knobs):
        show()
        return
    with st.container(border=True):
        st.caption(t("theory.gated"))
        if st.button(t("theory.reveal"), key=f"{slug}:theory:reveal"):
            revealed.add(slug)
            st.rerun()


# ---- after the run ----------------------------------------------------------------------------

def knobs_of(result, fallback: Knobs) -> Knobs:
    """The settings a finished run used, as Knobs (the form may have changed since)."""
    config = result.config
    if config.schedule == CUSTOM:
        return fallback
    chunks = result.schedule.chunks if config.schedule in chunked_schedules() else 1
    return dataclasses.replace(fallback, schedule=config.schedule, stages=config.stages,
                               microbatches=config.microbatches, chunks=chunks)


def _settings(knobs: Knobs, bold: bool = False) -> str:
    """"gpipe, p = 4, m = 8"; v only for a schedule that has chunks (v is taught in lesson 5);
    ``bold``: the schedule's name in bold, as a question names it."""
    name = _schedule_said(knobs.schedule)
    schedule = f"**{name}**" if bold else name
    if knobs.schedule not in chunked_schedules():
        return t("report.settings_pm", schedule=schedule, p=knobs.stages, m=knobs.microbatches)
    v = chunks_for(knobs.schedule, knobs.chunks)
    return t("report.settings", schedule=schedule, p=knobs.stages, m=knobs.microbatches, v=v)


def _prompt(q, knobs: Knobs) -> str:
    """A prediction's question at ``knobs``; ``{settings}`` in it is the settings as _settings says them."""
    return t(q.prompt, **{**q.context(knobs), "schedule": _schedule_said(knobs.schedule)},
             settings=_settings(knobs, bold=True))


def _schedule_said(name: str) -> str:
    """A schedule as a question says it (pipelab.lessons.i18n.schedule_said: Chinese "朴素方式", not "naive")."""
    return catalogs.schedule_said(i18n.current_lang(), name)


def _then(first: str, second: str) -> str:
    """Two sentences in a row: a space after an English full stop, none after a Chinese "。"."""
    return f"{first}{'' if first.endswith('。') else ' '}{second}"


def with_verdict(verdict: str, text: str, own_verdicts: str) -> str:
    """The verdict ("Right."), then the feedback; the feedback alone where it opens with a
    verdict of its own ("Right: …", "Yes: …", "对：…", as ``own_verdicts`` lists them, "|"
    between), which read "Right. Right: …"."""
    if any(text.startswith(opener) for opener in own_verdicts.split("|") if opener):
        return text
    return _then(verdict, text)


def _latex_value(value) -> str:
    return format_value(value, exact=True).replace("≈", r"\approx")


def formula_line(formula: str, value: str | None) -> str:
    """A question's formula and, for a number, its value at the run's settings: "p - r = 4", but
    "1" alone where the formula is the number itself (naive's devices at once read "1 = 1")."""
    return formula if value is None or formula.strip() == value.strip() else f"{formula} = {value}"


def prediction_report(lesson: Lesson, knobs: Knobs, result, compared=None, stored: dict | None = None) -> None:
    """Each question: the prediction | the formula | the simulator | the run (or, for a ratio
    of two schedules, the ``compared`` (label, result) pairs the page ran side by side), and why.
    ``stored``: a stored run's predictions (from_stored), shown instead of this session's."""
    ran = knobs_of(result, knobs)
    questions = questions_for(lesson, ran)
    if not questions:
        return
    if stored is not None:
        saved, typed = stored, {}
    else:
        saved = saved_prediction(lesson.slug) or {"knobs": None, "values": {}}
        # A number still in a box (typed after the run started, never locked in) is graded as
        # well: "You did not predict this one" under it would be wrong. It was typed for the
        # form's settings (``knobs``), which may not be the run's.
        typed, _ = typed_predictions(lesson, knobs)
    st.subheader(t("report.header"))
    for q in questions:
        answer, simulated, measured = q.answer(ran), q.simulated(ran), q.measured(result, ran, compared)
        mine, at = saved["values"].get(q.id), saved["knobs"]
        unlocked = mine is None and q.id in typed
        if unlocked:
            mine, at = typed[q.id], knobs
        grade = predictions.grade(q, mine, at, ran)
        elsewhere = grade in ELSEWHERE
        alternative = q.alternative(ran)
        context = {**q.context(ran), "answer": _shown(q, answer, True), "simulated": _shown(q, simulated, True),
                   "alternative": "" if alternative is None else _shown(q, alternative, True)}
        with st.container(border=True):
            st.markdown(_prompt(q, ran))
            cells = ((t("report.col.prediction"), "—" if mine is None or elsewhere else _shown(q, mine)),
                     (t("report.col.formula"), _shown(q, answer, True)),
                     (t("report.col.simulator"), _shown(q, simulated, True)),
                     (t("report.col.measured"), "—" if measured is None else _shown(q, measured)))
            # Caption and bold text, not st.metric: a metric cuts "11/19 ≈ 0.579" to "11/19 ≈ 0.…"
            # in a quarter of the page; text wraps and is never cut.
            for col, (label, value) in zip(st.columns(4), cells):
                col.caption(label)
                col.markdown(f"**{value}**")
                if value == "—" and label == cells[3][0]:
                    # A question only a comparison answers says where its measurement is.
                    col.caption(t("report.not_measured_compare" if q.compared_fn else "report.not_measured"))
            formula = q.formula_fn(ran)
            if formula:
                st.latex(formula_line(formula, None if q.kind == CHOICE else _latex_value(answer)))
            if alternative is not None:  # both forms, where a paper states it otherwise
                st.caption(t(q.note, **context))
            why = t(q.why, **context)
            if unlocked:
                st.caption(t("report.unlocked"))
            if elsewhere:  # made for other settings: graded at its own, never against this run
                own = {"mine": _shown(q, mine), "then": _settings(at), "now": _settings(ran)}
                if grade != predictions.ELSEWHERE_UNGRADED:
                    own["answer"] = _shown(q, q.answer(at), True)
                st.info(t(f"report.{grade}", **own))
            elif grade == predictions.UNANSWERED:
                st.info(_then(t('report.no_prediction'), why))
            elif grade == predictions.RIGHT:
                st.success(with_verdict(t('report.right'), why, t('check.own_verdicts')))
            elif grade == predictions.OTHER_FORM:
                st.warning(_then(t('report.other_form', mine=_shown(q, mine)), why))
            else:
                st.warning(_then(t('report.wrong'), why))
            measured_number = is_numeric(q.kind) and measured is not None
            if measured_number and abs(float(measured) - float(answer)) > q.tolerance + 1e-9:
                st.caption(t("report.measured_note", measured=_shown(q, measured)))


# ---- check yourself ---------------------------------------------------------------------------

def _check_input(check: Check, key: str):
    prompt = t(check.prompt, **check.context())
    if is_numeric(check.kind):
        return st.text_input(prompt, key=key, help=_help(check.kind))
    return st.radio(prompt, check.options, index=None, key=key,
                    format_func=lambda option: t(check.option_key(option)))


def check_yourself(lesson: Lesson) -> None:
    """Two or three short questions with feedback; a lesson whose answers are all right counts
    as checked in the sidebar's progress."""
    checks = checks_for(lesson.slug)
    if not checks:
        return
    slug = lesson.slug
    results = _state(_CHECKS, {}).setdefault(slug, {})
    st.header(t("check.header"))
    with st.form(key=f"{slug}:check"):
        raw = {}
        for check in checks:
            raw[check.id] = _check_input(check, f"{slug}:check:{check.id}")
            if check.id in results:
                text = t(check.right if results[check.id] else check.wrong, **check.context())
                verdict = t("check.right") if results[check.id] else t("check.wrong")
                said = with_verdict(verdict, text, t("check.own_verdicts"))
                (st.success if results[check.id] else st.warning)(said)
        submitted = st.form_submit_button(t("check.submit"))
    if slug in checked_lessons():
        st.success(t("check.done"))
    if not submitted:
        return
    errors = []
    for check in checks:
        answer = raw[check.id]
        if answer is None or (isinstance(answer, str) and not answer.strip()):
            results.pop(check.id, None)
            continue
        if is_numeric(check.kind):
            answer, error = _read(check.kind, answer)
            if error:
                errors.append(error)
                results.pop(check.id, None)
                continue
        results[check.id] = check.is_right(answer)
    # Every question answered (this submission or an earlier one of this session): the lesson is
    # checked or not by these answers. A partial submission (after a reload the boxes are empty)
    # leaves the kept progress as it was.
    if all(check.id in results for check in checks):
        _keep_checked(slug, all(results[check.id] for check in checks))
    for error in errors:
        st.error(error)
    if not errors:  # draw the feedback in place (and the sidebar's progress) on a fresh run
        st.rerun()


def progress_sidebar() -> None:
    """"3/7 lessons checked" in the sidebar."""
    done = len(checked_lessons())
    total = sum(1 for lesson in LESSONS if checks_for(lesson.slug))
    st.sidebar.progress(done / total if total else 0.0, text=t("course.progress", done=done, total=total))
    st.sidebar.caption(t("course.progress_help"))


def extra_reading(lesson: Lesson) -> None:
    """The lesson's short extra from the papers, behind an expander."""
    text = i18n.extra_markdown(lesson)
    if text:
        with st.expander(t("extra.header"), expanded=False):
            st.markdown(text)


__all__ = ["check_yourself", "checked_lessons", "extra_reading", "from_stored", "has_predicted", "knobs_of",
           "last_valid_knobs", "stored_prediction",
           "lock_typed", "prediction_form", "typed_predictions",
           "prediction_report", "progress_sidebar", "questions_for", "saved_prediction", "theory_gate"]
