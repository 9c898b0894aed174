"""The playground: every knob and schedule, plus a schedule typed by hand."""

from __future__ import annotations

import dataclasses

import streamlit as st

from app import charts, lesson_page, results, runs
from engine.actions import ScheduleError
from engine.config import Limits
from engine.schedules import REGISTRY
from engine.simulate import UNIT_COSTS, simulate
from engine.validate import InvalidSchedule, format_table, parse_schedule, validate
from lessons import claims, get_lesson

MAX_CUSTOM_CHARS = 20_000
"""Longest custom schedule the box takes: at six characters an action, room for a few
thousand actions, more than the server's largest registered schedule needs."""


def custom_limit_error(text: str, limits: Limits) -> str | None:
    """The one-line reason a custom schedule is too big for this server, checked on the text
    before any parsing, or None."""
    if len(text) > MAX_CUSTOM_CHARS:
        return f"custom schedule is at most {MAX_CUSTOM_CHARS} characters on this server, got {len(text)}"
    ranks = sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    if ranks > limits.max_stages:
        return f"custom schedule has {ranks} rank lines; stages is at most {limits.max_stages} on this server"
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
            st.error(f"custom schedule has {schedule.num_microbatches} micro-batches; micro-batches is at most "
                     f"{limits.max_microbatches} on this server")
            return None
        validate(schedule)
        return schedule
    except InvalidSchedule as err:
        st.error(err.rule)
        st.code(err.table, language=None)
    except ScheduleError as err:
        st.error(str(err).strip().splitlines()[0])
    return None


def custom_config(knobs, text: str, schedule):
    return runs.knobs_to_config(dataclasses.replace(knobs, schedule="gpipe"), schedule="custom",
                                custom_schedule=text, stages=schedule.num_ranks,
                                microbatches=schedule.num_microbatches, chunks=None, check=not schedule.is_async)


def render() -> None:
    lesson = get_lesson("playground")
    slug = lesson.slug
    st.title(f"{lesson.number}. {lesson.title}")
    st.info(f"**Claim.** {lesson.claim}")
    with st.expander("The lesson", expanded=False):
        st.markdown(lesson_page.lesson_text(lesson))

    st.header("Any registered schedule")
    schedules = tuple(REGISTRY)
    knobs = lesson_page.knob_form(lesson, schedules, lesson.editable)
    st.caption(" ".join(f"**{n}**: {info.summary}" for n, info in REGISTRY.items() if n == knobs.schedule))
    name = f"{slug}:main"
    main_items = lambda: [(knobs.schedule, runs.knobs_to_config(knobs))]  # noqa: E731
    error = lesson_page.settings_error(main_items()[0][1])
    lesson_page.run_controls(name, "Run", main_items, error=error)
    done = lesson_page.finished(name, main_items)
    lesson_page.theory_preview(knobs, key=f"{slug}:theory", error=error, expanded=not done)
    if done:
        results.run_view(done[0][1], key=f"{slug}:result",
                         verdict=claims.verdict(slug, lesson.claim, claims.RUN, done))

    st.header("Your own schedule")
    st.caption("One line per rank; actions like 0F3 (stage 0, forward, micro-batch 3), B, I, W, U. "
               "The model knobs above (model, layers, hidden, micro-batch size, steps) apply to the run.")
    # No max_chars: the browser would cut a longer paste silently; check_custom says it in a line.
    text = st.text_area("custom schedule", value=lesson.example_schedule, height=160, key=f"{slug}:custom",
                        help=f"at most {MAX_CUSTOM_CHARS} characters on this server")
    c1, c2, c3, _ = st.columns([1.6, 1.3, 1, 3])
    validate_clicked = c1.button("Validate & simulate", key=f"{slug}:validate")
    run_clicked = c2.button("Run custom", key=f"{slug}:custom:start")
    cname = f"{slug}:custom"
    if c3.button("Cancel", key=f"{cname}:cancel", disabled=not runs.active(cname)):
        runs.cancel(cname)
    if validate_clicked:
        schedule = check_custom(text)
        if schedule is not None:
            st.success(f"valid: {schedule.num_ranks} ranks, {schedule.num_stages} stages, "
                       f"{schedule.num_microbatches} micro-batches")
            st.code(format_table(schedule), language=None)
            timeline = simulate(schedule, UNIT_COSTS)
            st.caption("simulated with unit costs: F = I = W = 1, B = 2, in units of one forward (T_F)")
            st.plotly_chart(charts.timeline_figure(charts.step_events(timeline, None), schedule.num_ranks,
                                                   "Simulated, unit costs", unit="units of T_F", clock="simulated"),
                            key=f"{slug}:custom:simulated", width="stretch")
    if run_clicked:
        schedule = check_custom(text)
        if schedule is None:
            runs.forget(cname)  # an earlier run's PASS must not stand under this error
        else:
            config = custom_config(knobs, text, schedule)
            error = lesson_page.settings_error(config)
            if error is not None:
                st.error(error)
                runs.forget(cname)
            elif runs.start(cname, [("custom", config)]):
                st.rerun()
    done = runs.panel(cname)
    if done:
        old = runs.settings(cname)[0][1]
        if old.custom_schedule != text:
            st.warning("This run is of your earlier schedule text; press Run custom to run the one above.",
                       icon="🕘")
        results.run_view(done[0][1], key=f"{slug}:custom:result",
                         verdict=claims.verdict(slug, lesson.claim, claims.RUN, done))
