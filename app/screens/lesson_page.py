"""One function renders any lesson page: claim, knobs, Run, verdict and results, lesson text.

Every text on the page comes from the course's catalogs (pipelab.app.i18n.t), in the language of
the page's ``?lang=``; the active course (predict, the theory gate, the report, check
yourself) is pipelab.app.views.course's."""

from __future__ import annotations

import dataclasses
import functools
import re

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner import runs
from pipelab.app.views import charts, course, extras, results
from pipelab.app.views.said_select import chosen, said_selectbox
from pipelab.engine.config import Limits, RunConfig
from pipelab.engine.config import settings_error as engine_settings_error
from pipelab.engine.errors import Message
from pipelab.engine.runtime.paired import sweep_request
from pipelab.engine.schedules import REGISTRY, AnyChunks, chunks_for
from pipelab.lessons import MODELS, Knobs, Lesson, claims, get_lesson
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.i18n.run_label import RunLabel
from pipelab.lessons.repeated_setting import repeated_in_comparison_note, repeated_setting, repeated_setting_note

WHOLE = re.compile(r"[+-]?\d+")
INT_KNOBS = ("stages", "microbatches", "chunks", "layers", "hidden", "microbatch_size", "steps")
MEANING = ("layers",)
"""Knobs whose help starts with what they mean (catalog key ``knob.<name>.meaning``)."""


def knob_label(name: str) -> str:
    return t(f"knob.{name}")


def lesson_text(lesson: Lesson) -> str:
    """The lesson's markdown in the page's language, without its first heading (the page
    title shows it)."""
    lines = i18n.lesson_markdown(lesson).splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines)


def knob_max(name: str, limits: Limits) -> int:
    """The server's cap on a whole-number knob. Chunks have none of their own: p x v stages
    need as many layers, so the layer cap bounds v."""
    return limits.max_layers if name == "chunks" else getattr(limits, f"max_{name}")


