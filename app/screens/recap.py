"""The recap page: every registered schedule in one table, and "which schedule?" for a budget."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner import runs
from pipelab.app.screens import recap_notes
from pipelab.app.screens.lesson_page import typed_whole
from pipelab.app.views import results, runtime_choice
from pipelab.app.views.verdict_box import STATUS_BOX, status_text
from pipelab.engine.config import Limits
from pipelab.engine.runtime.paired import paired_ratio
from pipelab.engine.schedules import chunked_schedules
from pipelab.lessons import Knobs, claims, comparison_verdict
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.overview import (
    Choice,
    ScheduleRow,
    SplitRow,
    rank_schedules,
    rank_splits,
    schedule_rows,
    split_rows,
)

RUN_NAME = "recap:chooser"
SPLIT_NAME = "recap:split"
MODEL_SHARES = (1.0, 0.5, 0.25, 0.125)
"""The model budget's choices: the share of the whole model one device may hold."""


def _round(value, digits: int = 3):
    return None if value is None else round(value, digits)


def _figure(value, digits: int = 3) -> str:
    """A number of the table as text, "—" where a schedule has none (no closed form, say): a
    column of numbers and None showed the word None to students."""
    return "—" if value is None else f"{value:.{digits}f}"


def _constraint(row: ScheduleRow) -> str:
    if row.error:
        return i18n.error_text(row.error)
    return i18n.schedule_constraint(row.name)


def table_rows(rows: list[ScheduleRow]) -> list[dict]:
    """The recap's numbers, with column names in the current language: few enough columns to
    fit a 1400 px page whole (a wider table scrolled sideways and cut a column at its edge)."""
    col = lambda name: t(f"recap.col.{name}")  # noqa: E731
    return [{col("schedule"): _named(r.name), col("formula_value"): _figure(r.formula_value),
             col("simulated"): _figure(r.simulated_bubble), col("step"): _figure(r.step_time, 2),
             col("peak"): _figure(r.peak_activations, 2), col("versions"): _count(r.weight_versions),
             col("messages"): _count(r.messages_per_step)} for r in rows]


def _named(name: str) -> str:
    """A schedule in a table cell or run label: its id in English, the page's words in another
    language (交错式 1F1B（interleaved）; the walk found the Chinese recap reading zb-v, naive)."""
    return catalogs.schedule_option(i18n.current_lang(), name)


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def prose_rows(rows: list[ScheduleRow]) -> list[dict]:
    """The recap's words (synchronous or not, the formula, the constraints, what each schedule does), in a table of
    their own that wraps its text rather than cutting it."""
    col = lambda name: t(f"recap.col.{name}")  # noqa: E731
    return [{col("schedule"): _named(r.name), col("synchronous"): t("recap.yes") if r.synchronous else t("recap.no"),
             col("formula"): r.formula or "—", col("constraints"): _constraint(r),
             col("summary"): i18n.schedule_summary(r.name)} for r in rows]


def chooser_rows(choices: list[Choice]) -> list[dict]:
    col = lambda name: t(f"recap.col.{name}")  # noqa: E731
    return [{col("rank"): str(i + 1) if c.fits else "—", col("schedule"): _named(c.row.name),
             col("step"): _round(c.row.step_time, 2), col("peak"): _round(c.row.peak_activations, 2),
             col("fits"): t("recap.fits") if c.fits else t("recap.too_big", peak=_round(c.row.peak_activations, 2)),
             col("messages"): c.row.messages_per_step} for i, c in enumerate(choices)]


def _chunks(row: ScheduleRow) -> int:
    return row.chunks if row.name in chunked_schedules() else 1


def run_knobs(row: ScheduleRow, p: int, m: int, layers: int | None = None) -> Knobs:
    """The knobs a chooser run uses: the lessons' mlp at (p, m), ``layers`` deep (shared_layers:
    one model for both runs), or deep enough for this schedule's p x v stages alone."""
    layers = max(8, p * _chunks(row)) if layers is None else layers
    return Knobs(schedule=row.name, stages=p, microbatches=m, chunks=_chunks(row), layers=layers)


