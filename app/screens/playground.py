"""The playground: every knob and schedule, plus a schedule typed by hand."""

from __future__ import annotations

import dataclasses

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner import runs, time_estimate
from pipelab.app.screens import lesson_page
from pipelab.app.views import charts, course, results, runtime_choice
from pipelab.engine.actions import ScheduleError
from pipelab.engine.config import Limits, RunConfig
from pipelab.engine.errors import Message
from pipelab.engine.schedules import CUSTOM, REGISTRY
from pipelab.engine.theory.simulate import UNIT_COSTS, simulate
from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate
from pipelab.lessons import claims, get_lesson
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.schedule_table import schedule_table

MAX_CUSTOM_CHARS = 20_000
"""Longest custom schedule the box takes: at six characters an action, room for a few
thousand actions, more than the server's largest registered schedule needs."""


def custom_limit_error(text: str, limits: Limits) -> str | None:
    """The one-line reason a custom schedule is too big for this server, checked on the text
    before any parsing, or None."""
    if len(text) > MAX_CUSTOM_CHARS:
        return t("playground.too_long", cap=MAX_CUSTOM_CHARS, got=len(text))
    ranks = sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    if ranks > limits.max_stages:
        return t("playground.too_many_ranks", ranks=ranks, cap=limits.max_stages)
    return None


def check_custom(text: str):
    """Bound, parse and validate; show the error (with the marked table) and return None if
    broken or over the server's limits."""
    limits = Limits.from_env()
    error = custom_limit_error(text, limits)
    if error is not None:
        st.error(error)
        return None
    try:
        schedule = parse_schedule(text)
        if schedule.num_microbatches > limits.max_microbatches:
            st.error(t("playground.too_many_microbatches", m=schedule.num_microbatches,
                       cap=limits.max_microbatches))
            return None
        validate(schedule)
        return schedule
    except InvalidSchedule as err:
        st.error(i18n.error_text(err.rule))
        st.code(schedule_table(err.schedule, err.mark, i18n.table_words()), language=None)
    except ScheduleError as err:
        st.error(i18n.error_text(err))
    return None


def time_error(config: RunConfig, limits: Limits | None = None) -> Message | None:
    """Why settings that build cannot finish within the server's time limit, in one line, or
    None: the least time they need here (pipelab.app.runner.time_estimate, a lower bound: what it
    counts and why) is over Limits.max_seconds. Said beside Run, which it disables, before the
    run could stop at the limit minutes later."""
    limits = Limits.from_env() if limits is None else limits
    seconds = time_estimate.least_seconds(config)
    if seconds is None or seconds <= limits.max_seconds:
        return None
    return lesson_page.page_error(TOO_SLOW, seconds=f"{seconds:.0f}", cap=f"{limits.max_seconds:g}")


TOO_SLOW = "playground.too_slow"


def custom_config(knobs, text: str, schedule):
    return runs.knobs_to_config(dataclasses.replace(knobs, schedule="gpipe"), schedule=CUSTOM,
                                custom_schedule=text, stages=schedule.num_ranks,
                                microbatches=schedule.num_microbatches, chunks=None, check=not schedule.is_async)


