"""Streamlit views of finished runs: one run, comparisons side by side, a sweep."""

from __future__ import annotations

import streamlit as st

from app import charts, lesson_extras, step_marks, step_view
from engine import theory
from engine.breakdown import breakdown_table
from engine.config import RunConfig
from lessons import claims

DEVICE_CAPTION = ("**device clock**: each action's own thread CPU time, messages stamped by the sender "
                  "(what each device would see with a core of its own); the gaps include the engine's own "
                  "work between actions, such as posting sends")
WALL_CAPTION = "**wall clock**: what happened on this shared 2-core host (the OS shares cores between ranks)"
SIM_CAPTION = ("**simulated**: the simulator fed this run's measured mean per-stage costs and host time "
               "(one step)")
CHECK_TOLERANCE = 1e-5
BREAKDOWN_CAPTION = (
    "**bubble breakdown**: the simulator plays this run's schedule from the formula's setting (every "
    "stage at the run's mean costs, no latency, no work between actions) to this run, adding one measured "
    "effect per row; only measured costs go in, never measured start times. The last simulated row plays "
    "each measured step with its own costs: the device clock is this same model computed by the ranks, so "
    "the two agree, and that row's change is what the steps' variation adds to their mean costs. "
    "The wall clock adds the sharing of cores.")


def sim_caption(metrics: dict) -> str:
    """SIM_CAPTION, plus the bubble the simulator gives fed each action's own mean cost: the
    gap between that and the per-stage figure is what averaging over a stage's actions hides."""
    per_action = metrics.get("simulated_bubble_fraction_per_action_costs")
    if per_action is None:  # a result saved before runs reported it
        return SIM_CAPTION
    return (f"{SIM_CAPTION}. Fed each action's own mean cost instead, it gives a bubble of {per_action:.3f} "
            f"(device clock {metrics['bubble_fraction']:.3f}): the per-stage means average away costs that "
            "depend on an action's place in the step, such as a stage's first forward running with cold caches")


def breakdown_caption(metrics: dict) -> str:
    """BREAKDOWN_CAPTION, plus the device clock's idle share inside each device's own span (its
    first to its last action): the window the zero bubble paper counts (arXiv 2401.10241)."""
    steady = metrics.get("steady_bubble_fraction")
    if steady is None:
        return BREAKDOWN_CAPTION
    return (f"{BREAKDOWN_CAPTION} Inside each device's span (its first to its last action), the device "
            f"clock shows a bubble of {steady:.3f}: the window in which ZB-H2 and ZB-V have none.")


def _mib(nbytes) -> str:
    return f"{(nbytes or 0) / 2**20:.2f}"


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def timelines(result, key: str, compact: bool = False) -> str:
    """Measured timeline (device or wall clock) above the simulated one, same x range; returns
    the clock shown."""
    p = result.schedule.num_ranks
    steps = result.measured_steps()
    c1, c2 = st.columns(2)
    clock = c1.radio("Measured timeline clock", ["device clock", "wall clock"], horizontal=True,
                     key=f"{key}:clock", label_visibility="collapsed" if compact else "visible")
    step = steps[-1]
    all_steps = not compact and step_view.all_steps_toggle(c2, result.config.steps,
                                                          bool(result.metrics.get("overlapped_steps")), key)
    if len(steps) > 1 and not compact and not all_steps:
        step = c2.select_slider("Step shown (step 0 is warm-up)", options=steps, value=steps[-1], key=f"{key}:step")
    step = None if all_steps else step
    measured = result.timeline if clock == "device clock" else result.timeline.on_wall_clock()
    events = charts.step_events(measured, step)
    simulated = charts.step_events(result.simulated, None)
    x_max = max(charts.span_ms(events), charts.span_ms(simulated))
    link = result.metrics.get("link_cost_s")
    st.plotly_chart(step_view.marked_timeline(events, p, f"Measured, {clock}, "
                                              f"{step_marks.steps_title(step, result.config.steps)}", x_max,
                                              clock=clock, link_cost_s=link),
                    key=f"{key}:timeline", width="stretch")
    st.plotly_chart(step_view.marked_timeline(simulated, p, "Simulated, same costs", x_max, clock="simulated"),
                    key=f"{key}:simulated", width="stretch")
    st.caption(f"{charts.IDLE_NOTE}; orange: a message's own transfer, its measured link cost "
               f"({(link or 0) * 1e3:.3f} ms), never the wait before it.")
    return clock