def shared_layers(rows: list[ScheduleRow], p: int) -> int:
    """One depth for every run compared: enough layers for the most stages any of them has
    (p x v). Each run sized to its own schedule compared interleaved's 32 layers at v = 8 with
    ZB-V's 8 and blamed the bubble for a model four times deeper."""
    return max(8, *(p * _chunks(row) for row in rows))


def bounded(col, label: str, key: str, value, low, high, step, help: str | None = None):
    """A number box whose range the label names, or None after a line under it, in red and in
    words, says why the value cannot be used. The box itself takes any number: one bounded in
    the browser turned red with its reason only in a tooltip and kept its old value, so the
    tables went on showing settings the box no longer held."""
    shown = lambda x: f"{x:g}"  # noqa: E731
    got = col.number_input(t("recap.with_range", label=label, low=shown(low), high=shown(high)), value=value,
                           step=step, key=key, help=help)
    if low <= got <= high:
        return got
    col.markdown(f":red[{t('recap.out_of_range', label=label, low=shown(low), high=shown(high), got=shown(got))}]")
    return None


def bounded_whole(col, label: str, key: str, value: int, low: int, high: int):
    """A whole-number box (p, m, v) as the lesson pages have them: a text field whose entry
    arrives as typed, or None after a red line in words. A number box rounded 2.5 to 2 in the
    browser without a word (the walk, issue 47)."""
    typed = col.text_input(t("recap.with_range", label=label, low=low, high=high), value=str(value), key=key)
    got = typed_whole(typed)
    if isinstance(got, int) and low <= got <= high:
        return got
    col.markdown(f":red[{t('recap.whole_out_of_range', label=label, low=low, high=high, got=str(typed).strip())}]")
    return None


def settings_form() -> tuple[int, int, int, float, bool] | None:
    """The recap's settings, or None while one of them is out of its range (its line says why)."""
    limits = Limits.from_env()
    st.subheader(t("recap.settings"))
    c1, c2, c3, c4 = st.columns(4)
    p = bounded_whole(c1, t("knob.stages"), "recap:p", 4, 1, limits.max_stages)
    m = bounded_whole(c2, t("knob.microbatches"), "recap:m", 8, 1, limits.max_microbatches)
    v = bounded_whole(c3, t("knob.chunks"), "recap:v", 2, 1, 8)
    budget = bounded(c4, t("recap.budget"), "recap:budget", 4.0, 1.0, float(limits.max_microbatches * 2), 0.5)
    allow_async = st.checkbox(t("recap.allow_async"), value=False, key="recap:async")
    if None in (p, m, v, budget):
        return None
    return int(p), int(m), int(v), float(budget), allow_async


def split_table(ranked: list[tuple[SplitRow, bool]]) -> list[dict]:
    col = lambda name: t(f"recap.col.{name}")  # noqa: E731
    return [{col("rank"): str(i + 1) if fits else "—", col("layout"): f"{r.replicas} × {r.stages}",
             col("m_per_pipeline"): r.microbatches, col("model_share"): "1" if r.stages == 1 else f"1/{r.stages}",
             col("simulated"): _figure(r.bubble), col("exposed"): _round(r.exposed_reduce, 2),
             col("step_model"): _round(r.step_time, 2),
             col("fits"): t("recap.fits") if fits else t("recap.split_too_big", share=_share(r.stages))}
            for i, (r, fits) in enumerate(ranked)]


def _share(stages: int) -> str:
    """The model one device holds, in words: the whole model, or 1/p of it."""
    return t("recap.whole_model") if stages == 1 else t("recap.share_of_model", p=stages)


def split_knobs(row: SplitRow) -> Knobs:
    """The knobs a split run uses: lesson 7's model (every layout trains the same one)."""
    return Knobs(schedule="1f1b", stages=row.stages, data_parallel=row.replicas, microbatches=row.microbatches)


