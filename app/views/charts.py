"""Plotly figures for timelines, bubbles, memory and losses. No Streamlit here.

One colour per kind of action, shared by every chart of the app (COLORS). Every text a
chart shows comes from the course's catalogs in ``lang`` (default English), so a cached
figure is one per language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy  # noqa: F401
import pandas  # noqa: F401
import plotly.graph_objects as go

from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.results.records import RankMemory
from pipelab.engine.results.timeline import RECV, SEND, Event, Timeline

# numpy and pandas are imported here, under this module's import lock, on purpose: plotly
# imports them lazily and looks them up in sys.modules first, so when several sessions drew
# their first chart at once, one of them found a half-imported pandas and failed.
from pipelab.engine.theory.breakdown import TableRow
from pipelab.engine.theory.memory_tradeoff import TradeoffPoint, frontier
from pipelab.lessons.i18n import text as tr
from pipelab.lessons.tradeoff_verdict import label_in

COLORS = {
    "F": "#4C78A8",      # forward: blue
    "B": "#54A24B",      # full backward: green
    "I": "#88D27A",      # input-gradient backward: light green
    "W": "#B279A2",      # weight-gradient backward: purple
    "U": "#9D755D",      # optimizer step: brown
    "R": "#E45756",      # a stage's data-parallel all-reduce: red
    "comm": "#F58518",   # send / recv: orange
}
KINDS = ("F", "B", "I", "W", "U", "R", "comm")


def names(lang: str = "en") -> dict[str, str]:
    """Legend text of each kind of action."""
    return {k: tr(lang, f"chart.kind.{k}") for k in KINDS}


def idle_note(lang: str = "en") -> str:
    return tr(lang, "chart.idle_note")


def clock_name(clock: str, lang: str = "en") -> str:
    """"device clock", "wall clock" or "simulated" (the ids the app passes) in ``lang``."""
    key = {"device clock": "clock.device", "wall clock": "clock.wall", "simulated": "clock.simulated"}.get(clock)
    return tr(lang, key) if key else clock


def unit_name(unit: str, lang: str = "en") -> str:
    return tr(lang, "chart.unit_tf") if unit == "units of T_F" else unit


NAMES = names()
LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", xanchor="left", x=0, font=dict(size=11))
"""Every legend sits under its chart, in the figure's own bottom margin (plotly makes room):
above the plot, right-aligned, it ran into a long title (lesson 6's timelines)."""
LEGEND_ROOM = 40
"""Pixels a timeline grows by for its legend, so its bars keep their height."""
SERIES = {"device": "#4C78A8", "wall": "#F58518", "simulated": "#54A24B", "formula": "#E45756"}
LABEL_LIMIT = 60
"""Above this many bars, no text labels (they would only be noise)."""
MAX_BARS = 1500
"""A timeline never draws more bars than this: beyond it, each device's step is cut into
time slices drawn one bar each (aggregate_slices). Thousands of bars make plotly's figure
slow to build on the server and to draw in the browser, and are below a pixel each anyway."""


def device_labels(num_ranks: int, lang: str = "en", pipeline_ranks: int | None = None,
                  stage_replicas: Sequence[int] = ()) -> list[str]:
    """One label a row. With data parallelism (``pipeline_ranks`` p below ``num_ranks``) row g is
    device g % p of pipeline g // p (engine/schedules/data_parallel.py RankLayout), so the rows of
    one pipeline sit together and each data-parallel group is the same device in every pipeline.
    With replicated stages (Schedule.stage_replicas) each row is a stage's worker, a stage's
    workers side by side (engine/schedules/replication.py)."""
    if any(count > 1 for count in stage_replicas):
        return [tr(lang, "chart.stage_replica", s=s, k=k) for s, count in enumerate(stage_replicas)
                for k in range(count)]
    if pipeline_ranks is None or pipeline_ranks >= num_ranks:
        return [tr(lang, "chart.device", r=r) for r in range(num_ranks)]
    return [tr(lang, "chart.device_of_pipeline", k=g // pipeline_ranks, r=g % pipeline_ranks)
            for g in range(num_ranks)]


def step_events(timeline: Timeline, step: int | None) -> list[Event]:
    """Events of one step (all if None), shifted so the step's first event starts at 0."""
    events = [e for e in timeline.events if step is None or e.step == step]
    if not events:
        return []
    origin = min(e.start for e in events)
    return [replace(e, start=e.start - origin, end=e.end - origin) for e in events]


def drawn_kinds(event_lists: list[list[Event]]) -> set[str]:
    """The action kinds (F, B, I, W, U, R) among the events drawn, for the colour key
    (legend_html): a schedule's action lists leave out the optimizer step that the executor
    adds after a synchronous step's flush, which every measured chart draws."""
    return {str(e.kind) for events in event_lists for e in events if e.kind in COLORS and e.kind != "comm"}


def span_ms(events: list[Event]) -> float:
    return max((e.end for e in events), default=0.0) * 1e3


def drawn_comm(events: list[Event], link_cost_s: float | None) -> list[Event]:
    """The part of each send/recv that is the message's own transfer.

    A recv event runs from when its rank started waiting to when the message arrived; all
    but the last ``link_cost_s`` of that is the rank idle, waiting for the sender to get
    there (the bubble), not data moving. So a recv is drawn as its last link cost only (the
    measured ping-pong latency, metrics.link_cost_s), and the wait before it stays blank,
    like any other idle time. Zero-length events (a send on the device clock, a message
    that was already there) draw nothing and are dropped."""
    drawn = []
    for e in events:
        if e.kind == RECV and link_cost_s is not None:
            e = replace(e, start=max(e.start, e.end - link_cost_s))
        if e.duration > 0:
            drawn.append(e)
    return drawn


def aggregate_slices(events: list[Event], num_ranks: int, slices: int) -> list[Event]:
    """Each device's compute cut into ``slices`` equal time slices, one bar per busy slice:
    coloured by the kind of action that took most of it, as long as the busy time in it (so
    idle time still shows as the gap after each bar). Micro-batch -1 marks an aggregate."""
    if not events:
        return []
    origin = min(e.start for e in events)
    width = (max(e.end for e in events) - origin) / slices or 1.0
    busy: dict[tuple[int, int], dict[str, float]] = {}
    for e in events:
        first, last = int((e.start - origin) / width), int((e.end - origin) / width)
        for k in range(first, min(last, slices - 1) + 1):
            overlap = min(e.end, origin + (k + 1) * width) - max(e.start, origin + k * width)
            if overlap > 0:
                kinds = busy.setdefault((e.rank, k), {})
                kinds[e.kind] = kinds.get(e.kind, 0.0) + overlap
    bars = []
    for (rank, k), kinds in sorted(busy.items()):
        kind = max(kinds, key=kinds.get)
        start = origin + k * width
        bars.append(Event(rank, -1, kind, -1, start, start + min(width, sum(kinds.values()))))
    return bars


CHUNK_PATTERNS = ("", "/", "x", ".", "-", "|", "+", "\\")
"""The fill of a bar by the chunk its stage is on its device (chunk_of): the first chunk solid,
the second hatched "/", and so on, so a micro-batch's second visit to a device shows in the
kind's own colour (a lighter shade of B's green read as I's)."""


def _chunk_pattern(shape) -> dict:
    """White hatching over the bar's own colour ("overlay": with plotly's default "replace" the
    colour is the hatching's and the ground is transparent, so a white hatch drew nothing)."""
    return dict(shape=shape, fillmode="overlay", fgcolor="white", size=6, solidity=0.35)


def chunk_of(events: Sequence[Event], stage_to_rank: Sequence[int] | None = None) -> dict[int, int]:
    """Each stage's chunk: its index in its device's sorted list of stages (interleaved: stage
    s is chunk s // p; a V: stages r and 2p-1-r are chunks 0 and 1 of device r). From the
    schedule's ``stage_to_rank`` where given, else from the stages each row of ``events`` ran.
    Empty when every device holds one stage (v = 1): nothing to mark."""
    if stage_to_rank is not None:
        by_rank: dict[int, list[int]] = {}
        for stage, rank in enumerate(stage_to_rank):
            by_rank.setdefault(rank, []).append(stage)
    else:
        seen: dict[int, set[int]] = {}
        for e in events:
            if e.stage >= 0:
                seen.setdefault(e.rank, set()).add(e.stage)
        by_rank = {rank: sorted(stages) for rank, stages in seen.items()}
    if all(len(stages) <= 1 for stages in by_rank.values()):
        return {}
    return {stage: i for stages in by_rank.values() for i, stage in enumerate(sorted(stages))}


def timeline_figure(events: list[Event], num_ranks: int, title: str, x_max_ms: float | None = None,
                    show_comm: bool = True, height: int | None = None, legend: bool = True,
                    unit: str = "ms", clock: str | None = None, link_cost_s: float | None = None,
                    lang: str = "en", pipeline_ranks: int | None = None,
                    stage_to_rank: Sequence[int] | None = None, stage_replicas: Sequence[int] = ()) -> go.Figure:
    """Horizontal bars, one row per device, one trace per kind of action.

    Times are seconds shown in ms, or, with ``unit`` set to anything else, shown as they are
    (the simulator's unit-cost timelines, where T_F = 1). ``clock`` names the clock in the
    axis title ("device clock", "wall clock"). Messages are drawn as their transfer only
    (drawn_comm, with ``link_cost_s``); past MAX_BARS bars the compute is drawn in time
    slices (aggregate_slices) and the title says so. ``pipeline_ranks``: a data-parallel run's
    p, its rows labelled by pipeline (device_labels); ``stage_replicas``: a run of replicated
    stages, its rows labelled by stage and worker. Where a device holds several chunks
    (v > 1; chunk_of, from the schedule's ``stage_to_rank`` or the events), each compute bar is
    filled by its chunk (CHUNK_PATTERNS) and its text reads "3·c1" (micro-batch 3, chunk 1)."""
    scale = 1e3 if unit == "ms" else 1.0
    labels = device_labels(num_ranks, lang, pipeline_ranks, stage_replicas)
    kind_names = names(lang)
    compute = [e for e in events if e.kind not in (SEND, RECV)]
    comm = drawn_comm([e for e in events if e.kind in (SEND, RECV)], link_cost_s) if show_comm else []
    sliced = len(compute) + len(comm) > MAX_BARS
    if sliced:
        slices = max(1, MAX_BARS // max(num_ranks, 1))
        compute, comm = aggregate_slices(compute, num_ranks, slices), []
        title = f"{title}<br><sup>{tr(lang, 'chart.slices', events=len(events), slices=slices)}</sup>"
    groups: dict[str, list[Event]] = {}
    for e in compute:
        groups.setdefault(e.kind, []).append(e)
    if comm:
        groups["comm"] = comm
    compute_count = len(compute)
    # A time slice (past MAX_BARS) stands for several actions: no chunk to mark.
    chunks = {} if sliced else chunk_of(events, stage_to_rank)
    fig = go.Figure()
    for key in KINDS:
        group = groups.get(key)
        if not group:
            continue
        is_comm = key == "comm"
        # An R covers a stage of every micro-batch, and a time slice (stage -1) none: no chunk.
        chunked = bool(chunks) and not is_comm and key != "R"
        if chunked:  # chunk 0's bars first: the legend draws a trace's swatch as its first bar, solid
            group = sorted(group, key=lambda e: chunks.get(e.stage, 0))
        own = [chunks.get(e.stage, 0) if chunked else 0 for e in group]
        text = None
        if not is_comm and key != "R" and compute_count <= LABEL_LIMIT:  # an R covers every micro-batch
            text = [f"{e.microbatch}·c{c}" if chunked else str(e.microbatch) for e, c in zip(group, own)]
        marker = dict(color=COLORS[key], line=dict(width=0.4 if not is_comm else 0, color="white"))
        if chunked:
            marker["pattern"] = _chunk_pattern([CHUNK_PATTERNS[c % len(CHUNK_PATTERNS)] for c in own])
        hover_chunk = ("<br>" + tr(lang, "chart.hover_chunk", chunk="%{customdata[5]}")) if chunked else ""
        fig.add_trace(go.Bar(
            orientation="h", name=kind_names[key], legendgroup=key,
            base=[e.start * scale for e in group], x=[max(e.duration, 0.0) * scale for e in group],
            y=[labels[e.rank] for e in group],
            # Communication sits in a thin lane under each row so it never hides compute.
            width=0.18 if is_comm else 0.62, offset=0.24 if is_comm else -0.4,
            marker=marker,
            text=text, textposition="inside", insidetextanchor="middle", textfont=dict(size=10),
            customdata=[[e.stage, e.microbatch, e.duration * scale, e.kind, e.peer if e.peer is not None else "", c]
                        for e, c in zip(group, own)],
            hovertemplate=(tr(lang, "chart.hover", kind="%{customdata[3]}", stage="%{customdata[0]}",
                                microbatch="%{customdata[1]}")
                           + hover_chunk
                           + ("<br>" + tr(lang, "chart.hover_comm", peer="%{customdata[4]}") if is_comm else "")
                           + f"<br>%{{customdata[2]:.3f}} {unit_name(unit, lang)}<extra></extra>"),
        ))
    if chunks and legend:  # what the fills mean, once, in the legend under the chart
        for c in range(1, max(chunks.values()) + 1):
            fig.add_trace(go.Bar(orientation="h", name=tr(lang, "chart.chunk_fill", chunk=c), x=[None], y=[None],
                                 marker=dict(color="#888888",
                                             pattern=_chunk_pattern(CHUNK_PATTERNS[c % len(CHUNK_PATTERNS)])),
                                 hoverinfo="skip", legendgroup=f"chunk{c}"))
    axis = (tr(lang, "chart.time_axis_clock", unit=unit_name(unit, lang), clock=clock_name(clock, lang)) if clock
            else tr(lang, "chart.time_axis", unit=unit_name(unit, lang)))
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)), barmode="overlay", bargap=0.1,
        height=(height or max(180, 70 + 42 * num_ranks)) + (LEGEND_ROOM if legend else 0),
        margin=dict(l=10, r=10, t=40, b=30),
        legend=LEGEND_BELOW,
        xaxis=dict(title=axis, range=[0, (x_max_ms or span_ms(events) * scale / 1e3 or 1.0) * 1.02]),
        yaxis=dict(type="category", categoryorder="array", categoryarray=labels, autorange="reversed"),
        uniformtext=dict(minsize=7, mode="hide"), showlegend=legend,
    )
    return fig


