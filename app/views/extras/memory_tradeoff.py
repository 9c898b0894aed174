"""A section: the memory trade-off, bubble against held activations for every synchronous schedule.

Theory first, at the student's p and m (engine/theory/memory_tradeoff.py: the simulator on unit
costs, the held-activation count of each order), then a button that runs every schedule for
real, as the DualPipe section beside it does (app/views/extras/dualpipe_table.py), and draws the runs on
the same chart. The sequel to Zero Bubble (arXiv 2405.15362) adds V-Min and V-Half to the
picture: less memory than 1F1B, bought with bubble. Texts: the extra's header and intro,
``extras.mem_*`` and ``chart.tradeoff_*``.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner import runs
from pipelab.app.views import charts, results
from pipelab.app.views.verdict_box import STATUS_BOX, status_text
from pipelab.engine.config import Limits, settings_error
from pipelab.engine.schedules import get_schedule_info
from pipelab.engine.schedules.registry import schedule_label
from pipelab.engine.theory.memory_tradeoff import TradeoffTheory, measured_point, theory_points
from pipelab.lessons import Extra, Knobs, Lesson
from pipelab.lessons.i18n import join_sentences
from pipelab.lessons.i18n.run_label import RunLabel, schedule_in
from pipelab.lessons.tradeoff_verdict import tradeoff_verdict


@st.cache_data(max_entries=64, show_spinner=False)
def cached_theory(p: int, m: int) -> TradeoffTheory:
    return theory_points(p, m)


def tradeoff_items(knobs: Knobs, theory: TradeoffTheory) -> list[tuple[str, object]]:
    """(schedule, RunConfig) for each schedule of the theory chart that runs with the student's
    other settings (layers, limits), with a barrier between steps as the chart's step has."""
    limits, items = Limits.from_env(), []
    for point in theory.points:
        config = runs.knobs_to_config(dataclasses.replace(knobs, schedule=point.schedule, chunks=point.chunks,
                                                          overlap_steps=False))
        if settings_error(config, limits) is not None:  # e.g. interleaved's p x v stages need as many layers
            continue
        # Named as its point on the chart, in the reader's words ("saved on the server: 朴素方式, GPipe, …").
        items.append((RunLabel.of("extras.mem_run", id=point.schedule), config))
    return items


RUN_PAIRS = 3
"""Measured steps per schedule for "Run them all": held activations are fixed by the order, and
each bubble is a median within its own run."""


def run_items(knobs: Knobs) -> list[tuple[str, object]]:
    """(schedule, RunConfig) of what "Run them all" runs, side by side in one launch
    (bench/clicks.py presses the same)."""
    return tradeoff_items(knobs, cached_theory(knobs.stages, knobs.microbatches))


def held_gaps(measured, theory) -> list[tuple[str, float, float]]:
    """(schedule, measured, theory) for each run whose held activations are not the count theory
    draws for its schedule: its diamond is off its circle's vertical. A schedule built from the
    costs its run profiled (ZB-H2, ZB-1p, ZB-2p) may order its passes otherwise than on the
    unit costs the theory chart uses, and hold another count."""
    drawn = {pt.schedule: pt.peak_activations for pt in theory}
    return [(pt.schedule, pt.peak_activations, drawn[pt.schedule]) for pt in measured
            if pt.schedule in drawn and abs(pt.peak_activations - drawn[pt.schedule]) > 1e-9]


def measured_caption(measured, theory) -> str:
    """What the diamonds are, and whether each sits on its circle's vertical; where one does not,
    which, by how much, and why (a schedule built from the run's own costs)."""
    sentences = [t("extras.mem_measured_intro")]
    gaps = held_gaps(measured, theory)
    if not gaps:
        sentences.append(t("extras.mem_same_count"))
        return join_sentences(i18n.current_lang(), sentences)
    items = t("results.list_sep").join(t("extras.mem_gap_item", name=schedule_label(name), measured=f"{got:g}",
                                         theory=f"{want:g}") for name, got, want in gaps)
    sentences.append(t("extras.mem_other_count", items=items))
    built = [schedule_label(name) for name, _, _ in gaps if get_schedule_info(name).takes_costs]
    if built:
        sentences.append(t("extras.mem_costs_built", names=t("results.list_sep").join(built)))
    if len(built) < len(gaps):
        sentences.append(t("extras.mem_order_counted"))
    return join_sentences(i18n.current_lang(), sentences)


def render(lesson: Lesson, extra: Extra, knobs: Knobs, error: str | None) -> None:
    """The chart from theory, then the runs of every schedule on it."""
    if error is not None:  # the error is on the page already
        return
    st.header(t(extra.key("header")))
    st.caption(t(extra.key("intro")))
    theory = cached_theory(knobs.stages, knobs.microbatches)
    if theory.skipped:
        st.caption(t("extras.mem_skipped", names=t("results.list_sep").join(
            schedule_in(i18n.current_lang(), name) for name in theory.skipped)))
    name = f"{lesson.slug}:memory"
    items = run_items(knobs)
    c1, c2, _ = st.columns([1.2, 1, 5], gap="small")
    if c1.button(t("extras.mem_button"), key=f"{name}:start", help=t("extras.mem_button_help", count=len(items))):
        # One launch where they can share it, seconds instead of minutes; what it compares (held
        # memory, each schedule's own bubble) needs no long run of pairs.
        if runs.start(name, items, side_by_side=True, pairs=RUN_PAIRS):
            st.rerun()
    if c2.button(t("page.cancel"), key=f"{name}:cancel", disabled=not runs.active(name)):
        runs.cancel(name)
    done = runs.panel(name) or []
    old = runs.settings(name)
    if done and old and items and [c for _, c in old] != [c for _, c in items]:
        results.stale_note(old[0][1], items[0][1])
    finished = [r for _, r in done if r.metrics.peak_held_microbatches_per_device]
    measured = [measured_point(r) for r in finished]
    if len(measured) > 1:  # the conclusion first, where the eye lands after the run, with its status
        verdict = tradeoff_verdict(measured, theory.points, {r.schedule.name: r.metrics for r in finished},
                                   i18n.current_lang())
        STATUS_BOX[verdict.status](t("verdict.line", status=status_text(verdict.status), reason=verdict.text))
        if verdict.notes:
            st.caption(verdict.notes_text)
    st.plotly_chart(charts.tradeoff_figure(theory.points, measured, i18n.current_lang()), key=f"{name}:chart",
                    width="stretch")
    st.caption(t("extras.mem_units"))
    if measured:
        st.caption(measured_caption(measured, theory.points))