def render_split() -> None:
    """n workers as d pipelines of p stages: ranked by the simulator, the top two run for real."""
    limits = Limits.from_env()
    st.header(t("recap.split"))
    st.caption(t("recap.split_intro"))
    c1, c2, c3, c4 = st.columns(4)
    n = bounded_whole(c1, t("recap.workers"), "recap:n", 4, 1, limits.max_stages)
    total = bounded_whole(c2, t("recap.global_m"), "recap:global_m", 8, 1, limits.max_microbatches)
    reduce_cost = bounded(c3, t("recap.reduce_cost"), "recap:reduce_cost", 0.5, 0.0, 10.0, 0.1,
                          help=t("recap.reduce_cost_help"))
    budget = c4.selectbox(t("recap.model_budget"), MODEL_SHARES, index=1, key="recap:model_budget",
                          format_func=lambda share: "1" if share == 1 else f"1/{round(1 / share)}")
    if None in (n, total, reduce_cost):
        st.warning(t("recap.fix_settings"))
        return
    n, total, reduce_cost = int(n), int(total), float(reduce_cost)
    ranked = rank_splits(split_rows(n, total, reduce_cost), budget)
    st.dataframe(split_table(ranked), hide_index=True, width="stretch")
    fit = [row for row, fits in ranked if fits]
    if len(fit) < 2:
        st.info(t("recap.split_one" if fit else "recap.split_none"))
        return
    first, second = fit[:2]
    top = [(t("recap.split_label", d=row.replicas, p=row.stages), split_knobs(row)) for row in (first, second)]
    st.caption(t("recap.split_run_caption", first=top[0][0], second=top[1][0], n=n, total=total))
    c1, c2, _ = st.columns([1.4, 1, 5], gap="small")
    if c1.button(t("recap.run_top"), key=f"{SPLIT_NAME}:start", type="primary"):
        # Layouts of one number of processes share one launch, steps in turn.
        if runs.start(SPLIT_NAME, [(label, runs.knobs_to_config(k)) for label, k in top], side_by_side=True):
            st.rerun()
    if c2.button(t("page.cancel"), key=f"{SPLIT_NAME}:cancel", disabled=not runs.active(SPLIT_NAME)):
        runs.cancel(SPLIT_NAME)
    done = runs.panel(SPLIT_NAME)
    if done and len(done) == 2:
        (a_label, a), (b_label, b) = done
        ratio, _, _ = paired_ratio(a, b, lambda r: r.metrics.device_step_time_s)  # the median over pairs
        theory = a.metrics.simulated_step_time_s / b.metrics.simulated_step_time_s
        status = split_status(ratio)
        said = t("recap.split_verdict", a=a_label, b=b_label, ratio=f"{ratio:.3f}", theory=f"{theory:.3f}",
                 ranked=f"{first.step_time / second.step_time:.3f}")
        said = catalogs.join_sentences(i18n.current_lang(), [said, t("compare.chooser.band",
                                                                     noise=f"{comparison_verdict.NOISE:.0%}")])
        STATUS_BOX[status](t("verdict.line", status=status_text(status), reason=said))
        results.comparison_view(done, key="recap:split_compare")


def split_status(ratio: float) -> str:
    """The ranking's status from the first split's median step over the second's, by the
    chooser's band (comparison_verdict.NOISE, stated under the verdict): within it a tie, holds
    within noise; beyond it, holds where the first is shorter and does not hold where the second
    is. Not "some pair of steps reversed": with a dozen pairs some nearly always do, and a
    reversal beyond the band was graded within noise (issue 47)."""
    if abs(ratio - 1.0) <= comparison_verdict.NOISE * max(ratio, 1.0):
        return claims.NOISE
    return claims.HOLDS if ratio < 1.0 else claims.FAILS


