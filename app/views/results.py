"""Streamlit views of finished runs: one run, comparisons side by side, a sweep.

Every text comes from the course's catalogs in the page's language (pipelab.app.i18n); the helpers
that tests call without a page take ``lang`` (default English)."""

from __future__ import annotations

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.views import breakdown_tabs, charts, step_marks, step_view
from pipelab.app.views.placement_line import placement_text
from pipelab.app.views.settings_diff import CHANGED, changed_settings, settings_text
from pipelab.app.views.verdict_box import verdict_view
from pipelab.engine.config import RunConfig
from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.breakdown import breakdown_table
from pipelab.lessons import claims
from pipelab.lessons.i18n import schedule_option, text

CHECK_TOLERANCE = 1e-5
SIM_CAPTION = text("en", "results.sim_caption")
BREAKDOWN_CAPTION = text("en", "results.breakdown_caption")


def sim_caption(metrics: RunMetrics, lang: str = "en") -> str:
    """The simulated timeline's caption, plus the bubble the simulator gives fed each action's
    own mean cost: the gap between that and the per-stage figure is what averaging over a
    stage's actions hides."""
    caption = text(lang, "results.sim_caption")
    per_action = metrics.simulated_bubble_fraction_per_action_costs
    if per_action is None:  # a result saved before runs reported it
        return caption
    return caption + text(lang, "results.sim_caption_per_action", per_action=f"{per_action:.3f}",
                          device=f"{metrics.device_bubble_fraction:.3f}")


def breakdown_caption(metrics: RunMetrics, lang: str = "en") -> str:
    """The breakdown's caption, plus the device clock's idle share inside each device's own
    span (its first to its last action): the window the zero bubble paper counts (arXiv
    2401.10241)."""
    caption = text(lang, "results.breakdown_caption")
    steady = metrics.device_steady_bubble_fraction
    if steady is None:
        return caption
    return caption + text(lang, "results.breakdown_steady", steady=f"{steady:.3f}")


def _mib(nbytes) -> str:
    return f"{(nbytes or 0) / 2**20:.2f}"


def _pct(x) -> str:
    return t("results.n_a") if x is None else f"{x:.3f}"


COLUMNS = {
    "run": "col.run", "schedule": "col.schedule", "bubble (device)": "col.bubble_device",
    "bubble (wall)": "col.bubble_wall", "bubble (simulated)": "col.bubble_simulated",
    "bubble (formula)": "col.bubble_formula", "bubble inside each device's span": "col.bubble_span",
    "idle ms per step (device)": "col.idle_ms", "step ms (device)": "col.step_device",
    "step ms (simulated)": "col.step_simulated", "step ms (wall)": "col.step_wall",
    "messages/step": "col.messages", "max peak activations (MiB)": "col.max_peak",
    "max weight versions": "col.max_versions", "final loss": "col.final_loss",
    "device": "col.device", "peak activations (MiB)": "col.peak_act",
    "peak activations, simulated (MiB)": "col.peak_act_simulated", "peak in-flight (measured)": "col.inflight",
    "peak in-flight (theory)": "col.inflight_theory", "message slots (MiB)": "col.slots",
    "parameters (MiB)": "col.parameters", "gradients (MiB)": "col.gradients", "optimizer (MiB)": "col.optimizer",
    "weight versions (measured)": "col.versions", "weight versions (theory)": "col.versions_theory",
    "stashed weights (MiB)": "col.stashed", "layout (d x p)": "col.layout",
    "exposed reduce ms (device)": "col.exposed_device", "exposed reduce ms (simulated)": "col.exposed_simulated",
    "parameters per device (MiB)": "col.parameters_per_device",
}
"""The tables' column ids (English, as claims.Verdict.columns names them) -> catalog keys."""


def table_columns(rows: list[dict]) -> list[dict]:
    """The rows with their column names in the page's language (ids stay English inside)."""
    return [{t(COLUMNS[c]) if c in COLUMNS else c: v for c, v in row.items()} for row in rows]