def render(slug: str = "playground") -> None:
    """The page of the lesson ``slug`` whose screen is the playground's."""
    lesson = get_lesson(slug)
    slug = lesson.slug
    claim = i18n.claim(lesson)
    lang = i18n.current_lang()
    st.title(f"{lesson.number}. {i18n.title(lesson)}")
    st.info(f"**{t('page.claim')}** {claim}")
    with st.expander(t("page.lesson"), expanded=False):
        st.markdown(lesson_page.lesson_text(lesson))
    course.extra_reading(lesson)

    st.header(t("playground.registered"))
    schedules = tuple(REGISTRY)
    knobs = lesson_page.knob_form(lesson, schedules, lesson.editable)
    st.caption(" ".join(f"**{n}**: {i18n.schedule_summary(n)}" for n in REGISTRY if n == knobs.schedule))
    name = f"{slug}:main"
    runtime = runtime_choice.choose(f"{slug}:runtime", runs.knobs_to_config(knobs))
    main_items = lambda: runtime_choice.items(knobs.schedule, runs.knobs_to_config(knobs), runtime)  # noqa: E731
    error = lesson_page.settings_error(main_items()[0][1])
    asked = course.last_valid_knobs(lesson, knobs, error is None)
    # Settings that build but cannot finish in time: Run is off, the limit named beside it.
    run_error = error if error is not None else time_error(main_items()[0][1])
    lesson_page.run_controls(name, t("page.run"), main_items, error=run_error, primary=True,
                             before_start=lambda: course.lock_typed(lesson, asked), kind=claims.RUN,
                             predictions=lambda: course.stored_prediction(slug))
    course.prediction_form(lesson, asked, invalid=error is not None)
    done = lesson_page.finished(name, main_items)
    lesson_page.gated_theory(lesson, knobs, key=f"{slug}:theory", error=error, ran=bool(done))
    if done and runtime_choice.both_ran(done):
        runtime_choice.both_view(done, key=f"{slug}:runtimes")
    elif done:
        results.run_view(done[0][1], key=f"{slug}:result",
                         verdict=claims.verdict(slug, claim, claims.RUN, done, lang=lang),
                         after_verdict=lambda: course.prediction_report(lesson, knobs, done[0][1]))

    st.header(t("playground.own"))
    st.caption(t("playground.own_caption"))
    # No max_chars: the browser would cut a longer paste silently; check_custom says it in a line.
    example = catalogs.example_schedule(lesson, lang)
    text = st.text_area(t("playground.custom"), value=example, height=160, key=f"{slug}:custom",
                        help=t("playground.custom_help", cap=MAX_CUSTOM_CHARS))
    c1, c2, c3, _ = st.columns([1.6, 1.3, 1, 3])
    validate_clicked = c1.button(t("playground.validate"), key=f"{slug}:validate")
    run_clicked = c2.button(t("playground.run_custom"), key=f"{slug}:custom:start")
    cname = f"{slug}:custom"
    if c3.button(t("page.cancel"), key=f"{cname}:cancel", disabled=not runs.active(cname)):
        runs.cancel(cname)
    if validate_clicked:
        schedule = check_custom(text)
        if schedule is not None:
            st.success(t("playground.valid", ranks=schedule.num_ranks, stages=schedule.num_stages,
                         m=schedule.num_microbatches))
            st.code(schedule_table(schedule, words=i18n.table_words()), language=None)
            torch_csv_download(schedule, key=f"{slug}:custom:torch_csv")
            timeline = simulate(schedule, UNIT_COSTS)
            st.caption(t("playground.unit_caption"))
            st.plotly_chart(charts.timeline_figure(charts.step_events(timeline, None), schedule.num_ranks,
                                                   t("playground.unit_title"), unit="units of T_F", clock="simulated",
                                                   lang=lang),
                            key=f"{slug}:custom:simulated", width="stretch")
    if run_clicked:
        schedule = check_custom(text)
        if schedule is None:
            runs.forget(cname)  # an earlier run's PASS must not stand under this error
        else:
            config = custom_config(knobs, text, schedule)
            error = lesson_page.settings_error(config) or time_error(config)
            if error is not None:
                st.error(lesson_page.error_line(error))  # knobs by their labels, as the form shows them
                runs.forget(cname)
            elif runs.start(cname, [(CUSTOM, config)]):
                st.rerun()
    done = runs.panel(cname)
    if done:
        old = runs.settings(cname)[0][1]
        if old.custom_schedule != text:
            st.warning(t("playground.stale"), icon="🕘")
        results.run_view(done[0][1], key=f"{slug}:custom:result",
                         verdict=claims.verdict(slug, claim, claims.RUN, done, lang=lang))
    course.check_yourself(lesson)


def torch_csv_download(schedule, key: str) -> None:
    """The schedule as torch.distributed.pipelining's CSV (docs/torch.md), or in one line why
    it has none (an update inside the step)."""
    from pipelab.engine.torch_bridge.csv_format import export_csv
    try:
        text = export_csv(schedule)
    except ScheduleError as err:
        st.caption(i18n.error_text(err))
        return
    st.download_button(t("playground.torch_csv"), text, file_name="schedule.csv", mime="text/csv", key=key,
                       help=t("playground.torch_csv_help"))