def legend_html(lang: str = "en", with_reduce: bool = False, chunked: bool = False, kinds=None) -> str:
    """The colour key as one line of HTML, for charts drawn without a legend; the all-reduce (R)
    only ``with_reduce``, where a run with data parallelism is drawn; what a hatched bar is
    (a device's later chunk, CHUNK_PATTERNS) only ``chunked``; with ``kinds`` (the action kinds
    the drawn schedules have), only those and messages: lesson 1's key listed I and W, which
    neither naive nor GPipe has."""
    kind_names = names(lang)
    keys = " &nbsp; ".join(f'<span style="color:{COLORS[k]}">&#9632;</span> {kind_names[k]}' for k in COLORS
                           if (with_reduce or k != "R") and (kinds is None or k in kinds or k in ("R", "comm")))
    chunk_note = f" &nbsp; {tr(lang, 'chart.chunk_note')}" if chunked else ""
    return f"{keys}{chunk_note} &nbsp; {idle_note(lang)}"


def bubble_figure(metrics: RunMetrics, num_ranks: int, lang: str = "en") -> go.Figure:
    labels = device_labels(num_ranks, lang)
    fig = go.Figure()
    for values, name, color in ((metrics.device_bubble_fraction_per_device, tr(lang, "chart.measured_device"),
                                 SERIES["device"]),
                                (metrics.wall_bubble_fraction_per_device, tr(lang, "chart.measured_wall"),
                                 SERIES["wall"]),
                                (metrics.simulated_bubble_fraction_per_device, tr(lang, "chart.simulated"),
                                 SERIES["simulated"])):
        if values:
            fig.add_trace(go.Bar(name=name, x=labels, y=values, marker_color=color,
                                 hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"))
    formula = metrics.formula_bubble_fraction
    if formula is not None:
        fig.add_trace(go.Scatter(name=tr(lang, "chart.formula_device0"), x=labels, y=[formula] * num_ranks,
                                 mode="lines+markers", line=dict(color=SERIES["formula"], dash="dash")))
    fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=40, b=30),
                      title=dict(text=tr(lang, "chart.bubble_title"), font=dict(size=14)),
                      yaxis=dict(range=[0, 1], title=tr(lang, "chart.bubble_fraction")),
                      legend=LEGEND_BELOW)
    return fig