def timeline_captions(result, clock: str) -> None:
    """What the two timelines are, for the Details."""
    st.caption(DEVICE_CAPTION if clock == "device clock" else WALL_CAPTION)
    st.caption(sim_caption(result.metrics))


def headline(result) -> None:
    m = result.metrics
    cols = st.columns(6)
    cols[0].metric("bubble, device clock", _pct(m["bubble_fraction"]))
    cols[1].metric("bubble, wall clock", _pct(m["bubble_fraction_wall"]))
    cols[2].metric("bubble, simulated", _pct(m["simulated_bubble_fraction"]))
    cols[3].metric("bubble, formula", _pct(m.get("formula_bubble_fraction")))
    cols[4].metric("step, device clock", f"{m['device_step_time_s'] * 1e3:.1f} ms")
    cols[5].metric("step, wall clock", f"{m['step_time_s'] * 1e3:.1f} ms")


def check_line(result) -> None:
    if result.check is None:
        if result.schedule.is_async:
            st.caption("No gradient check: this schedule updates asynchronously, so it is not "
                       "meant to match one process step for step.")
        return
    diff = result.check["grad_max_rel_diff"]
    ok = diff <= CHECK_TOLERANCE
    text = (f"gradient check: max relative difference {diff:.1e} vs one process — "
            f"{'PASS' if ok else 'FAIL'} (≤ {CHECK_TOLERANCE:.0e})")
    (st.success if ok else st.error)(text)


def memory_tables(result) -> None:
    p = result.schedule.num_ranks
    m = result.metrics
    theory_peaks = m.get("theory_peak_inflight_per_device") or [None] * p
    simulated_peaks = m.get("simulated_peak_activation_bytes_per_device") or [None] * p
    activations, weights = [], []
    for r in range(p):
        mem = result.memory.get(r, {})
        activations.append({"device": f"device {r}", "peak activations (MiB)": _mib(mem.get("peak_activation_bytes")),
                            "peak activations, simulated (MiB)": "—" if simulated_peaks[r] is None else _mib(simulated_peaks[r]),
                            "peak in-flight (measured)": m["peak_inflight_per_device"][r],
                            "peak in-flight (theory)": theory_peaks[r],
                            "message slots (MiB)": ("—" if mem.get("message_buffer_bytes") is None
                                                    else _mib(mem["message_buffer_bytes"]))})
        weights.append({"device": f"device {r}", "parameters (MiB)": _mib(mem.get("parameter_bytes")),
                        "gradients (MiB)": _mib(mem.get("gradient_bytes")),
                        "optimizer (MiB)": _mib(mem.get("optimizer_bytes")),
                        "weight versions (measured)": mem.get("weight_versions"),
                        "weight versions (theory)": mem.get("theory_weight_versions"),
                        "stashed weights (MiB)": _mib(mem.get("peak_stashed_weight_bytes"))})
    # One above the other, each the page's full width: side by side, the in-flight and
    # weight-version columns (the claims of lessons 3 and 4) sat behind a horizontal scroll.
    st.dataframe(activations, hide_index=True, width="stretch")
    st.dataframe(weights, hide_index=True, width="stretch")
    st.caption("In-flight = stage-micro-batches whose activations are alive at once (from F to the "
               "backward that frees them), counted on the first measured step. Simulated = the "
               "simulator's schedule with the bytes one micro-batch's F keeps on each stage (and, for "
               "a split backward, what I leaves for W), as this run measured them. Message slots = the "
               "shared memory this device's channels map: a received tensor is its slot, so a channel "
               "holds as many messages as can be in use at once (engine/slots.py).")


def settings_text(config: RunConfig, schedule=None) -> str:
    """A run's settings in one line, as a student set them."""
    v = schedule.chunks if schedule is not None else config.chunks or 1
    text = (f"{config.schedule}, p={config.stages} devices, m={config.microbatches} micro-batches, v={v} chunk(s), "
            f"{config.model} model with {config.layers} layers of width {config.hidden}, micro-batch size "
            f"{config.microbatch_size}, {config.steps} steps")
    return text + (", re-materialization" if config.recompute else "") + (", steps overlapping" if config.overlap_steps
                                                                         else "")


