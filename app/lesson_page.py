"""One function renders any lesson page: claim, knobs, Run, verdict and results, lesson text."""

from __future__ import annotations

import dataclasses
import functools

import streamlit as st

from app import charts, lesson_extras, results, runs
from engine.config import Limits, RunConfig
from engine.schedules import REGISTRY
from lessons import MODELS, Knobs, Lesson, claims, get_lesson

LABELS = {"schedule": "schedule", "stages": "stages p (devices)", "microbatches": "micro-batches m",
          "chunks": "chunks v per device", "model": "model", "layers": "layers", "hidden": "hidden width",
          "microbatch_size": "micro-batch size (rows)", "steps": "steps", "recompute": "re-materialization",
          "overlap_steps": "steps overlap (post-validation)"}
INT_KNOBS = ("stages", "microbatches", "chunks", "layers", "hidden", "microbatch_size", "steps")
MEANING = {"layers": "mlp: Linear layers, the head included; gpt: transformer blocks (plus the embedding "
                     "and the head). Split in order over stages x chunks. "}


def lesson_text(lesson: Lesson) -> str:
    """The lesson's markdown without its first heading (the page title shows it)."""
    lines = lesson.text().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines)


def knob_max(name: str, limits: Limits) -> int:
    """The server's cap on a whole-number knob. Chunks have none of their own: p x v stages
    need as many layers, so the layer cap bounds v."""
    return limits.max_layers if name == "chunks" else getattr(limits, f"max_{name}")


def fixed_chunks(schedule: str, chunks: int) -> tuple[int, str]:
    """The chunk count a schedule runs with, from the registry (ScheduleInfo.chunks), and a
    line saying so when it is not the one asked for ("" when it is)."""
    info = REGISTRY.get(schedule)
    if info is None or info.chunks == (-1,) or chunks in info.chunks:
        return chunks, ""
    v = info.chunks[0]
    return v, f"{schedule} runs exactly {v} chunk(s) per device{'' if v == 1 else ' (its shape needs them)'}" \
              f"{f'; chunks = {chunks} is not used' if chunks != 1 else ''}."


def knob_form(lesson: Lesson, schedules: tuple[str, ...], editable: tuple[str, ...]) -> Knobs:
    """Inputs for the editable knobs (and the schedule choice); the rest stay at the defaults.

    The number inputs take any whole number and name the server's cap in their label:
    bounded inputs in the browser turn red on an out-of-range entry and silently keep the
    old value, so here any entry arrives and settings_error says what is wrong with it."""
    d = lesson.defaults
    limits = Limits.from_env()
    values = {}
    slug = lesson.slug
    if len(schedules) > 1:
        index = schedules.index(d.schedule) if d.schedule in schedules else 0
        values["schedule"] = st.selectbox(LABELS["schedule"], schedules, index=index, key=f"{slug}:knob:schedule")
    shown = [n for n in editable if n not in ("schedule", "recompute", "overlap_steps")]
    cols = st.columns(4)
    for i, name in enumerate(shown):
        col = cols[i % 4]
        key = f"{slug}:knob:{name}"
        if name == "model":
            values[name] = col.selectbox(LABELS[name], MODELS, index=MODELS.index(d.model), key=key)
        elif name in INT_KNOBS:
            high = knob_max(name, limits)
            values[name] = int(col.number_input(f"{LABELS[name]} (1–{high})", value=getattr(d, name), step=1,
                                                key=key, help=f"{MEANING.get(name, '')}lesson default "
                                                              f"{getattr(d, name)}; at most {high} on this server"))
    if "recompute" in editable:
        values["recompute"] = st.checkbox(LABELS["recompute"], value=d.recompute, key=f"{slug}:knob:recompute",
                                          help="keep only each stage's input; redo the forward inside the backward")
    if "overlap_steps" in editable:
        values["overlap_steps"] = st.checkbox(LABELS["overlap_steps"], value=d.overlap_steps,
                                              key=f"{slug}:knob:overlap_steps", help=lesson_extras.TEXT["overlap_help"])
    knobs = dataclasses.replace(d, **values)
    chunks, note = fixed_chunks(knobs.schedule, knobs.chunks)
    if note and ("chunks" in shown or chunks != 1):
        st.caption(note)
    return dataclasses.replace(knobs, chunks=chunks)


def settings_error(config: RunConfig) -> str | None:
    """The one-line reason these settings cannot run on this server, or None. Nothing is
    built for settings outside the limits: the cheap caps come first (RunConfig.check_values
    checks them before it builds the schedule), and so many chunks that p x v stages could
    never fit the layer cap are refused before a schedule of them is built."""
    return _settings_error(config, Limits.from_env())


@functools.lru_cache(maxsize=256)
def _settings_error(config: RunConfig, limits: Limits) -> str | None:
    """settings_error, once per setting: at the caps, building and validating the schedule
    takes a tenth of a second, and every rerun of a page asks again."""
    stages = config.stages * (config.chunks or 1)
    if isinstance(config.chunks, int) and config.chunks >= 1 and stages > config.model_layer_count() \
            and config.layers <= limits.max_layers:
        return (f"{stages} stages (p={config.stages} x v={config.chunks}) need at least as many layers, but the "
                f"{config.model} model has {config.model_layer_count()} (raise layers, at most {limits.max_layers})")
    try:
        config.check_values(limits)
    except Exception as err:  # ConfigError or a builder's ScheduleError: one line either way
        lines = str(err).strip().splitlines()
        return lines[0] if lines else type(err).__name__
    return None


