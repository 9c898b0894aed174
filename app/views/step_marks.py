"""Step boundaries on a timeline chart: a thin vertical mark per device where each step starts.

With a barrier between steps every device turns to the next step after the flush; with
overlapping steps (engine/schedules/stream.py) each device turns on its own, so the marks of one step
form a slanted line and the steps' parallelograms tile (arXiv 2401.10241, section 4). The
marks are read from the events' ``step`` field, the same starts as a run's
``metrics.device_step_starts_per_device`` (pipelab.engine.results.timeline.Timeline.step_starts), on whichever
clock the chart shows. Plotly only, no Streamlit: texts come from the course's catalogs in
``lang`` (pipelab.lessons.i18n, keys ``steps.*``).
"""

from __future__ import annotations

import plotly.graph_objects as go

from pipelab.engine.results.timeline import RECV, SEND, Event
from pipelab.lessons.i18n import text

MARK_COLOR = "#333333"
LABELLED_STEPS = 12
"""Above this many steps the marks carry no "step k" labels (they would overlap)."""


def step_starts(events: list[Event]) -> dict[int, dict[int, float]]:
    """Per device, the start of its first compute action of each step, from the events as
    they are drawn (already shifted to the chart's origin)."""
    starts: dict[int, dict[int, float]] = {}
    for e in events:
        if e.kind in (SEND, RECV) or e.microbatch < 0:  # messages, and aggregated slices, carry no step
            continue
        mine = starts.setdefault(e.rank, {})
        if e.step not in mine or e.start < mine[e.step]:
            mine[e.step] = e.start
    return starts


def steps_shown(events: list[Event]) -> list[int]:
    return sorted({e.step for e in events if e.kind not in (SEND, RECV)})


def add_step_marks(fig: go.Figure, events: list[Event], num_ranks: int, scale: float = 1e3,
                   lang: str = "en") -> go.Figure:
    """Draw each device's step starts on ``fig`` (a charts.timeline_figure of ``events``) as
    thin vertical marks across that device's row, when the events hold more than one step;
    the top device's marks say which step starts there. Returns ``fig``."""
    steps = steps_shown(events)
    if len(steps) < 2:
        return fig
    starts = step_starts(events)
    for rank in range(num_ranks):
        for k, start in sorted(starts.get(rank, {}).items()):
            # Category rows sit at 0, 1, ... (reversed axis): the mark spans the row's bar.
            fig.add_shape(type="line", xref="x", yref="y", x0=start * scale, x1=start * scale,
                          y0=rank - 0.45, y1=rank + 0.45, line=dict(color=MARK_COLOR, width=1.5))
            if rank == min(starts) and len(steps) <= LABELLED_STEPS:
                fig.add_annotation(x=start * scale, y=rank - 0.45, xref="x", yref="y",
                                   text=text(lang, "steps.mark", k=k), showarrow=False, xanchor="left",
                                   yanchor="bottom", font=dict(size=10))
    return fig


def steps_title(step: int | None, num_steps: int, lang: str = "en") -> str:
    """The part of a timeline's title naming what it shows: one step, or all of them."""
    return text(lang, "steps.all_title", n=num_steps) if step is None else text(lang, "steps.one_title", k=step)