def chunks_max(lesson: Lesson, values: dict, limits: Limits) -> int:
    """The most chunks v the form's other fields allow: each of the p x v stages needs a layer
    of its own (RunConfig model_layer_count), so v <= layers // p, within the layer cap. The
    fields drawn after chunks (model, layers) are read from what the student typed; one that is
    not a whole number yet counts at its default (its own line says what is wrong with it)."""
    d = lesson.defaults

    def field(name):
        key = f"{lesson.slug}:knob:{name}"
        typed = chosen(key, d.model) if name == "model" else st.session_state.get(key, getattr(d, name))
        value = values.get(name, typed)
        value = typed_whole(value) if name != "model" else value
        return value if name == "model" or (isinstance(value, int) and value >= 1) else getattr(d, name)

    layers = RunConfig(model=field("model"), layers=field("layers")).model_layer_count()
    return max(1, min(knob_max("chunks", limits), layers // field("stages")))


def fixed_chunks(schedule: str, chunks: int) -> tuple[int, str]:
    """The chunk count a schedule runs with, from the registry (ScheduleInfo.chunks), and a
    line saying so when it is not the one asked for ("" when it is)."""
    info = REGISTRY.get(schedule)
    # A schedule that takes any v keeps the student's, even a wrong one: the settings' error says why.
    if info is None or info.chunks.accepts(chunks) or isinstance(info.chunks, AnyChunks):
        return chunks, ""
    v = chunks_for(schedule, chunks)
    note = t("page.fixed_chunks_one" if v == 1 else "page.fixed_chunks", schedule=schedule, v=v)
    return v, note + (t("page.chunks_unused", chunks=chunks) if chunks != 1 else "")


def typed_whole(text) -> int | str:
    """A knob's field as typed: a whole number as int, anything else as the text itself, which
    settings_error (the one place values are checked) then refuses with its reason. Nothing is
    rounded or read as something else: 2.5 is not 2, "1e3" is not 1, an emptied field is empty."""
    text = str(text).strip()
    return int(text) if WHOLE.fullmatch(text) else text


def _edited(slug: str, name: str) -> None:
    """A field's on_change: remember which knob the student edited last, where an error that
    two fields cause is said."""
    st.session_state[f"{slug}:knob:edited"] = name


def knob_form(lesson: Lesson, schedules: tuple[str, ...], editable: tuple[str, ...]) -> Knobs:
    """Inputs for the editable knobs (and the schedule choice); the rest stay at the defaults.

    The whole-number knobs are text fields that name the server's cap in their label: a number
    field in the browser rounds 2.5 to 2, reads "1e3" as 1 and puts an emptied field back to
    its old value, all without a word. Here any entry arrives as typed and settings_error says
    what is wrong with it, under the field."""
    d = lesson.defaults
    limits = Limits.from_env()
    values = {}
    slug = lesson.slug
    if len(schedules) > 1:
        index = schedules.index(d.schedule) if d.schedule in schedules else 0
        values["schedule"] = said_selectbox(st, knob_label("schedule"), schedules, schedules[index],
                                            f"{slug}:knob:schedule", catalogs.schedule_option)
    shown = [n for n in editable if n not in ("schedule", "recompute", "overlap_steps")]
    cols = st.columns(4)
    fields = {}
    for i, name in enumerate(shown):
        col = cols[i % 4]
        key = f"{slug}:knob:{name}"
        if name == "model":
            values[name] = said_selectbox(col, knob_label(name), MODELS, d.model, key, catalogs.model_said)
        elif name == "replicas":  # text as typed: the engine reads it and names a wrong one
            values[name] = col.text_input(knob_label(name), value=d.replicas, key=key, on_change=_edited,
                                          args=(slug, name), placeholder="2,1,1", help=t("knob.replicas.help"))
            fields[name] = col.empty()
        elif name in INT_KNOBS:
            high = chunks_max(lesson, values, limits) if name == "chunks" else knob_max(name, limits)
            meaning = f"{t(f'knob.{name}.meaning')} " if name in MEANING else ""
            values[name] = typed_whole(col.text_input(
                t("knob.with_range", label=knob_label(name), high=high), value=str(getattr(d, name)), key=key,
                on_change=_edited, args=(slug, name),
                help=meaning + t("knob.help", default=getattr(d, name), high=high)))
            fields[name] = col.empty()  # right under its input: where its error line goes
    if "recompute" in editable:
        values["recompute"] = st.checkbox(knob_label("recompute"), value=d.recompute, key=f"{slug}:knob:recompute",
                                          help=t("knob.recompute.help"))
    if "overlap_steps" in editable:
        values["overlap_steps"] = st.checkbox(knob_label("overlap_steps"), value=d.overlap_steps,
                                              key=f"{slug}:knob:overlap_steps", help=t("knob.overlap_steps.help"))
    knobs = dataclasses.replace(d, **values)
    chunks, note = fixed_chunks(knobs.schedule, knobs.chunks)
    if note and ("chunks" in shown or chunks != 1):
        st.caption(note)
    knobs = dataclasses.replace(knobs, chunks=chunks)
    # A wrong entry is named under its own field, where the student just typed (the same
    # line stands next to Run, which it disables); one that two fields cause, under the one
    # of them edited last.
    error = settings_error(runs.knobs_to_config(knobs))
    field = error_field(error, edited=st.session_state.get(f"{slug}:knob:edited"), shown=tuple(fields))
    if field in fields:
        fields[field].markdown(f":red[{error_line(error)}]")
    return knobs


ERROR_FIELDS = {"layers": ("layers", "stages", "chunks"), "multiple": ("microbatches", "stages"),
                "multiple_updates": ("microbatches", "stages"), "two_p": ("microbatches", "stages"),
                "chunks_rule": ("chunks",), "fixed_chunks": ("chunks",), "heads": ("hidden",),
                "replicas_length": ("replicas", "stages"), "replicas_count": ("replicas",),
                "replicas_world": ("replicas",), "replicas_chunks": ("replicas",),
                "replicas_microbatches": ("replicas", "microbatches"), "replicas_async": ("replicas",),
                "replicas_async_rounds": ("replicas", "microbatches"), "replicas_custom": ("replicas",),
                "replicas_unsupported": ("replicas",)}
"""The knobs an error that is about more than one field comes from, the one to name first."""


def error_field(error: Message | None, edited: str | None = None, shown: tuple[str, ...] = ()) -> str | None:
    """The knob an error is about (its field on the form), or None for one about the whole
    setting. An error that several fields cause (ERROR_FIELDS) goes under ``edited``, the field
    the student changed last, when it is one of them, else under the first of them ``shown``."""
    if error is None:
        return None
    knob = dict(error.values).get("knob")
    if isinstance(knob, str) and knob in catalogs.KNOB_NAMES:
        return catalogs.KNOB_NAMES[knob]
    causes = ERROR_FIELDS.get(error.code, ())
    if edited in causes:
        return edited
    return next((name for name in causes if name in shown), causes[0] if causes else None)


def page_error(key: str, **values) -> Message:
    """A reason a page finds itself (not the engine's settings_error: a run too long for the
    server's time limit, say), as a Message whose code is its catalog key: error_line says it
    in the page's language, run_controls beside Run like any settings error."""
    return Message(catalogs.text("en", key, **values), key, tuple(values.items()))


def error_line(error: Message) -> str:
    """A settings error in one line of the page's language, naming a knob by its label on the
    form ("micro-batches m"), never by its field name (``microbatches``)."""
    if "." in error.code:  # a page's own (page_error): its code is a catalog key, no engine code has a dot
        return t(error.code, **dict(error.values))
    field = error_field(error)
    if field and error.code in ("whole_number", "at_most"):
        values = dict(error.values)
        if values["got"] in ("''", '""'):  # an emptied field
            return t("page.knob_error.empty", label=knob_label(field))
        return t(f"page.knob_error.{error.code}", label=knob_label(field), got=values["got"],
                 cap=values.get("cap", ""))
    return i18n.error_text(error)


def settings_error(config: RunConfig) -> Message | None:
    """The one-line reason these settings cannot run on this server, or None. Nothing is
    built for settings outside the limits: the cheap caps come first (RunConfig.check_values
    checks them before it builds the schedule), and so many chunks that p x v stages could
    never fit the layer cap are refused before a schedule of them is built."""
    return _settings_error(config, Limits.from_env())


@functools.lru_cache(maxsize=256)
def _settings_error(config: RunConfig, limits: Limits) -> Message | None:
    """settings_error, once per setting: at the caps, building and validating the schedule
    takes a tenth of a second, and every rerun of a page asks again. A coded Message, like
    the engine's own errors: i18n.error_text says it in the page's language."""
    return engine_settings_error(config, limits)


def run_controls(name: str, label: str, items_fn, help: str | None = None, error: Message | None = None,
                 primary: bool = False, before_start=None, side_by_side=False, kind: str | None = None,
                 predictions=None, headline=None, request_fn=None) -> None:
    """A button that starts a batch (``primary``: the page's main one), and Cancel while it
    runs. With ``error`` (the settings' reason) the button is disabled and the reason stands
    beside it, in one line: a click that silently did nothing left students guessing.
    ``before_start`` runs on a click and returns a line that stops the start (a prediction
    typed but not a number), or None. ``side_by_side``: the batch is a comparison, its pairs read
    by ``headline`` where the lesson names one (pipelab.app.runner.runs.start). ``kind``
    (claims RUN, COMPARISON, SWEEP) and ``predictions`` (called after ``before_start``: what was
    locked in) are stored with the runs, so a page that shows one later says its verdict.
    ``request_fn``: side by side, the engine request for the items' configs instead of a
    comparison's (a sweep's: pipelab.engine.runtime.paired.sweep_request)."""
    c1, c2, c3 = st.columns([1.2, 1, 5], gap="small")
    if c1.button(label, key=f"{name}:start", type="primary" if primary else "secondary", help=help,
                 disabled=error is not None):
        stop = before_start() if before_start is not None else None
        if stop is not None:
            c3.markdown(f":red[{stop}]")
        elif runs.start(name, items := items_fn(), side_by_side=side_by_side, kind=kind,
                        predictions=predictions() if predictions is not None else None, headline=headline,
                        request=None if request_fn is None else request_fn([config for _, config in items])):
            st.rerun()
    if c2.button(t("page.cancel"), key=f"{name}:cancel", disabled=not runs.active(name)):
        runs.cancel(name)
    if error is not None:
        c3.markdown(f":red[{t('page.run_disabled', reason=error_line(error))}]")


def finished(name: str, items_fn, value_name: str | None = None) -> list | None:
    """The batch's finished (label, result) pairs, labelled when the form's settings are no
    longer the ones they ran with. ``value_name``: a sweep's knob symbol (runs.panel)."""
    done = runs.panel(name, value_name)
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
def unit_cost_theory(knobs: Knobs, lang: str = "en"):
    """(caption, figure) of the simulator on unit costs for these knobs, in ``lang``, or None
    if they are invalid. Shared by every session: a class opening the same lesson builds it
    once, and a page's later reruns do not rebuild it (plotly figures are costly Python on the
    server's GIL). Callers must not change the figure, and must pass knobs within the
    server's limits (settings_error)."""
    from pipelab.engine.theory.simulate import UNIT_COSTS, simulate
    from pipelab.lessons.i18n import text
    try:
        schedule = knobs.to_run_config().build_schedule()
    except Exception:
        return None  # the Run button reports what is wrong with these knobs
    timeline = simulate(schedule, UNIT_COSTS)
    caption = text(lang, "page.theory_caption", bubble=f"{timeline.bubble_fraction():.3f}",
                   peaks=timeline.peak_inflight())
    if schedule.is_async:  # the walk read this 0.273 beside the claim table's steady formula 0.000
        caption += text(lang, "page.theory_caption_async")
    return caption, charts.timeline_figure(timeline.events, schedule.num_ranks, text(lang, "page.theory_chart_title"),
                                           unit="units of T_F", clock="simulated", lang=lang,
                                           stage_to_rank=schedule.stage_to_rank)


def theory_preview(knobs: Knobs, key: str, error: Message | None, expanded: bool = True) -> None:
    """What theory predicts for these knobs before anything runs: the simulator on unit
    costs (T_F = T_I = T_W = 1, so T_B = 2), as in the papers' figures. Nothing is computed or
    shown for invalid settings: their reason stands under its field and beside Run."""
    if error is not None:  # the reason stands under its field and beside Run; nothing is built
        return
    theory = unit_cost_theory(knobs, i18n.current_lang())
    if theory is None:
        return
    caption, figure = theory
    with st.expander(t("page.theory_preview"), expanded=expanded):
        st.caption(caption)
        st.plotly_chart(figure, key=key, width="stretch")


def gated_theory(lesson: Lesson, knobs: Knobs, key: str, error: Message | None, ran: bool) -> None:
    """The theory preview behind the course's gate (folded until the student predicted); once
    a run is on the page (its verdict and report give the answers away) the preview is not
    gated, folded under it. Invalid settings get no preview (theory_preview)."""
    show = lambda: theory_preview(knobs, key=key, error=error, expanded=not ran)  # noqa: E731
    if error is not None or ran:
        show()
    else:
        course.theory_gate(lesson, knobs, show)


def render_lesson(slug: str) -> None:
    lesson = get_lesson(slug)
    claim = i18n.claim(lesson)
    st.title(f"{lesson.number}. {i18n.title(lesson)}")
    st.info(f"**{t('page.claim')}** {claim}")
    # Folded: open, the lesson's text put Run some 1500 px down the page.
    with st.expander(t("page.lesson"), expanded=False):
        st.markdown(lesson_text(lesson))
    course.extra_reading(lesson)

    st.header(t("page.run_it"))
    knobs = knob_form(lesson, lesson.schedules, lesson.editable)
    extra = extras.under_form(lesson, knobs)
    name = f"{slug}:main"
    main_items = lambda: [(knobs.schedule, runs.knobs_to_config(knobs, **extra))]  # noqa: E731

    def comparison_items():
        items = [(RunLabel.this_lesson(slug, knobs.schedule), runs.knobs_to_config(knobs, **extra))]
        items += [(label, runs.knobs_to_config(k)) for label, k in comparison_labels(lesson, knobs)]
        return items

    error = settings_error(main_items()[0][1])
    asked = course.last_valid_knobs(lesson, knobs, error is None)
    # A claim that compares is tested by its comparison: Run runs it, side by side.
    compares = lesson.claim_compares and bool(lesson.comparisons)
    # What a comparison's pairs are read by: the lesson's headline, or (None) the first run's step.
    headline = claims.headline(slug)
    items_fn = comparison_items if compares else main_items
    # Run right under the knobs, so it stays on the first screen; the prediction comes next
    # and the theory it hides after it. Run locks in what the prediction boxes hold.
    run_controls(name, t("page.run"), items_fn, error=error, primary=True,
                 before_start=lambda: course.lock_typed(lesson, asked),
                 side_by_side=compares, headline=headline,
                 kind=claims.COMPARISON if compares else claims.RUN,
                 predictions=lambda: course.stored_prediction(slug))
    if compares:
        own = RunLabel.own_run(slug)  # the run named as the tables and charts name it, where the lesson names it
        labels = t("results.list_sep").join(i18n.run_label(label) for label, _ in comparison_labels(lesson))
        st.caption(t("page.run_compares", this=i18n.run_label(own) if own else t("page.this_schedule"), labels=labels))
    course.prediction_form(lesson, asked, invalid=error is not None)
    done = run_done = finished(name, items_fn)
    gated_theory(lesson, knobs, key=f"{slug}:theory", error=error, ran=bool(done))
    if done:
        # A card that one run cannot answer reads the comparison further down, once it has run.
        compared = done if compares else runs.finished_pairs(f"{slug}:compare") if lesson.comparisons else None
        report = lambda: course.prediction_report(lesson, knobs, done[0][1], compared)  # noqa: E731
        if compares:
            verdict = claims.verdict(slug, claim, claims.COMPARISON, done, lang=i18n.current_lang())
            results.comparison_view(done, key=f"{slug}:result", verdict=verdict, after_verdict=report)
            extras.after_comparison(lesson, done, key=f"{slug}:result")
        else:
            verdict = claims.verdict(slug, claim, claims.RUN, done, lang=i18n.current_lang())
            results.run_view(done[0][1], key=f"{slug}:result", verdict=verdict, after_verdict=report)

    if lesson.comparisons and not compares:
        st.header(t("page.compare"))
        labels = t("results.list_sep").join(i18n.run_label(label) for label, _ in comparison_labels(lesson))
        st.caption(t("page.compare_caption", labels=labels))
        cname = f"{slug}:compare"
        run_controls(cname, t("page.run_comparison"), comparison_items, error=error, side_by_side=True,
                     headline=headline, kind=claims.COMPARISON)
        done = finished(cname, comparison_items)
        if done:
            verdict = claims.verdict(slug, claim, claims.COMPARISON, done, lang=i18n.current_lang())
            results.comparison_view(done, key=f"{slug}:compare", verdict=verdict)
            again = repeated_setting(run_done, done)  # the comparison ran the Run's setting again
            if again is not None:
                st.caption(repeated_in_comparison_note(i18n.current_lang(), again[1], again[2]))
            extras.after_comparison(lesson, done, key=f"{slug}:compare")

    if lesson.sweep:
        knob = lesson.sweep["knob"]
        st.header(t("page.sweep", knob=knob_label(knob)))
        sname = f"{slug}:sweep"
        sweep_items = lambda: [(v, runs.knobs_to_config(k)) for v, k in lesson.sweep_knobs(knobs)]  # noqa: E731
        run_controls(sname, t("page.run_sweep"), sweep_items, error=error,
                     help=t("page.sweep_help", values=t("results.list_sep").join(map(str, lesson.sweep["values"]))),
                     kind=claims.SWEEP, side_by_side=True, request_fn=sweep_request)
        symbol = t(f"changed.{knob}") if catalogs.has(i18n.current_lang(), f"changed.{knob}") else knob
        done = finished(sname, sweep_items, symbol)
        if done:
            verdict = claims.verdict(slug, claim, claims.SWEEP, done, lang=i18n.current_lang())
            twice = repeated_setting(run_done, done)  # one setting measured twice on the page: both figures
            note = "" if twice is None else repeated_setting_note(i18n.current_lang(), symbol, *twice)
            results.sweep_view(knob, done, key=f"{slug}:sweep", verdict=verdict, note=note)

    extras.sections(lesson, knobs, error)
    course.check_yourself(lesson)


def comparison_labels(lesson: Lesson, knobs: Knobs | None = None) -> list[tuple[RunLabel, Knobs]]:
    """The lesson's comparisons as (label in no language: the store keeps it so, knobs)."""
    return [(RunLabel.comparison(lesson.slug, i), k) for i, (_, k) in enumerate(lesson.comparison_knobs(knobs))]