def memory_figure(memory: dict[int, RankMemory], num_ranks: int, lang: str = "en") -> go.Figure:
    fig = go.Figure()
    for r in range(num_ranks):
        samples = memory[r].activation_timeline if r in memory else ()
        fig.add_trace(go.Scatter(name=tr(lang, "chart.device", r=r), x=[t * 1e3 for t, _ in samples],
                                 y=[b / 2**20 for _, b in samples], mode="lines", line=dict(shape="hv")))
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=40, b=30),
                      title=dict(text=tr(lang, "chart.memory_title"), font=dict(size=14)),
                      xaxis=dict(title=tr(lang, "chart.time_axis_clock", unit="ms",
                                            clock=clock_name("device clock", lang))),
                      yaxis=dict(title="MiB"), legend=LEGEND_BELOW)
    return fig


def loss_figure(series: list[tuple[str, list[float]]], title: str | None = None, lang: str = "en") -> go.Figure:
    title = title or tr(lang, "chart.loss_title")
    fig = go.Figure()
    for name, losses in series:
        fig.add_trace(go.Scatter(name=name, x=list(range(len(losses))), y=losses, mode="lines+markers"))
    fig.update_layout(height=280, margin=dict(l=10, r=10, t=40, b=30), title=dict(text=title, font=dict(size=14)),
                      xaxis=dict(title=tr(lang, "chart.step"), dtick=1),
                      yaxis=dict(title=tr(lang, "chart.mean_loss")), showlegend=len(series) > 1, legend=LEGEND_BELOW)
    return fig