def changed_settings(old: RunConfig, new: RunConfig) -> str:
    """The knobs that differ, "m 4 -> 8, layers 8 -> 12", or "" when none does."""
    names = {"schedule": "schedule", "stages": "p", "microbatches": "m", "chunks": "v", "model": "model",
             "layers": "layers", "hidden": "width", "microbatch_size": "micro-batch size", "steps": "steps",
             "recompute": "re-materialization", "overlap_steps": "steps overlap", "stash": "weight stashing", "custom_schedule": "custom schedule"}
    diffs = []
    for name, label in names.items():
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            diffs.append(label if name == "custom_schedule" else f"{label} {a} → {b}")
    return ", ".join(diffs)


def stale_note(old: RunConfig, new: RunConfig | None, what: str = "results") -> bool:
    """Say so when the settings on the form are no longer the ones these results ran with
    (results belong to the settings they were run with). True if they changed."""
    if new is None or old == new:
        return False
    diff = changed_settings(old, new)
    st.warning(f"These {what} are for your earlier settings{f' ({diff} since)' if diff else ''}. "
               "Press Run to run the settings above.", icon="🕘")
    return True


def _value(x, unit: str) -> str:
    if x is None:
        return "—"
    if unit == "count":
        return f"{x:.0f}"
    if unit == "x":
        return f"{x:.2f}×"
    if unit in ("ms", "MiB"):
        return f"{x:.2f} {unit}"
    return f"{x:.3f}"


STATUS_BOX = {claims.HOLDS: st.success, claims.NOISE: st.info, claims.FAILS: st.warning, claims.UNTESTED: st.info}


def verdict_view(verdict: claims.Verdict | None) -> None:
    """The claim, the numbers that test it (device clock beside formula and simulator), and
    the verdict in words: the first thing a finished run shows."""
    if verdict is None:
        return
    with st.container(border=True):
        st.markdown(f"**Claim.** {verdict.claim}")
        if verdict.rows:
            st.dataframe([{"": row.quantity, "measured (device clock)": _value(row.measured, row.unit),
                           "formula": _value(row.formula, row.unit),
                           "simulated": _value(row.simulated, row.unit)} for row in verdict.rows],
                         hide_index=True, width="stretch")
        STATUS_BOX[verdict.status](f"**Verdict: {verdict.status}.** {verdict.reason}")


def run_view(result, key: str, verdict: claims.Verdict | None = None) -> None:
    """One finished run: the verdict, the gradient check and the timelines; everything else
    one click away, under Details."""
    p = result.schedule.num_ranks
    st.caption(f"Ran {settings_text(result.config, result.schedule)}; took {result.metrics['run_seconds']:.1f} s.")
    verdict_view(verdict)
    check_line(result)
    clock = timelines(result, key)
    with st.expander("Details: the six bubble and step numbers, the breakdown, memory, loss"):
        headline(result)
        timeline_captions(result, clock)
        st.plotly_chart(charts.bubble_figure(result.metrics, p), key=f"{key}:bubble", width="stretch")
        if result.metrics.get("bubble_breakdown"):  # results saved before runs reported it have none
            st.plotly_chart(charts.breakdown_figure(breakdown_table(result.metrics)), key=f"{key}:breakdown",
                            width="stretch")
            st.caption(breakdown_caption(result.metrics))
        st.plotly_chart(charts.memory_figure(result.memory, p), key=f"{key}:memory", width="stretch")
        memory_tables(result)
        st.plotly_chart(charts.loss_figure([(result.schedule.name, result.losses)]), key=f"{key}:loss",
                        width="stretch")
        st.caption(f"{result.metrics['messages_per_step']:.0f} messages per step; measured link cost "
                   f"{result.metrics['link_cost_s'] * 1e3:.3f} ms per message.")