def timelines(result, key: str, compact: bool = False) -> str:
    """Measured timeline (device or wall clock) above the simulated one, same x range; returns
    the clock shown."""
    p = result.schedule.num_ranks
    steps = result.measured_steps()
    lang = i18n.current_lang()
    c1, c2 = st.columns(2)
    clock = c1.radio(t("results.clock_radio"), ["device clock", "wall clock"], horizontal=True,
                     key=f"{key}:clock", label_visibility="collapsed" if compact else "visible",
                     format_func=lambda c: charts.clock_name(c, lang))
    step = steps[-1]
    all_steps = not compact and step_view.all_steps_toggle(c2, result.config.steps,
                                                          bool(result.metrics.overlapped_steps), key)
    if len(steps) > 1 and not compact and not all_steps:
        step = c2.select_slider(t("results.step_slider", first=steps[0]), options=steps, value=steps[-1],
                                key=f"{key}:step")
    step = None if all_steps else step
    # With data parallelism every process's row, each labelled by its pipeline (RankLayout).
    every = result.all_processes_timeline()
    measured = every if clock == "device clock" else every.on_wall_clock()
    events = charts.step_events(measured, step)
    simulated = charts.step_events(result.simulated, None)
    x_max = max(charts.span_ms(events), charts.span_ms(simulated))
    link = result.metrics.link_cost_s
    title = t("results.measured_title", clock=charts.clock_name(clock, lang),
              shown=step_marks.steps_title(step, result.config.steps, lang))
    stages = getattr(result.schedule, "stage_to_rank", None)  # a device's chunks, marked where it holds several
    st.plotly_chart(step_view.marked_timeline(events, every.num_ranks, title, x_max, clock=clock, link_cost_s=link,
                                              lang=lang, pipeline_ranks=p, stage_to_rank=stages,
                                              stage_replicas=getattr(result.schedule, "stage_replicas", ())),
                    key=f"{key}:timeline", width="stretch")
    st.plotly_chart(step_view.marked_timeline(simulated, p, t("results.simulated_title"), x_max, clock="simulated",
                                              lang=lang, stage_to_rank=stages,
                                              stage_replicas=getattr(result.schedule, "stage_replicas", ())),
                    key=f"{key}:simulated", width="stretch")
    st.caption(t("results.idle_caption", idle=charts.idle_note(lang), link=f"{(link or 0) * 1e3:.3f}"))
    return clock


def timeline_captions(result, clock: str) -> None:
    """What the two timelines are, for the Details."""
    st.caption(t("results.device_caption") if clock == "device clock" else t("results.wall_caption"))
    st.caption(sim_caption(result.metrics, i18n.current_lang()))


def headline(result) -> None:
    m = result.metrics
    cols = st.columns(6)
    cols[0].metric(t("results.m.bubble_device"), _pct(m.device_bubble_fraction))
    cols[1].metric(t("results.m.bubble_wall"), _pct(m.wall_bubble_fraction))
    cols[2].metric(t("results.m.bubble_simulated"), _pct(m.simulated_bubble_fraction))
    cols[3].metric(t("results.m.bubble_formula"), _pct(m.formula_bubble_fraction))
    cols[4].metric(t("results.m.step_device"), f"{m.device_step_time_s * 1e3:.1f} ms")
    cols[5].metric(t("results.m.step_wall"), f"{m.wall_step_time_s * 1e3:.1f} ms")


def check_line(result) -> None:
    if result.check is None:
        if result.schedule.is_async:
            st.caption(t("results.no_check"))
        return
    diff = result.check.grad_max_rel_diff
    ok = diff <= CHECK_TOLERANCE
    line = t("results.check_line", diff=f"{diff:.1e}", verdict=t("results.pass" if ok else "results.fail"),
             tolerance=f"{CHECK_TOLERANCE:.0e}")
    (st.success if ok else st.error)(line)


