"""A section: the DualPipe README's table, 1F1B, ZB-H1, ZB-V and DualPipeV on its three columns
(bubble, parameters per device, activations per device), theory at the student's p and m, and
beside it the four run for real. Texts: the extra's header and intro, the table's ``extras.*``."""

from __future__ import annotations

import dataclasses

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner import runs
from pipelab.app.views import results
from pipelab.app.views.verdict_box import STATUS_BOX, status_text
from pipelab.engine.runtime.paired import paired_ratio
from pipelab.engine.schedules.registry import schedule_label
from pipelab.engine.theory.dualpipe_table import TABLE_SCHEDULES, TableRow, dualpipe_table
from pipelab.lessons import Extra, Knobs, Lesson, comparison_verdict
from pipelab.lessons.four_way_verdict import IDLE_DIGITS, TableIdle, four_way_verdict, own_theory_ms


def table_knobs(knobs: Knobs) -> list[tuple[str, Knobs]]:
    """The student's settings as each of the table's four schedules, with a barrier between
    steps (the table's formulas count one synchronous step)."""
    return [(schedule_label(name), dataclasses.replace(knobs, schedule=name, chunks=1, overlap_steps=False))
            for name in TABLE_SCHEDULES]


def run_items(knobs: Knobs) -> list[tuple[str, object]]:
    """(label, RunConfig) of what "Run all four" runs, side by side in one launch (bench/clicks.py
    presses the same)."""
    return [(label, runs.knobs_to_config(k)) for label, k in table_knobs(knobs)]


RUN_PAIRS = None
"""Measured steps per schedule for "Run all four": the default pairs (pipelab.engine.runtime.paired.PAIRS),
which a tie between two schedules is judged by."""


@st.cache_data(max_entries=64, show_spinner=False)
def theory_table(p: int, m: int, t_f: float = 1.0, t_i: float = 1.0, t_w: float = 1.0) -> tuple[TableRow, ...]:
    return dualpipe_table(p, m, t_f, t_i, t_w)


def readme_text(row: TableRow) -> str:
    return t("extras.not_in_readme") if row.readme is None else "; ".join(row.readme)


def _pair(formula: float, simulated: float) -> str:
    return f"{formula:g} / {simulated:g}"


def theory_rows(table: tuple[TableRow, ...]) -> list[dict]:
    """The README's three columns, each "formula / simulated", narrow enough to need no scroll."""
    return [{t("extras.schedule"): schedule_label(row.schedule), t("extras.readme"): readme_text(row),
             t("extras.bubble_units"): _pair(round(row.formula_bubble, 2), round(row.simulated_bubble, 2)),
             t("extras.params_units"): _pair(row.formula_parameters, row.simulated_parameters),
             t("extras.acts_units"): _pair(row.formula_activations, row.simulated_activations)}
            for row in table]


def bound_note(table: tuple[TableRow, ...]) -> str | None:
    """Why DualPipeV's bubble cell reads two figures apart ("3 / 1.5"), said under the table before
    any run (after one, the verdict says it again): the README's formula counts an overlapped
    forward and backward as one slot, which this engine runs one after the other, so the formula
    is an upper bound. None where the two figures, as the cell prints them, agree."""
    row = next((r for r in table if r.schedule == "dualpipev"), None)
    if row is None:
        return None
    formula, simulated = round(row.formula_bubble, 2), round(row.simulated_bubble, 2)
    if formula == simulated or simulated <= 0:
        return None
    return t("extras.dp_bound_note", formula=f"{formula:g}", simulated=f"{simulated:g}",
             times=f"{formula / simulated:.1f}")


def stage_costs(result) -> tuple[float, float, float]:
    """Mean T_F, T_I, T_W of a whole stage (a chunk costs 1/v of it), in ms."""
    v = result.schedule.chunks
    return tuple(mean * v * 1e3 for mean in result.metrics.costs_s.mean_f_i_w())


def worst_idle_ms(result) -> float:
    """The worst device's idle time per step on the device clock."""
    return comparison_verdict.worst_idle_ms(result.metrics)


def run_cost_table(results: dict) -> tuple[TableRow, ...]:
    """The README's table at 1F1B's measured stage costs: the theory the runs are held to."""
    base = results["1f1b"]
    return theory_table(base.schedule.num_ranks, base.schedule.num_microbatches, *stage_costs(base))