def render_recap() -> None:
    st.title(t("recap.title"))
    st.caption(t("recap.intro"))
    settings = settings_form()
    if settings is None:  # no table for settings the boxes no longer hold
        st.warning(t("recap.fix_settings"))
        render_split()
        return
    p, m, v, budget, allow_async = settings
    rows = schedule_rows(p, m, v)
    st.dataframe(table_rows(rows), hide_index=True, width="stretch")
    said = recap_notes.notes(rows, p, m)
    colon = "：" if i18n.current_lang() == "zh" else ": "
    if said:
        st.markdown("\n".join([t("recap.notes")] + [f"- **{_named(name)}**{colon}{note}" for name, note in said]))
    st.caption(t("recap.peak_note"))
    st.table(pd.DataFrame(prose_rows(rows)).set_index(t("recap.col.schedule")))

    st.header(t("recap.chooser"))
    st.caption(t("recap.chooser_intro"))
    choices = rank_schedules(p, m, budget, v, allow_async)
    st.dataframe(chooser_rows(choices), hide_index=True, width="stretch")
    fit = [c.row for c in choices if c.fits]
    if not fit:
        st.warning(t("recap.none_fit", budget=budget, p=p))
    elif len(fit) == 1:
        st.info(t("recap.only_one"))
    else:
        chooser_runs(fit, p, m)
    render_split()


def chooser_runs(fit: list[ScheduleRow], p: int, m: int) -> None:
    """The chooser's top two schedules, run for real on our runtime or torch's."""
    first, second = fit[0], fit[1]
    lang = i18n.current_lang()
    st.success(t("recap.best", first=catalogs.schedule_said(lang, first.name),
                 second=catalogs.schedule_said(lang, second.name)))
    layers = shared_layers([first, second], p)
    top = [(_named(row.name), run_knobs(row, p, m, layers)) for row in (first, second)]
    st.caption(t("recap.run_caption", first=top[0][0], second=top[1][0], p=p, m=m,
                 model=catalogs.model_said(lang, top[0][1].model), layers=top[0][1].layers,
                 hidden=top[0][1].hidden))
    configs = [(name, runs.knobs_to_config(knobs)) for name, knobs in top]
    runtime = runtime_choice.choose(f"{RUN_NAME}:runtime", *(config for _, config in configs))
    c1, c2, _ = st.columns([1.4, 1, 5], gap="small")
    if c1.button(t("recap.run_top"), key=f"{RUN_NAME}:start", type="primary"):
        batch = runtime_choice.batch(configs, runtime)
        # Our runtime's two runs share one launch, steps in turn; torch's runs launch apart.
        if runs.start(RUN_NAME, batch, side_by_side=all(config.runtime == "engine" for _, config in batch)):
            st.rerun()
    if c2.button(t("page.cancel"), key=f"{RUN_NAME}:cancel", disabled=not runs.active(RUN_NAME)):
        runs.cancel(RUN_NAME)
    done = runs.panel(RUN_NAME)
    if done:
        # The verdict compares the two schedules on one runtime: ours when both ran.
        chooser_verdict_view(runtime_choice.on_runtime(done, done[0][1].config.runtime),
                             {row.name: row.step_time for row in (first, second)}, p, m)
        for name, difference in runtime_choice.differences(done, i18n.current_lang()):
            st.info(f"**{catalogs.schedule_said(i18n.current_lang(), name)}**: {difference.text}")
        results.comparison_view(done, key="recap:compare")


def chooser_verdict_view(done, simulated_steps: dict, p: int, m: int) -> None:
    """The two runs' verdict: whose step is shorter, by how much, against the chooser's
    ranking, and why when the run reverses it. Runs of an earlier choice (other schedules,
    p or m) get none: the chooser's theory above is no longer theirs."""
    names = [result.schedule.name for _, result in done]
    if len(done) < 2 or any(simulated_steps.get(name) is None for name in names) or \
            any((r.config.stages, r.config.microbatches) != (p, m) for _, r in done) or \
            len({(r.config.layers, r.config.hidden) for _, r in done}) > 1:
        return  # no ranking judged on two different models (runs cached before they shared one)
    by_name = {result.schedule.name: result for _, result in done}
    verdict = comparison_verdict.chooser_verdict(
        [(result.schedule.name, result.metrics) for _, result in done], simulated_steps, i18n.current_lang(),
        pairs=lambda a, b: paired_ratio(by_name[a], by_name[b], lambda r: r.metrics.device_step_time_s))
    STATUS_BOX[verdict.status](t("verdict.line", status=status_text(verdict.status), reason=verdict.text))
    if verdict.notes:
        st.caption(verdict.notes_text)


__all__ = ["chooser_rows", "render_recap", "run_knobs", "shared_layers", "split_status", "table_rows"]