def sweep_figure(knob: str, points: list[tuple[int, RunMetrics]], curve: list[tuple[float, float]] | None,
                 lang: str = "en", knob_label: str | None = None) -> go.Figure:
    """Bubble fraction against a swept knob: measured, simulated, formula curve. Each series
    has its own line style and an open marker, so where two coincide both stay visible.
    ``knob_label``: the knob as the page names it (default: its name)."""
    knob_label = knob_label or knob
    xs = [v for v, _ in points]
    fig = go.Figure()
    metrics = [m for _, m in points]
    for key, ys, name, symbol, dash in (
            ("device", [m.device_bubble_fraction for m in metrics], tr(lang, "chart.measured_device"), "circle",
             "solid"),
            ("wall", [m.wall_bubble_fraction for m in metrics], tr(lang, "chart.measured_wall"), "diamond-open",
             "dashdot"),
            ("simulated", [m.simulated_bubble_fraction for m in metrics], tr(lang, "chart.simulated"), "square-open",
             "dot")):
        fig.add_trace(go.Scatter(name=name, x=xs, y=ys, mode="markers+lines",
                                 marker=dict(size=13 if key == "device" else 11, color=SERIES[key], symbol=symbol,
                                             line=dict(width=2, color=SERIES[key])),
                                 line=dict(color=SERIES[key], dash=dash, width=2)))
    if curve:
        fig.add_trace(go.Scatter(name=tr(lang, "chart.formula"), x=[x for x, _ in curve], y=[y for _, y in curve],
                                 mode="lines",
                                 line=dict(color=SERIES["formula"], dash="dash", width=2)))
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=30),
                      title=dict(text=tr(lang, "chart.sweep_title", knob=knob_label), font=dict(size=14)),
                      xaxis=dict(title=knob_label), yaxis=dict(title=tr(lang, "chart.bubble_fraction"), range=[0, 1]),
                      legend=LEGEND_BELOW)
    return fig


