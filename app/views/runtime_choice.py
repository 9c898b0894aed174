"""Which runtime runs the playground's schedule (and the recap chooser's two): ours, torch's
(torch.distributed.pipelining's _PipelineScheduleRuntime on the same layers,
engine/torch_bridge/launch.py) or both, and the view of both: the two measured timelines one above
the other, with where and why they differ.

Settings torch's runtime does not take (overlapping steps, recompute, PipeDream's updates
inside the step: engine/torch_bridge/settings.py finds them) disable the choice, with RunConfig.check_values'
own line beside it, so a refusal is never a failed run.
"""

from __future__ import annotations

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.screens import lesson_page
from pipelab.app.views import charts, results, step_marks, step_view
from pipelab.engine.config import RunConfig
from pipelab.lessons.i18n import text
from pipelab.lessons.i18n.run_label import RunLabel
from pipelab.lessons.runtime_difference import RuntimeDifference, RuntimeFigures, runtime_difference

CHOICES = ("engine", "torch", "both")
RUNTIMES = {"engine": ("engine",), "torch": ("torch",), "both": ("engine", "torch")}
"""Each choice's runtimes (RunConfig.runtime), in the order they run and are drawn."""


def torch_refusal(config: RunConfig):
    """Why torch's runtime cannot run these settings (a coded Message), or None. Settings ours
    refuses too are the Run button's error, not this choice's."""
    if lesson_page.settings_error(config) is not None:
        return None
    return lesson_page.settings_error(config.with_(runtime="torch"))


def choose(key: str, *configs: RunConfig) -> str:
    """The runtime radio; "engine" (and the radio disabled, its reason beside it) when torch's
    runtime refuses any of these settings."""
    refusal = next((r for r in map(torch_refusal, configs) if r is not None), None)
    # The radio holds an index, not the choice's id: a value a page shows stays in its language.
    # Its labels are made in the page's language now (AppTest formats them again, outside the page).
    lang = i18n.current_lang()
    index = st.radio(t("runtime.label"), range(len(CHOICES)), horizontal=True, key=key,
                     disabled=refusal is not None, format_func=lambda i: text(lang, f"runtime.choice.{CHOICES[i]}"),
                     help=t("runtime.help"))
    if refusal is not None:
        st.caption(t("runtime.refused", reason=lesson_page.error_line(refusal)))
        return "engine"
    return CHOICES[index]


def items(schedule: str, config: RunConfig, choice: str) -> list[tuple[object, RunConfig]]:
    """The batch a Run starts: one run per runtime of the choice, each labelled with it (ours
    alone keeps the schedule's name, the label its runs always had)."""
    return batch([(schedule, config)], choice)


def batch(pairs: list[tuple[str, RunConfig]], choice: str) -> list[tuple[object, RunConfig]]:
    """Several schedules' runs on the choice's runtimes, runtime after runtime: drawn two to a
    row (results.comparison_view), ours form the top row and torch's the one below it."""
    if choice == "engine":
        return list(pairs)
    return [(RunLabel.of(f"runtime.run.{runtime}", schedule=schedule), config.with_(runtime=runtime))
            for runtime in RUNTIMES[choice] for schedule, config in pairs]


def on_runtime(done, runtime: str) -> list:
    """The (label, result) pairs of a finished batch that ran on ``runtime``."""
    return [(label, result) for label, result in done if result.config.runtime == runtime]


def differences(done, lang: str) -> list[tuple[str, RuntimeDifference]]:
    """(schedule, RuntimeDifference) for each schedule of the batch run on both runtimes."""
    ours = {result.schedule.name: result for _, result in on_runtime(done, "engine")}
    return [(result.schedule.name, runtime_difference(RuntimeFigures.of(ours[result.schedule.name]),
                                                      RuntimeFigures.of(result), lang))
            for _, result in on_runtime(done, "torch") if result.schedule.name in ours]


def both_ran(done) -> bool:
    """Whether a finished batch holds a run on each runtime."""
    return {result.config.runtime for _, result in done or ()} == {"engine", "torch"}


def both_view(done, key: str) -> None:
    """Ours and torch's runs of one schedule: the sentence, the figures, and the two measured
    timelines one above the other on one clock (chosen; wall by default, since what torch runs
    between the timed actions, its sends, receives and REDUCE_GRAD, is on the wall clock only)
    and one time axis."""
    lang = i18n.current_lang()
    by_runtime = {result.config.runtime: (label, result) for label, result in done}
    ours, theirs = by_runtime["engine"][1], by_runtime["torch"][1]
    difference = runtime_difference(RuntimeFigures.of(ours), RuntimeFigures.of(theirs), lang)
    st.info(difference.text)
    st.dataframe(results.table_columns(results.summary_rows([by_runtime["engine"], by_runtime["torch"]])),
                 hide_index=True, width="stretch")
    clock = st.radio(t("results.clock_radio"), ["wall clock", "device clock"], horizontal=True, key=f"{key}:clock",
                     format_func=lambda c: charts.clock_name(c, lang))
    st.caption(t("runtime.clock_caption_wall" if clock == "wall clock" else "runtime.clock_caption_device"))
    st.markdown(charts.legend_html(lang), unsafe_allow_html=True)
    drawn = []
    for runtime in ("engine", "torch"):
        label, result = by_runtime[runtime]
        timeline = result.timeline if clock == "device clock" else result.timeline.on_wall_clock()
        step = result.measured_steps()[-1]
        drawn.append((label, result, charts.step_events(timeline, step), step))
    x_max = max(charts.span_ms(events) for _, _, events, _ in drawn)
    for i, (label, result, events, step) in enumerate(drawn):
        title = t("runtime.timeline_title", label=label, clock=charts.clock_name(clock, lang),
                  shown=step_marks.steps_title(step, result.config.steps, lang))
        st.plotly_chart(step_view.marked_timeline(events, result.schedule.num_ranks, title, x_max, legend=False,
                                                  clock=clock, link_cost_s=result.metrics.link_cost_s, lang=lang),
                        key=f"{key}:timeline:{i}", width="stretch")