def memory_tables(result) -> None:
    p = result.schedule.num_ranks
    m = result.metrics
    theory_peaks = m.theory_peak_inflight_per_device or [None] * p
    simulated_peaks = m.simulated_peak_activation_bytes_per_device or [None] * p
    activations, weights = [], []
    for r in range(p):
        mem = result.memory[r]
        device = t("chart.device", r=r)
        activations.append({"device": device, "peak activations (MiB)": _mib(mem.peak_activation_bytes),
                            "peak activations, simulated (MiB)": ("—" if simulated_peaks[r] is None
                                                                  else _mib(simulated_peaks[r])),
                            "peak in-flight (measured)": m.peak_inflight_per_device[r],
                            "peak in-flight (theory)": theory_peaks[r],
                            "message slots (MiB)": ("—" if mem.message_buffer_bytes is None
                                                    else _mib(mem.message_buffer_bytes))})
        weights.append({"device": device, "parameters (MiB)": _mib(mem.parameter_bytes),
                        "gradients (MiB)": _mib(mem.gradient_bytes),
                        "optimizer (MiB)": _mib(mem.optimizer_bytes),
                        "weight versions (measured)": mem.weight_versions,
                        "weight versions (theory)": mem.theory_weight_versions,
                        "stashed weights (MiB)": _mib(mem.peak_stashed_weight_bytes)})
    # One above the other, each the page's full width: side by side, the in-flight and
    # weight-version columns (the claims of lessons 3 and 4) sat behind a horizontal scroll.
    st.dataframe(table_columns(activations), hide_index=True, width="stretch")
    st.dataframe(table_columns(weights), hide_index=True, width="stretch")
    st.caption(t("results.memory_caption"))


def stale_note(old: RunConfig, new: RunConfig | None) -> bool:
    """Say so when the settings on the form are no longer the ones these results ran with
    (results belong to the settings they were run with). True if they changed."""
    if new is None or old == new:
        return False
    diff = changed_settings(old, new, i18n.current_lang())
    st.warning(t("results.stale", since=t("results.stale_since", diff=diff) if diff else ""), icon="🕘")
    return True


def details(label_key: str, key: str):
    """A Details expander whose content the script builds only while it is open: a folded
    Details costs nothing, so a finished run paints its verdict and timelines sooner (the
    charts and tables below were most of the server's time for a run). Opening it reruns the
    page; its open state lives in ``st.session_state[f"{key}:details"]``."""
    return st.expander(t(label_key), key=f"{key}:details", on_change="rerun")


def layout_caption(result) -> None:
    """With data parallelism: which processes form each pipeline and each stage's group, and
    each stage's all-reduce (its cost, and what the step did not hide, measured and simulated)."""
    dp = result.data_parallel
    if dp is None:
        return
    layout = result.config.layout
    places = [t("results.layout_pipeline", k=k, processes=", ".join(map(str, layout.pipeline(k))))
              for k in range(layout.replicas)]
    places += [t("results.layout_group", r=r, processes=", ".join(map(str, layout.reduce_group(r))))
               for r in range(layout.pipeline_ranks)]
    st.caption(t("results.layout", d=dp.replicas, p=result.config.stages,
                 layout=t("results.clause_sep").join(places)))
    st.caption(t("results.reduce", costs=", ".join(f"{c * 1e3:.2f}" for c in dp.reduce_cost_s),
                 exposed=", ".join(f"{e * 1e3:.2f}" for e in dp.exposed_reduce_s),
                 simulated=", ".join(f"{e * 1e3:.2f}" for e in dp.simulated_exposed_reduce_s)))


def run_view(result, key: str, verdict: claims.Verdict | None = None, after_verdict=None) -> None:
    """One finished run: the verdict (then ``after_verdict()``, the course's prediction
    report), the gradient check and the timelines; everything else one click away, under
    Details."""
    p = result.schedule.num_ranks
    lang = i18n.current_lang()
    st.caption(t("results.ran", settings=settings_text(result.config, result.schedule, lang),
                 seconds=f"{result.metrics.run_seconds:.1f}"))
    verdict_view(verdict)
    if after_verdict is not None:
        after_verdict()
    check_line(result)
    clock = timelines(result, key)
    with details("results.details", key) as box:
        if not box.open:
            return
        headline(result)
        timeline_captions(result, clock)
        layout_caption(result)
        st.plotly_chart(charts.bubble_figure(result.metrics, p, lang), key=f"{key}:bubble", width="stretch")
        if result.metrics.bubble_breakdown:  # results saved before runs reported it have none
            st.plotly_chart(charts.breakdown_figure(breakdown_table(result.metrics), lang), key=f"{key}:breakdown",
                            width="stretch")
            st.caption(breakdown_caption(result.metrics, lang))
        st.plotly_chart(charts.memory_figure(result.memory, p, lang), key=f"{key}:memory", width="stretch")
        memory_tables(result)
        st.plotly_chart(charts.loss_figure([(result.schedule.name, result.losses)], lang=lang), key=f"{key}:loss",
                        width="stretch")
        st.caption(t("results.messages_caption", messages=f"{result.metrics.messages_per_step:.0f}",
                     link=f"{result.metrics.link_cost_s * 1e3:.3f}"))
        if result.metrics.node:  # run on a Ray cluster (app/runner/cluster.py)
            st.caption(t("results.ran_on", node=result.metrics.node, cores=result.metrics.node_cores))
        if result.metrics.placement is not None:  # results saved before runs recorded it have none
            st.caption(placement_text(result.metrics.placement, lang, checked=result.check is not None))