def bars_figure(title: str, xs: list, series: list[tuple[str, list[float]]], ytitle: str) -> go.Figure:
    fig = go.Figure()
    for name, ys in series:
        fig.add_trace(go.Bar(name=name, x=[str(x) for x in xs], y=ys))
    fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=40, b=30),
                      title=dict(text=title, font=dict(size=14)), yaxis=dict(title=ytitle),
                      xaxis=dict(type="category"),  # the swept values, evenly spaced, none missing
                      legend=LEGEND_BELOW)
    return fig


BREAKDOWN_KEYS = {
    "formula: every stage at the run's mean costs": "breakdown.formula",
    "simulator: every stage at the run's mean costs": "breakdown.simulator",
    "+ each stage's own costs": "breakdown.stage_costs",
    "+ message latency": "breakdown.latency",
    "+ the data-parallel all-reduce": "breakdown.reduce",
    "+ the engine's own time between actions": "breakdown.host",
    "+ each action's own mean cost (its place in the step)": "breakdown.per_action",
    "+ each step's own costs (steps vary)": "breakdown.per_step",
    "measured, device clock": "breakdown.device",
    "measured, wall clock (cores shared)": "breakdown.wall",
}
"""pipelab.engine.theory.breakdown's row labels (English, also in saved results) -> catalog keys."""