def summary_rows(entries) -> list[dict]:
    rows = []
    for label, result in entries:
        m = result.metrics
        rows.append({"run": label, "schedule": result.schedule.name,
                     "bubble (device)": round(m["bubble_fraction"], 3),
                     "bubble (wall)": round(m["bubble_fraction_wall"], 3),
                     "bubble (simulated)": round(m["simulated_bubble_fraction"], 3),
                     "bubble (formula)": None if m.get("formula_bubble_fraction") is None
                     else round(m["formula_bubble_fraction"], 3),
                     # Device clock, each device's first to last action: zero bubble's own window.
                     "bubble inside each device's span": None if m.get("steady_bubble_fraction") is None
                     else round(m["steady_bubble_fraction"], 3),
                     "idle ms per step (device)": round(claims.idle_ms(m), 2),
                     "step ms (device)": round(m["device_step_time_s"] * 1e3, 2),
                     "step ms (simulated)": round(m["simulated_step_time_s"] * 1e3, 2),
                     "step ms (wall)": round(m["step_time_s"] * 1e3, 2),
                     "messages/step": m["messages_per_step"],
                     "max peak activations (MiB)": _mib(max(r["peak_activation_bytes"] for r in result.memory.values())),
                     "max weight versions": max(r["weight_versions"] for r in result.memory.values()),
                     "final loss": round(result.losses[-1], 4) if result.losses else None})
    return rows


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
    st.dataframe(claim_first(rows, columns, only=bool(columns)), hide_index=True, width="stretch")


def comparison_view(entries, key: str, verdict: claims.Verdict | None = None) -> None:
    """Several runs: the verdict, the claim's columns, their device-clock timelines side by
    side; every column and the losses under Details."""
    verdict_view(verdict)
    rows = summary_rows(entries)
    claim_table(rows, verdict)
    all_steps = step_view.all_steps_toggle(st, max(r.config.steps for _, r in entries),
                                           any(r.metrics.get("overlapped_steps") for _, r in entries), key)
    st.markdown(charts.legend_html() + f" &nbsp; (device clock, {'all steps' if all_steps else 'last step'}, "
                "same time axis)", unsafe_allow_html=True)
    steps = [charts.step_events(r.timeline, None if all_steps else r.measured_steps()[-1]) for _, r in entries]
    x_max = max(charts.span_ms(events) for events in steps)
    cols = st.columns(min(len(entries), 2))
    for i, ((label, result), events) in enumerate(zip(entries, steps)):
        with cols[i % len(cols)]:
            st.plotly_chart(step_view.marked_timeline(events, result.schedule.num_ranks, label, x_max, legend=False,
                                                      clock="device clock",
                                                      link_cost_s=result.metrics.get("link_cost_s")),
                            key=f"{key}:timeline:{i}", width="stretch")
    with st.expander("Details: every column, the losses, each run's bubble breakdown"):
        st.dataframe(claim_first(rows, verdict.columns if verdict else ()), hide_index=True, width="stretch")
        st.plotly_chart(charts.loss_figure([(label, r.losses) for label, r in entries],
                                           "Loss per step, every run on one chart"),
                        key=f"{key}:losses", width="stretch")
        lesson_extras.breakdowns(entries, key)


def sweep_view(knob: str, entries, key: str, verdict: claims.Verdict | None = None) -> None:
    """A knob swept: the verdict, then the chart the claim is about (bubble against the
    formula's curve, or peak memory), the other and every column under Details."""
    verdict_view(verdict)
    points = [(value, result.metrics) for value, result in entries]
    first = entries[0][1].schedule
    curve = None
    if knob == "microbatches":
        try:
            top = max(v for v, _ in entries)
            curve = [(m, theory.formula_bubble_fraction(first.name, first.num_ranks, m, first.chunks))
                     for m in range(1, top + 1)]
        except ValueError:
            curve = None
    bubble = charts.sweep_figure(knob, points, curve)
    xs = [v for v, _ in entries]
    series = [(f"device {r}", [res.memory[r]["peak_activation_bytes"] / 2**20 for _, res in entries])
              for r in range(first.num_ranks)]
    memory = charts.bars_figure(f"Peak activation memory against {knob}", xs, series, "MiB")
    about_memory = verdict is not None and bool(verdict.columns) and "MiB" in verdict.columns[0]
    shown, hidden = ((memory, "sweep-memory"), (bubble, "sweep")) if about_memory else \
        ((bubble, "sweep"), (memory, "sweep-memory"))
    rows = summary_rows([(f"{knob}={v}", r) for v, r in entries])
    st.plotly_chart(shown[0], key=f"{key}:{shown[1]}", width="stretch")
    claim_table(rows, verdict)
    with st.expander("Details: the other chart, every column, each run's bubble breakdown"):
        st.plotly_chart(hidden[0], key=f"{key}:{hidden[1]}", width="stretch")
        st.dataframe(claim_first(rows, verdict.columns if verdict else ()), hide_index=True, width="stretch")
        lesson_extras.breakdowns([(f"{knob}={v}", r) for v, r in entries], key)
