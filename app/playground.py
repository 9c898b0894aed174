"""The playground: every knob and schedule, plus a schedule typed by hand."""

from __future__ import annotations

import dataclasses

import streamlit as st

from app import charts, lesson_page, results, runs
from engine.actions import ScheduleError
from engine.schedules import REGISTRY
from engine.simulate import UNIT_COSTS, simulate
from engine.validate import InvalidSchedule, format_table, parse_schedule, validate
from lessons import get_lesson


def check_custom(text: str):
    """Parse and validate; show the error (with the marked table) and return None if broken."""
    try:
        schedule = parse_schedule(text)
        validate(schedule)
        return schedule
    except InvalidSchedule as err:
        st.error(err.rule)
        st.code(err.table, language=None)
    except ScheduleError as err:
        st.error(str(err).strip().splitlines()[0])
    return None


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
    lesson_page.run_controls(name, "Run", lambda: [(knobs.schedule, runs.knobs_to_config(knobs))])
    done = runs.panel(name)
    if done:
        results.run_view(done[0][1], key=f"{slug}:result")

    st.header("Your own schedule")
    st.caption("One line per rank; actions like 0F3 (stage 0, forward, micro-batch 3), B, I, W, U. "
               "The model knobs above (model, layers, hidden, micro-batch size, steps) apply to the run.")
    text = st.text_area("custom schedule", value=lesson.example_schedule, height=160, key=f"{slug}:custom")
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
            st.caption("simulated with unit costs: F = I = W = 1, B = 2 (time units shown as ms)")
            st.plotly_chart(charts.timeline_figure(charts.step_events(timeline, None), schedule.num_ranks,
                                                   "Simulated, unit costs"),
                            key=f"{slug}:custom:simulated", width="stretch")
    if run_clicked:
        schedule = check_custom(text)
        if schedule is not None:
            config = runs.knobs_to_config(dataclasses.replace(knobs, schedule="gpipe"), schedule="custom",
                                          custom_schedule=text, stages=schedule.num_ranks,
                                          microbatches=schedule.num_microbatches, chunks=None,
                                          check=not schedule.is_async)
            if runs.start(cname, [("custom", config)]):
                st.rerun()
    done = runs.panel(cname)
    if done:
        results.run_view(done[0][1], key=f"{slug}:custom:result")