def breakdown_label(label: str, lang: str = "en") -> str:
    key = BREAKDOWN_KEYS.get(label)
    return tr(lang, key) if key else label


def breakdown_figure(rows: list[TableRow], lang: str = "en") -> go.Figure:
    """The bubble from the formula to the measured clocks (pipelab.engine.theory.breakdown.breakdown_table),
    one bar per row, top to bottom, coloured by what it is and labelled with its change from
    the row above."""
    texts = [f"{row.value:.3f}" + ("" if row.change is None else f" ({row.change:+.3f})") for row in rows]
    fig = go.Figure(go.Bar(x=[row.value for row in rows], y=[breakdown_label(row.label, lang) for row in rows],
                           orientation="h",
                           marker_color=[SERIES[row.kind] for row in rows], text=texts, textposition="outside",
                           cliponaxis=False, hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    fig.update_layout(height=60 + 34 * len(rows), margin=dict(l=10, r=90, t=40, b=30),
                      title=dict(text=tr(lang, "chart.breakdown_title"), font=dict(size=14)),
                      xaxis=dict(title=tr(lang, "chart.breakdown_axis"), range=[0, 1]),
                      yaxis=dict(autorange="reversed"), showlegend=False)
    return fig


TRADEOFF_HEIGHT = 420
LABEL_PLOT_PX = (600, 320)
"""The plot area (width, height in pixels) names are placed for on the trade-off chart: its
height, and the width of a narrow page (a wider one only moves the points apart)."""
LABEL_CHAR_PX, LABEL_HEIGHT_PX, MARKER_PX = 6.6, 14.0, 7.0
"""A name's width per character and its height at font size 11, and a marker's half size."""


@dataclass(frozen=True)
class PointLabel:
    """A name on the trade-off chart: at (x, y) in data units, its text, and its series."""
    x: float
    y: float
    text: str
    series: str


def _label_size(text: str) -> tuple[float, float]:
    """A name's box: a Chinese character is about twice as wide as a Latin one ("朴素方式" covered its marker)."""
    wide = sum(1 for c in text if "\u2e80" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef")
    return LABEL_CHAR_PX * (len(text) + wide) + 4, LABEL_HEIGHT_PX


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The area two boxes (left, top, right, bottom) share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def place_labels(labels: Sequence[PointLabel], x_range: tuple[float, float], y_range: tuple[float, float],
                 size: tuple[float, float] = LABEL_PLOT_PX,
                 lines: Sequence[tuple[float, float, float, float]] = ()) -> list[tuple[float, float]]:
    """Each name's offset from its point in pixels (dx right, dy down): beside it where that
    place is free, else moved up or down the same side (a thin line joins it to its point), so
    no two names and no name and marker overlap in a plot area of ``size``. Several schedules
    hold the same activations (1F1B, ZB-H1, ZB-1p, ZB-V at p), theory's circle and a run's
    diamond each: one position per name wrote them over each other. ``lines``: straight
    segments (x0, y0, x1, y1 in data units) no name may sit on (the frontier's dashes ran
    through the names beside its points)."""
    width, height = size
    (x0, x1), (y0, y1) = x_range, y_range

    def to_pixel(x: float, y: float) -> tuple[float, float]:
        return (x - x0) / (x1 - x0) * width, height - (y - y0) / (y1 - y0) * height

    def pixel(label: PointLabel) -> tuple[float, float]:
        return to_pixel(label.x, label.y)

    points = [pixel(label) for label in labels]
    taken = [(px - MARKER_PX, py - MARKER_PX, px + MARKER_PX, py + MARKER_PX) for px, py in points]
    for ax, ay, bx, by in lines:
        (pa, qa), (pb, qb) = to_pixel(ax, ay), to_pixel(bx, by)
        taken.append((min(pa, pb) - 1.5, min(qa, qb) - 1.5, max(pa, pb) + 1.5, max(qa, qb) + 1.5))
    offsets: list[tuple[float, float]] = [(0.0, 0.0)] * len(labels)
    order = sorted(range(len(labels)), key=lambda i: (labels[i].x, labels[i].y))  # low first: less room there
    for i in order:
        (px, py), (w, h) = points[i], _label_size(labels[i].text)
        beside = MARKER_PX + 3 + w / 2
        above = MARKER_PX + 2 + h / 2
        candidates = [(beside, 0.0), (-beside, 0.0), (0.0, -above), (0.0, above)]
        for shift in range(1, 8):
            for sign in (-1, 1):
                dy = sign * shift * (h + 2)
                candidates += [(beside, dy), (-beside, dy)]

        best = None
        for dx, dy in candidates:
            box = (px + dx - w / 2, py + dy - h / 2, px + dx + w / 2, py + dy + h / 2)
            outside = max(0.0, -box[0]) + max(0.0, box[2] - width) + max(0.0, -box[1]) + max(0.0, box[3] - height)
            score = sum(_overlap(box, other) for other in taken) + outside * h
            offset = (dx, dy)
            if best is None or score < best[0]:
                best = (score, offset, box)
            if score == 0:
                break
        offsets[i] = best[1]
        taken.append(best[2])
    return offsets


def _labels(points: Sequence[TradeoffPoint], series: str, lang: str = "en") -> list[PointLabel]:
    """One name per marker, in the page's words (tradeoff_verdict.label_in: "朴素方式", "ZB-H1", not the
    ids "naive", "zb-h1"); schedules on one spot of one series share one name ("ZB-H1, ZB-1p")."""
    spots: dict[tuple[float, float], list[str]] = {}
    for pt in points:
        spots.setdefault((pt.peak_activations, pt.bubble_fraction), []).append(label_in(lang, pt.schedule))
    return [PointLabel(x, y, tr(lang, "results.list_sep").join(names), series) for (x, y), names in spots.items()]


def frontier_segments(best: Sequence[TradeoffPoint]) -> list[tuple[float, float, float, float]]:
    """The dashed frontier as drawn (shape "hv"): from each point across to the next one's x,
    then down to it; (x0, y0, x1, y1) in data units."""
    segments = []
    for a, b in zip(best, best[1:]):
        segments += [(a.peak_activations, a.bubble_fraction, b.peak_activations, a.bubble_fraction),
                     (b.peak_activations, a.bubble_fraction, b.peak_activations, b.bubble_fraction)]
    return segments


def tradeoff_ranges(points: Sequence[TradeoffPoint]) -> tuple[tuple[float, float], tuple[float, float]]:
    """Both axes from the data, from zero to past the furthest point by room for its marker and
    its name: a bubble of 0.95 (naive at large p, measured above its circle) is not cut at 1."""
    xs = [pt.peak_activations for pt in points] or [1.0]
    ys = [pt.bubble_fraction for pt in points] or [0.9]
    return (0.0, max(xs) * 1.12 + 0.4), (0.0, max(ys) + 0.1)


def tradeoff_figure(theory: Sequence[TradeoffPoint], measured: Sequence[TradeoffPoint] = (),
                    lang: str = "en") -> go.Figure:
    """Bubble against held activations, one marker per schedule (engine/theory/memory_tradeoff.py):
    theory as open circles, with the frontier no other point beats on both axes as a dashed
    line; finished runs, if any, as filled diamonds on the device clock. Every marker is named
    in its series' colour, the names placed apart (place_labels). At most one marker per
    registered schedule and series, so no cap is needed."""
    fig = go.Figure()
    series = (("simulated", theory, tr(lang, "chart.tradeoff_theory"), "circle-open"),
              ("device", measured, tr(lang, "chart.measured_device"), "diamond"))
    for key, points, name, symbol in series:
        if not points:
            continue
        fig.add_trace(go.Scatter(
            name=name, x=[pt.peak_activations for pt in points], y=[pt.bubble_fraction for pt in points],
            text=[label_in(lang, pt.schedule) for pt in points], customdata=[pt.schedule for pt in points],
            mode="markers",
            marker=dict(size=12, color=SERIES[key], symbol=symbol, line=dict(width=2, color=SERIES[key])),
            hovertemplate="%{text}: %{x:g}, %{y:.3f}<extra>" + name + "</extra>"))
    best = frontier(tuple(theory))
    if len(best) > 1:
        fig.add_trace(go.Scatter(name=tr(lang, "chart.tradeoff_frontier"), x=[pt.peak_activations for pt in best],
                                 y=[pt.bubble_fraction for pt in best], mode="lines", hoverinfo="skip",
                                 line=dict(color=SERIES["formula"], dash="dash", width=1.5, shape="hv")))
    x_range, y_range = tradeoff_ranges((*theory, *measured))
    labels = _labels(theory, "simulated", lang) + _labels(measured, "device", lang)
    for label, (dx, dy) in zip(labels, place_labels(labels, x_range, y_range, lines=frontier_segments(best))):
        beside = abs(dy) < 1e-9 or abs(dx) < 1e-9  # next to its marker: no line needed
        fig.add_annotation(x=label.x, y=label.y, text=label.text, showarrow=True, ax=dx, ay=dy, axref="pixel",
                           ayref="pixel", arrowhead=0, arrowwidth=0.8, standoff=MARKER_PX,
                           arrowcolor="rgba(0,0,0,0)" if beside else "#999999",
                           font=dict(size=11, color=SERIES[label.series]))
    fig.update_layout(height=TRADEOFF_HEIGHT + LEGEND_ROOM, margin=dict(l=10, r=10, t=40, b=30),
                      title=dict(text=tr(lang, "chart.tradeoff_title"), font=dict(size=14)),
                      xaxis=dict(title=tr(lang, "chart.tradeoff_x"), range=list(x_range)),
                      yaxis=dict(title=tr(lang, "chart.tradeoff_y"), range=list(y_range)),
                      legend=LEGEND_BELOW)
    return fig