def measured_tables(results: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """(bubble, parameters, activations) rows: theory at the run's costs beside measurement.
    ``results``: schedule name -> its RunResult, all four of TABLE_SCHEDULES."""
    base = results["1f1b"]
    table = run_cost_table(results)
    base_params = max(mem.parameter_bytes for mem in base.memory.values())
    base_acts = max(mem.peak_activation_bytes for mem in base.memory.values())
    bubble, params, acts = [], [], []
    for row in table:
        r = results[row.schedule]
        name = {t("extras.schedule"): schedule_label(row.schedule)}
        # Idle ms as the verdict prints them (IDLE_DIGITS): one figure per quantity on the page.
        bubble.append({**name, t("extras.bubble_formula_ms"): round(row.formula_bubble, IDLE_DIGITS),
                       t("extras.bubble_simulated_ms"): round(row.simulated_bubble, IDLE_DIGITS),
                       t("extras.bubble_own_ms"): round(own_theory_ms(r.metrics), IDLE_DIGITS),
                       t("extras.bubble_measured_ms"): round(worst_idle_ms(r), IDLE_DIGITS),
                       t("extras.bubble_fraction"): round(r.metrics.device_bubble_fraction, 3)})
        params.append({**name, t("extras.params_theory"): row.formula_parameters,
                       t("extras.params_simulated"): row.simulated_parameters,
                       t("extras.params_measured"): round(max(mem.parameter_bytes for mem in r.memory.values())
                                                      / base_params, 2)})
        acts.append({**name, t("extras.acts_formula"): row.formula_activations,
                     t("extras.acts_simulated"): row.simulated_activations,
                     t("extras.acts_measured"): max(r.metrics.peak_held_microbatches_per_device),
                     t("extras.acts_bytes"): round(max(mem.peak_activation_bytes for mem in r.memory.values())
                                               / base_acts, 2)})
    return bubble, params, acts


def render(lesson: Lesson, extra: Extra, knobs: Knobs, error: str | None) -> None:
    """The table: theory at the student's p and m, and the four runs beside it."""
    st.header(t(extra.key("header")))
    st.caption(t(extra.key("intro")))
    if error is not None:  # already on the page, above; nothing is built or said for settings outside the limits
        return
    if knobs.microbatches < 2 * knobs.stages:  # DualPipeV's minimum: a note, not an error of the student's run
        st.info(t("extras.needs_m", p=knobs.stages, m=knobs.microbatches, need=2 * knobs.stages))
        return
    try:
        table = theory_table(knobs.stages, knobs.microbatches)
    except Exception as err:  # a builder's ScheduleError: one line
        st.info(i18n.error_text(err))
        return
    st.dataframe(theory_rows(table), hide_index=True, width="stretch")
    st.caption(t("extras.dp_units"))
    if (note := bound_note(table)) is not None:
        st.caption(note)
    name = f"{lesson.slug}:dualpipe"
    items = run_items(knobs)
    c1, c2, _ = st.columns([1.2, 1, 5], gap="small")
    if c1.button(t("extras.dp_button"), key=f"{name}:start", help=t("extras.dp_button_help")):
        if runs.start(name, items, side_by_side=True, pairs=RUN_PAIRS):  # one launch, steps in turn
            st.rerun()
    if c2.button(t("page.cancel"), key=f"{name}:cancel", disabled=not runs.active(name)):
        runs.cancel(name)
    done = runs.panel(name)
    if not done:
        return
    old = runs.settings(name)
    if old and [c for _, c in old] != [c for _, c in items]:
        results.stale_note(old[0][1], items[0][1])
    by_schedule = {r.schedule.name: r for _, r in done}
    missing = [schedule_label(s) for s in TABLE_SCHEDULES if s not in by_schedule]
    if missing:
        st.warning(t("extras.missing", missing=t("results.list_sep").join(missing)))
        return
    # The verdict first, where the eye lands after Run: who idles least, against theory, why.
    table = {row.schedule: TableIdle(row.formula_bubble, row.simulated_bubble) for row in run_cost_table(by_schedule)}
    verdict = four_way_verdict(
        {name: r.metrics for name, r in by_schedule.items()}, table, i18n.current_lang(),
        pairs=lambda a, b: paired_ratio(by_schedule[a], by_schedule[b],
                                        lambda r: comparison_verdict.worst_idle_ms(r.metrics)))
    # Its status judges what it states: theory's ranking at the runs' own costs and its first's
    # amount against the same theory; every gap past the lesson's tolerance is named.
    STATUS_BOX[verdict.status](t("verdict.line", status=status_text(verdict.status), reason=verdict.text))
    if verdict.notes:
        st.caption(verdict.notes_text)
    st.caption(t("extras.dp_measured_intro"))
    # Idle ms printed with IDLE_DIGITS as the verdict prints them ("14.10", not "14.1").
    ms = {t(key): st.column_config.NumberColumn(format=f"%.{IDLE_DIGITS}f") for key in (
        "extras.bubble_formula_ms", "extras.bubble_simulated_ms", "extras.bubble_own_ms", "extras.bubble_measured_ms")}
    ms[t("extras.bubble_fraction")] = st.column_config.NumberColumn(format="%.3f")  # 0.120, not 0.12
    for title, rows in zip((t("extras.bubble_table"), t("extras.params_table"), t("extras.acts_table")),
                           measured_tables(by_schedule)):
        st.markdown(f"**{title}**")
        st.dataframe(rows, hide_index=True, width="stretch", column_config=ms if title == t("extras.bubble_table")
                     else None)