def summary_rows(entries) -> list[dict]:
    rows = []
    # With data parallelism in any of them, every row says its layout and its all-reduce.
    data_parallel = any(r.data_parallel is not None for _, r in entries)
    for label, result in entries:
        m = result.metrics
        rows.append({"run": label, "schedule": schedule_option(i18n.current_lang(), result.schedule.name),
                     "bubble (device)": round(m.device_bubble_fraction, 3),
                     "bubble (wall)": round(m.wall_bubble_fraction, 3),
                     "bubble (simulated)": round(m.simulated_bubble_fraction, 3),
                     "bubble (formula)": None if m.formula_bubble_fraction is None
                     else round(m.formula_bubble_fraction, 3),
                     # Device clock, each device's first to last action: zero bubble's own window.
                     "bubble inside each device's span": None if m.device_steady_bubble_fraction is None
                     else round(m.device_steady_bubble_fraction, 3),
                     "idle ms per step (device)": round(claims.idle_ms(m), 2),
                     "step ms (device)": round(m.device_step_time_s * 1e3, 2),
                     "step ms (simulated)": round(m.simulated_step_time_s * 1e3, 2),
                     "step ms (wall)": round(m.wall_step_time_s * 1e3, 2),
                     "messages/step": m.messages_per_step,
                     "max peak activations (MiB)": _mib(max(r.peak_activation_bytes
                                                            for r in result.memory.values())),
                     "max weight versions": max(r.weight_versions for r in result.memory.values()),
                     "final loss": round(result.losses[-1], 4) if result.losses else None})
        if data_parallel:
            rows[-1].update(data_parallel_columns(result))
    return rows


def data_parallel_columns(result) -> dict:
    """A run's layout, the all-reduce its step did not hide (the most any stage left exposed,
    device clock and simulator), and the model each device holds."""
    dp, c = result.data_parallel, result.config
    return {"layout (d x p)": f"{c.data_parallel} × {c.stages}",
            "exposed reduce ms (device)": 0.0 if dp is None else round(max(dp.exposed_reduce_s) * 1e3, 2),
            "exposed reduce ms (simulated)": 0.0 if dp is None else round(max(dp.simulated_exposed_reduce_s) * 1e3, 2),
            "parameters per device (MiB)": _mib(max(m.parameter_bytes for m in result.memory.values()))}


def claim_first(rows: list[dict], columns: tuple[str, ...], only: bool = False) -> list[dict]:
    """The rows with "run" and the claim's columns first (only those with ``only``)."""
    if not rows:
        return rows
    first = ["run", *(c for c in columns if c in rows[0])]
    rest = [] if only else [c for c in rows[0] if c not in first]
    return [{c: row[c] for c in first + rest} for row in rows]


def claim_table(rows: list[dict], verdict: claims.Verdict | None) -> None:
    """The claim's columns of a comparison or sweep, narrow enough for no horizontal scroll;
    every column under Details."""
    columns = verdict.columns if verdict is not None else ()
    st.dataframe(table_columns(claim_first(rows, columns, only=bool(columns))), hide_index=True, width="stretch")


