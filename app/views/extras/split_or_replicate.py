"""A section: split or replicate (PipeDream's planner, arXiv 1806.03377, section 3.1).

On a model whose first layer is as heavy as eight of the others, one click profiles this host, plans, and runs
the planner's choice, the best straight pipeline and the best 2-1-1 for real, side by side in one launch
(engine/runtime/planned_runs.py: all of it in the runner's job, none in this server, which never imports torch).
Before Run a prediction card asks which of the two is faster; after it, the verdict (lessons/split_or_replicate.py),
the planner's figures beside the measured ones, both timelines (the replicated one a row per worker) and a
question. The settings are the section's own, fixed: nothing here is cached across students. Texts: the extra's
header and intro, ``extras.split_*``.
"""

from __future__ import annotations

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner import runs
from pipelab.app.views import charts, step_view
from pipelab.app.views.verdict_box import STATUS_BOX, status_text
from pipelab.engine.config import Limits, RunConfig
from pipelab.engine.runtime.planned_runs import REPLICATED, STRAIGHT, PlannedOutcome, PlannedRequest
from pipelab.lessons import Extra, Knobs, Lesson
from pipelab.lessons import split_or_replicate as split

WORKERS, MICROBATCHES, REPLICAS = 4, 8, (2, 1, 1)
MODEL = dict(model="wide-first", layers=9, hidden=512, microbatch_size=64)
"""The section's model: 9 layers, the first a 4x-wide feed-forward block (engine/model/builtin.py)."""
RUN_PAIRS = 6
"""Measured steps of each run: the throughput ratio is their median (bench/clicks.py measures the spread)."""


def planned_request() -> PlannedRequest:
    """What "Plan and run" asks the runner for (bench/clicks.py presses the same): 1F1B with a flush. No gradient
    check: its one-process reference for each of three runs doubled a click's time (tests/test_replication.py
    holds replicated stages to one process)."""
    model = RunConfig(schedule="1f1b", stages=1, microbatches=1, check=False,
                      timeout_s=min(120.0, Limits.from_env().max_seconds), **MODEL)
    return PlannedRequest(model, WORKERS, MICROBATCHES, REPLICAS, pairs=RUN_PAIRS)


def check_items(request: PlannedRequest) -> list[tuple[str, RunConfig]]:
    """(label, settings) the page checks before it queues the request, one line each: the straight pipeline
    and the replicated configuration, in the outcome's order (STRAIGHT, REPLICATED)."""
    return [("-".join(["1"] * request.workers), request.configs[STRAIGHT]),
            ("-".join(map(str, request.replicas)), request.configs[REPLICATED])]


def _replicated_name() -> str:
    return "-".join(map(str, REPLICAS))


def prediction_card(name: str) -> str | None:
    """Before Run: which is faster? Returns the locked-in answer, or None."""
    key = f"{name}:predicted"
    locked = st.session_state.get(key)
    values = dict(workers=WORKERS, replicated=_replicated_name())
    if locked is not None:
        st.caption(t("predict.locked", value=t(f"extras.split_short.{locked}")))
        if st.button(t("extras.split_change"), key=f"{name}:predict:change"):
            st.session_state.pop(key)
            st.rerun()
        return locked
    with st.container(border=True, key=f"predict-{name.replace(':', '-')}"):
        choice = st.radio(t("extras.split_predict", **values), (split.FASTER_STRAIGHT, split.FASTER_REPLICATED),
                          index=None, key=f"{name}:predict:choice",
                          format_func=lambda option: t(f"extras.split_option.{option}", **values))
        if st.button(t("predict.submit"), key=f"{name}:predict:submit", disabled=choice is None):
            st.session_state[key] = choice
            st.rerun()
    return None


def question(name: str) -> None:
    """After the run: why replication helps here."""
    with st.form(key=f"{name}:question"):
        answer = st.radio(t("extras.split_question"), split.QUESTION_OPTIONS, index=None, key=f"{name}:question:choice",
                          format_func=lambda option: t(f"extras.split_question_option.{option}"))
        if st.form_submit_button(t("check.submit")) and answer is not None:
            right = answer == split.QUESTION_ANSWER
            said = t("extras.split_question.right" if right else "extras.split_question.wrong")
            (st.success if right else st.warning)(f"{t('check.right' if right else 'check.wrong')} {said}")


def timelines(outcome: PlannedOutcome, key: str) -> None:
    """One step of the straight and the replicated run, device clock, on one time axis; a row per worker."""
    lang = i18n.current_lang()
    shown = [(split.roles_of(outcome.ran, outcome.ran[i], lang), outcome.run_of(i)) for i in (STRAIGHT, REPLICATED)]
    steps = [charts.step_events(r.all_processes_timeline(), r.measured_steps()[-1]) for _, r in shown]
    x_max = max(charts.span_ms(events) for events in steps)
    st.markdown(charts.legend_html(lang, with_reduce=True), unsafe_allow_html=True)
    for i, (col, (label, r), events) in enumerate(zip(st.columns(2), shown, steps)):
        title = t("results.measured_title_of", label=f"{label} ({outcome.plans[i].config})")
        col.plotly_chart(step_view.marked_timeline(events, r.all_processes_timeline().num_ranks, title, x_max,
                                                   legend=False, clock="device clock",
                                                   link_cost_s=r.metrics.link_cost_s, lang=lang,
                                                   pipeline_ranks=r.schedule.num_ranks,
                                                   stage_replicas=getattr(r.schedule, "stage_replicas", ())),
                         key=f"{key}:timeline:{i}", width="stretch")
    st.caption(t("extras.split_timelines"))


def render(lesson: Lesson, extra: Extra, knobs: Knobs, error: str | None) -> None:
    """The section: its own fixed settings, so the lesson form's ``knobs`` and ``error`` do not apply."""
    st.header(t(extra.key("header")))
    st.caption(t(extra.key("intro")))
    st.caption(t("extras.split_setup", layers=MODEL["layers"], workers=WORKERS, microbatches=MICROBATCHES,
                 rows=MODEL["microbatch_size"]))
    name = f"{lesson.slug}:split"
    predicted = prediction_card(name)
    request = planned_request()
    c1, c2, _ = st.columns([1.2, 1, 5], gap="small")
    if c1.button(t("extras.split_button"), key=f"{name}:start", help=t("extras.split_button_help")):
        if runs.start(name, check_items(request), side_by_side=True, request=request):  # checked, then queued
            st.rerun()
    if c2.button(t("page.cancel"), key=f"{name}:cancel", disabled=not runs.active(name)):
        runs.cancel(name)
    runs.panel(name)  # progress, an error in one line, how it was measured, the kept runs' links
    outcome = runs.outcome(name)
    if not isinstance(outcome, PlannedOutcome):
        return
    lang = i18n.current_lang()
    shown = outcome.shown()
    verdict = split.verdict(outcome.plans, [outcome.run_of(STRAIGHT), outcome.run_of(REPLICATED)], lang,
                            extra.lesson or lesson.slug)
    STATUS_BOX[verdict.status](t("verdict.line", status=status_text(verdict.status),
                                 reason=t("extras.split_end", text=verdict.text)))
    if predicted is not None:
        right, said = split.prediction_feedback(predicted, verdict.ratio[0], lang)
        (st.success if right else st.info if right is None else st.warning)(said)
    st.dataframe(split.table_rows(outcome.plans, outcome.ran, shown, lang), hide_index=True, width="stretch")
    st.caption(split.planner_line(outcome.plans, shown, outcome.ran, outcome.link, lang))
    timelines(outcome, name)
    question(name)
