"""One function renders any lesson page: text, claim, knobs, runs, results."""

from __future__ import annotations

import dataclasses

import streamlit as st

from app import charts, results, runs
from engine.config import Limits
from lessons import MODELS, Knobs, Lesson, get_lesson

LABELS = {"schedule": "schedule", "stages": "stages p (devices)", "microbatches": "micro-batches m",
          "chunks": "chunks v per device", "model": "model", "layers": "layers", "hidden": "hidden width",
          "microbatch_size": "micro-batch size (rows)", "steps": "steps", "recompute": "re-materialization"}
INT_KNOBS = ("stages", "microbatches", "chunks", "layers", "hidden", "microbatch_size", "steps")
MEANING = {"layers": "mlp: Linear layers, the head included; gpt: transformer blocks (plus the embedding "
                     "and the head). Split in order over stages x chunks. "}


def lesson_text(lesson: Lesson) -> str:
    """The lesson's markdown without its first heading (the page title shows it)."""
    lines = lesson.text().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines)


def knob_form(lesson: Lesson, schedules: tuple[str, ...], editable: tuple[str, ...]) -> Knobs:
    """Inputs for the editable knobs (and the schedule choice); the rest stay at the defaults.
    Only min 1 here: limits are checked by RunConfig.check_values when Run is pressed."""
    d = lesson.defaults
    values = {}
    slug = lesson.slug
    if len(schedules) > 1:
        index = schedules.index(d.schedule) if d.schedule in schedules else 0
        values["schedule"] = st.selectbox(LABELS["schedule"], schedules, index=index, key=f"{slug}:knob:schedule")
    shown = [n for n in editable if n not in ("schedule", "recompute")]
    cols = st.columns(4)
    for i, name in enumerate(shown):
        col = cols[i % 4]
        key = f"{slug}:knob:{name}"
        if name == "model":
            values[name] = col.selectbox(LABELS[name], MODELS, index=MODELS.index(d.model), key=key)
        elif name in INT_KNOBS:
            high = getattr(Limits.from_env(), f"max_{name}", None)
            values[name] = int(col.number_input(LABELS[name], min_value=1, value=getattr(d, name), step=1, key=key,
                                                help=f"{MEANING.get(name, '')}lesson default {getattr(d, name)}; "
                                                     f"classroom range up to {high}"))
    if "recompute" in editable:
        values["recompute"] = st.checkbox(LABELS["recompute"], value=d.recompute, key=f"{slug}:knob:recompute",
                                          help="keep only each stage's input; redo the forward inside the backward")
    return dataclasses.replace(d, **values)


def run_controls(name: str, label: str, items_fn, help: str | None = None) -> None:
    """A button that starts a batch, and Cancel while it runs."""
    c1, c2, _ = st.columns([1.2, 1, 5], gap="small")
    if c1.button(label, key=f"{name}:start", type="primary" if label == "Run" else "secondary", help=help):
        if runs.start(name, items_fn()):
            st.rerun()
    if c2.button("Cancel", key=f"{name}:cancel", disabled=not runs.active(name)):
        runs.cancel(name)


@st.cache_resource(max_entries=512, show_spinner=False)
def unit_cost_theory(knobs: Knobs):
    """(caption, figure) of the simulator on unit costs for these knobs, or None if they are
    invalid. Shared by every session: a class opening the same lesson builds it once, and a
    page's later reruns do not rebuild it (plotly figures are costly Python on the server's
    GIL). Callers must not change the figure."""
    from engine.simulate import UNIT_COSTS, simulate
    try:
        schedule = knobs.to_run_config().build_schedule()
    except Exception:
        return None  # the Run button reports what is wrong with these knobs
    timeline = simulate(schedule, UNIT_COSTS)
    caption = (f"Simulated on unit costs: forward 1, backward 2 (input 1 + weight 1). "
               f"Bubble {timeline.bubble_fraction():.3f}; peak in-flight micro-batches per device "
               f"{timeline.peak_inflight()}.")
    return caption, charts.timeline_figure(timeline.events, schedule.num_ranks, "Theory: unit-cost simulation",
                                           unit="units of T_F")


def theory_preview(knobs: Knobs, key: str) -> None:
    """What theory predicts for these knobs before anything runs: the simulator on unit
    costs (T_F = T_I = T_W = 1, so T_B = 2), as in the papers' figures."""
    theory = unit_cost_theory(knobs)
    if theory is None:
        return
    caption, figure = theory
    with st.expander("Theory for these settings (before you run)", expanded=True):
        st.caption(caption)
        st.plotly_chart(figure, key=key, width="stretch")


def render_lesson(slug: str) -> None:
    lesson = get_lesson(slug)
    st.title(f"{lesson.number}. {lesson.title}")
    st.info(f"**Claim.** {lesson.claim}")
    with st.expander("The lesson", expanded=True):
        st.markdown(lesson_text(lesson))

    st.header("Run it")
    knobs = knob_form(lesson, lesson.schedules, lesson.editable)
    extra = {}
    if lesson.slug == "pipedream" and knobs.schedule in ("pipedream", "pipedream-2bw"):
        if not st.checkbox("weight stashing", value=True, key=f"{slug}:stash",
                           help="off: each backward uses whatever weights are current (wrong gradients)"):
            extra["stash"] = False
    theory_preview(knobs, key=f"{slug}:theory")
    name = f"{slug}:main"
    run_controls(name, "Run", lambda: [(knobs.schedule, runs.knobs_to_config(knobs, **extra))])
    done = runs.panel(name)
    if done:
        results.run_view(done[0][1], key=f"{slug}:result")

    if lesson.comparisons:
        st.header("Compare")
        labels = ", ".join(c.label for c in lesson.comparisons)
        st.caption(f"Your settings above, run again as: {labels}.")
        cname = f"{slug}:compare"

        def comparison_items():
            items = [(f"this lesson ({knobs.schedule})", runs.knobs_to_config(knobs, **extra))]
            items += [(label, runs.knobs_to_config(k)) for label, k in lesson.comparison_knobs(knobs)]
            return items

        run_controls(cname, "Run comparison", comparison_items)
        done = runs.panel(cname)
        if done:
            results.comparison_view(done, key=f"{slug}:compare")

    if lesson.sweep:
        knob = lesson.sweep["knob"]
        st.header(f"Sweep {LABELS.get(knob, knob)}")
        sname = f"{slug}:sweep"
        run_controls(sname, "Run sweep",
                     lambda: [(v, runs.knobs_to_config(k)) for v, k in lesson.sweep_knobs(knobs)],
                     help=f"one run per value: {', '.join(map(str, lesson.sweep['values']))}")
        done = runs.panel(sname)
        if done:
            results.sweep_view(knob, done, key=f"{slug}:sweep")