def comparison_view(entries, key: str, verdict: claims.Verdict | None = None, after_verdict=None) -> None:
    """Several runs: the verdict (then ``after_verdict()``, the course's prediction report),
    the claim's columns, their device-clock timelines side by side; every column and the
    losses under Details."""
    verdict_view(verdict)
    if after_verdict is not None:
        after_verdict()
    rows = summary_rows(entries)
    claim_table(rows, verdict)
    lang = i18n.current_lang()
    all_steps = step_view.all_steps_toggle(st, max(r.config.steps for _, r in entries),
                                           any(r.metrics.overlapped_steps for _, r in entries), key)
    legend = t("results.comparison_legend_all" if all_steps else "results.comparison_legend")
    with_reduce = any(r.data_parallel is not None for _, r in entries)
    chunked = any(getattr(r.schedule, "chunks", 1) > 1 for _, r in entries)
    everys = [r.all_processes_timeline() for _, r in entries]  # a data-parallel run: every process's row
    steps = [charts.step_events(every, None if all_steps else r.measured_steps()[-1])
             for every, (_, r) in zip(everys, entries)]
    st.markdown(charts.legend_html(lang, with_reduce, chunked, charts.drawn_kinds(steps) or None) + " &nbsp; "
                + legend, unsafe_allow_html=True)
    x_max = max(charts.span_ms(events) for events in steps)
    cols = st.columns(min(len(entries), 2))
    for i, ((label, result), events, every) in enumerate(zip(entries, steps, everys)):
        with cols[i % len(cols)]:
            st.plotly_chart(step_view.marked_timeline(events, every.num_ranks,
                                                      t("results.measured_title_of", label=label), x_max, legend=False,
                                                      clock="device clock", link_cost_s=result.metrics.link_cost_s,
                                                      lang=lang, pipeline_ranks=result.schedule.num_ranks,
                                                      stage_to_rank=getattr(result.schedule, "stage_to_rank", None),
                                                      stage_replicas=getattr(result.schedule, "stage_replicas", ())),
                            key=f"{key}:timeline:{i}", width="stretch")
    with details("results.details_comparison", key) as box:
        if not box.open:
            return
        every = table_columns(claim_first(rows, verdict.columns if verdict else ()))
        st.dataframe(every, hide_index=True, width="stretch")
        st.plotly_chart(charts.loss_figure([(label, r.losses) for label, r in entries],
                                           t("results.losses_title"), lang),
                        key=f"{key}:losses", width="stretch")
        breakdown_tabs.breakdowns(entries, key)


def sweep_view(knob: str, entries, key: str, verdict: claims.Verdict | None = None, note: str = "") -> None:
    """A knob swept: the verdict, then the chart the claim is about (bubble against the
    formula's curve, or peak memory), its table and ``note`` under it, the other chart and
    every column under Details."""
    verdict_view(verdict)
    points = [(value, result.metrics) for value, result in entries]
    first = entries[0][1].schedule
    curve = None
    if knob == "microbatches":
        top = max(v for v, _ in entries)
        curve = [(m, theory.formula_bubble_fraction(first.name, first.num_ranks, m, first.chunks))
                 for m in range(1, top + 1)]
        if any(value is None for _, value in curve):  # no closed form registered
            curve = None
    lang = i18n.current_lang()
    knob_label = t(f"knob.{knob}")
    bubble = charts.sweep_figure(knob, points, curve, lang, knob_label)
    xs = [v for v, _ in entries]
    series = [(t("chart.device", r=r), [res.memory[r].peak_activation_bytes / 2**20 for _, res in entries])
              for r in range(first.num_ranks)]
    memory = charts.bars_figure(t("results.sweep_memory_title", knob=knob_label), xs, series, "MiB")
    about_memory = verdict is not None and bool(verdict.columns) and "MiB" in verdict.columns[0]
    shown, hidden = ((memory, "sweep-memory"), (bubble, "sweep")) if about_memory else \
        ((bubble, "sweep"), (memory, "sweep-memory"))
    symbol = t(f"changed.{knob}") if knob in CHANGED else knob  # "m" for micro-batches
    rows = summary_rows([(f"{symbol}={v}", r) for v, r in entries])
    st.plotly_chart(shown[0], key=f"{key}:{shown[1]}", width="stretch")
    claim_table(rows, verdict)
    if note:
        st.caption(note)
    with details("results.details_sweep", key) as box:
        if not box.open:
            return
        st.plotly_chart(hidden[0], key=f"{key}:{hidden[1]}", width="stretch")
        every = table_columns(claim_first(rows, verdict.columns if verdict else ()))
        st.dataframe(every, hide_index=True, width="stretch")
        breakdown_tabs.breakdowns([(f"{symbol}={v}", r) for v, r in entries], key)