def run_controls(name: str, label: str, items_fn, help: str | None = None, error: str | None = None) -> None:
    """A button that starts a batch, and Cancel while it runs. With ``error`` (the settings'
    one-line reason, already on the page) a click starts nothing."""
    c1, c2, _ = st.columns([1.2, 1, 5], gap="small")
    if c1.button(label, key=f"{name}:start", type="primary" if label == "Run" else "secondary", help=help):
        if error is None and runs.start(name, items_fn()):
            st.rerun()
    if c2.button("Cancel", key=f"{name}:cancel", disabled=not runs.active(name)):
        runs.cancel(name)


def finished(name: str, items_fn) -> list | None:
    """The batch's finished (label, result) pairs, labelled when the form's settings are no
    longer the ones they ran with."""
    done = runs.panel(name)
    if done:
        old = runs.settings(name)
        try:
            new = items_fn()
        except Exception:
            new = None
        if old and new and [c for _, c in old] != [c for _, c in new]:
            results.stale_note(old[0][1], new[0][1])
    return done


@st.cache_resource(max_entries=512, show_spinner=False)
def unit_cost_theory(knobs: Knobs):
    """(caption, figure) of the simulator on unit costs for these knobs, or None if they are
    invalid. Shared by every session: a class opening the same lesson builds it once, and a
    page's later reruns do not rebuild it (plotly figures are costly Python on the server's
    GIL). Callers must not change the figure, and must pass knobs within the server's limits
    (settings_error)."""
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
                                           unit="units of T_F", clock="simulated")


def theory_preview(knobs: Knobs, key: str, error: str | None, expanded: bool = True) -> None:
    """What theory predicts for these knobs before anything runs: the simulator on unit
    costs (T_F = T_I = T_W = 1, so T_B = 2), as in the papers' figures. Invalid settings get
    their one-line reason in its place, and nothing is computed for them."""
    if error is not None:
        st.error(error)
        return
    theory = unit_cost_theory(knobs)
    if theory is None:
        return
    caption, figure = theory
    with st.expander("Theory for these settings (before you run)", expanded=expanded):
        st.caption(caption)
        st.plotly_chart(figure, key=key, width="stretch")


def render_lesson(slug: str) -> None:
    lesson = get_lesson(slug)
    st.title(f"{lesson.number}. {lesson.title}")
    st.info(f"**Claim.** {lesson.claim}")
    # Folded: open, the lesson's text put Run some 1500 px down the page.
    with st.expander("The lesson: read it first (why, the formulas, what to try)", expanded=False):
        st.markdown(lesson_text(lesson))

    st.header("Run it")
    knobs = knob_form(lesson, lesson.schedules, lesson.editable)
    extra = {}
    if lesson.slug == "pipedream" and knobs.schedule in ("pipedream", "pipedream-2bw"):
        if not st.checkbox("weight stashing", value=True, key=f"{slug}:stash",
                           help="off: each backward uses whatever weights are current (wrong gradients)"):
            extra["stash"] = False
    name = f"{slug}:main"
    main_items = lambda: [(knobs.schedule, runs.knobs_to_config(knobs, **extra))]  # noqa: E731
    error = settings_error(main_items()[0][1])
    run_controls(name, "Run", main_items, error=error)
    done = finished(name, main_items)
    theory_preview(knobs, key=f"{slug}:theory", error=error, expanded=not done)
    if done:
        verdict = claims.verdict(slug, lesson.claim, claims.RUN, done)
        results.run_view(done[0][1], key=f"{slug}:result", verdict=verdict)

    if lesson.comparisons:
        st.header("Compare")
        labels = ", ".join(c.label for c in lesson.comparisons)
        st.caption(f"Your settings above, run again as: {labels}.")
        cname = f"{slug}:compare"

        def comparison_items():
            items = [(f"this lesson ({knobs.schedule})", runs.knobs_to_config(knobs, **extra))]
            items += [(label, runs.knobs_to_config(k)) for label, k in lesson.comparison_knobs(knobs)]
            return items

        run_controls(cname, "Run comparison", comparison_items, error=error)
        done = finished(cname, comparison_items)
        if done:
            verdict = claims.verdict(slug, lesson.claim, claims.COMPARISON, done)
            results.comparison_view(done, key=f"{slug}:compare", verdict=verdict)
            lesson_extras.after_comparison(slug, done, key=f"{slug}:compare")

    if lesson.sweep:
        knob = lesson.sweep["knob"]
        st.header(f"Sweep {LABELS.get(knob, knob)}")
        sname = f"{slug}:sweep"
        sweep_items = lambda: [(v, runs.knobs_to_config(k)) for v, k in lesson.sweep_knobs(knobs)]  # noqa: E731
        run_controls(sname, "Run sweep", sweep_items, error=error,
                     help=f"one run per value: {', '.join(map(str, lesson.sweep['values']))}")
        done = finished(sname, sweep_items)
        if done:
            verdict = claims.verdict(slug, lesson.claim, claims.SWEEP, done)
            results.sweep_view(knob, done, key=f"{slug}:sweep", verdict=verdict)

    lesson_extras.dualpipe_section(lesson, knobs, error)
