"""Plotly figures for timelines, bubbles, memory and losses. No Streamlit here.

One colour per kind of action, shared by every chart of the app (COLORS). Every text a
chart shows comes from the course's catalogs in ``lang`` (default English), so a cached
figure is one per language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

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


def device_labels(num_ranks: int, lang: str = "en", pipeline_ranks: int | None = None) -> list[str]:
    """One label a row. With data parallelism (``pipeline_ranks`` p below ``num_ranks``) row g is
    device g % p of pipeline g // p (engine/schedules/data_parallel.py RankLayout), so the rows of
    one pipeline sit together and each data-parallel group is the same device in every pipeline."""
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


def timeline_figure(events: list[Event], num_ranks: int, title: str, x_max_ms: float | None = None,
                    show_comm: bool = True, height: int | None = None, legend: bool = True,
                    unit: str = "ms", clock: str | None = None, link_cost_s: float | None = None,
                    lang: str = "en", pipeline_ranks: int | None = None) -> go.Figure:
    """Horizontal bars, one row per device, one trace per kind of action.

    Times are seconds shown in ms, or, with ``unit`` set to anything else, shown as they are
    (the simulator's unit-cost timelines, where T_F = 1). ``clock`` names the clock in the
    axis title ("device clock", "wall clock"). Messages are drawn as their transfer only
    (drawn_comm, with ``link_cost_s``); past MAX_BARS bars the compute is drawn in time
    slices (aggregate_slices) and the title says so. ``pipeline_ranks``: a data-parallel run's
    p, its rows labelled by pipeline (device_labels)."""
    scale = 1e3 if unit == "ms" else 1.0
    labels = device_labels(num_ranks, lang, pipeline_ranks)
    kind_names = names(lang)
    compute = [e for e in events if e.kind not in (SEND, RECV)]
    comm = drawn_comm([e for e in events if e.kind in (SEND, RECV)], link_cost_s) if show_comm else []
    if len(compute) + len(comm) > MAX_BARS:
        slices = max(1, MAX_BARS // max(num_ranks, 1))
        compute, comm = aggregate_slices(compute, num_ranks, slices), []
        title = f"{title}<br><sup>{tr(lang, 'chart.slices', events=len(events), slices=slices)}</sup>"
    groups: dict[str, list[Event]] = {}
    for e in compute:
        groups.setdefault(e.kind, []).append(e)
    if comm:
        groups["comm"] = comm
    compute_count = len(compute)
    fig = go.Figure()
    for key in KINDS:
        group = groups.get(key)
        if not group:
            continue
        is_comm = key == "comm"
        text = None
        if not is_comm and key != "R" and compute_count <= LABEL_LIMIT:  # an R covers every micro-batch
            text = [str(e.microbatch) for e in group]
        fig.add_trace(go.Bar(
            orientation="h", name=kind_names[key], legendgroup=key,
            base=[e.start * scale for e in group], x=[max(e.duration, 0.0) * scale for e in group],
            y=[labels[e.rank] for e in group],
            # Communication sits in a thin lane under each row so it never hides compute.
            width=0.18 if is_comm else 0.62, offset=0.24 if is_comm else -0.4,
            marker=dict(color=COLORS[key], line=dict(width=0.4 if not is_comm else 0, color="white")),
            text=text, textposition="inside", insidetextanchor="middle", textfont=dict(size=10),
            customdata=[[e.stage, e.microbatch, e.duration * scale, e.kind, e.peer if e.peer is not None else ""]
                        for e in group],
            hovertemplate=(tr(lang, "chart.hover", kind="%{customdata[3]}", stage="%{customdata[0]}",
                                microbatch="%{customdata[1]}")
                           + ("<br>" + tr(lang, "chart.hover_comm", peer="%{customdata[4]}") if is_comm else "")
                           + f"<br>%{{customdata[2]:.3f}} {unit_name(unit, lang)}<extra></extra>"),
        ))
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


def legend_html(lang: str = "en", with_reduce: bool = False) -> str:
    """The colour key as one line of HTML, for charts drawn without a legend; the all-reduce (R)
    only ``with_reduce``, where a run with data parallelism is drawn."""
    kind_names = names(lang)
    keys = " &nbsp; ".join(f'<span style="color:{COLORS[k]}">&#9632;</span> {kind_names[k]}' for k in COLORS
                           if with_reduce or k != "R")
    return f"{keys} &nbsp; {idle_note(lang)}"


def bubble_figure(metrics: RunMetrics, num_ranks: int, lang: str = "en") -> go.Figure:
    labels = device_labels(num_ranks, lang)
    fig = go.Figure()
    for values, name, color in ((metrics.bubble_fraction_per_device, tr(lang, "chart.measured_device"),
                                 SERIES["device"]),
                                (metrics.bubble_fraction_wall_per_device, tr(lang, "chart.measured_wall"),
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
            ("device", [m.bubble_fraction for m in metrics], tr(lang, "chart.measured_device"), "circle", "solid"),
            ("wall", [m.bubble_fraction_wall for m in metrics], tr(lang, "chart.measured_wall"), "diamond-open",
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


LABEL_TURNS = ("top center", "middle right", "bottom center", "middle left")
"""Where the names of points on one vertical go, taking turns from the top one down: several
schedules hold the same activations (1F1B, ZB-H1, ZB-1p, ZB-V at p), and one position for all
wrote their names over each other."""


def label_positions(points: Sequence[TradeoffPoint]) -> list[str]:
    """Each point's label position: points on one vertical, from the highest down, take turns."""
    positions = [""] * len(points)
    for x in {pt.peak_activations for pt in points}:
        column = sorted((i for i, pt in enumerate(points) if pt.peak_activations == x),
                        key=lambda i: -points[i].bubble_fraction)
        for turn, i in enumerate(column):
            positions[i] = LABEL_TURNS[turn % len(LABEL_TURNS)]
    return positions


def tradeoff_figure(theory: Sequence[TradeoffPoint], measured: Sequence[TradeoffPoint] = (),
                    lang: str = "en") -> go.Figure:
    """Bubble against held activations, one marker per schedule (engine/theory/memory_tradeoff.py):
    theory as open circles named by schedule, with the frontier no other point beats on both
    axes as a dashed line; finished runs, if any, as filled diamonds on the device clock. At
    most one marker per registered schedule and series, so no cap is needed."""
    fig = go.Figure()
    # Names on theory's markers only: a run's diamond sits beside its schedule's circle, and two
    # sets of names over twelve points overlapped (hover names the diamond).
    series = (("simulated", theory, tr(lang, "chart.tradeoff_theory"), "circle-open", "markers+text"),
              ("device", measured, tr(lang, "chart.measured_device"), "diamond", "markers"))
    for key, points, name, symbol, mode in series:
        if not points:
            continue
        fig.add_trace(go.Scatter(
            name=name, x=[pt.peak_activations for pt in points], y=[pt.bubble_fraction for pt in points],
            text=[pt.schedule for pt in points], mode=mode, textposition=label_positions(points),
            marker=dict(size=12, color=SERIES[key], symbol=symbol, line=dict(width=2, color=SERIES[key])),
            hovertemplate="%{text}: %{x:g}, %{y:.3f}<extra>" + name + "</extra>"))
    best = frontier(tuple(theory))
    if len(best) > 1:
        fig.add_trace(go.Scatter(name=tr(lang, "chart.tradeoff_frontier"), x=[pt.peak_activations for pt in best],
                                 y=[pt.bubble_fraction for pt in best], mode="lines", hoverinfo="skip",
                                 line=dict(color=SERIES["formula"], dash="dash", width=1.5, shape="hv")))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=30),
                      title=dict(text=tr(lang, "chart.tradeoff_title"), font=dict(size=14)),
                      xaxis=dict(title=tr(lang, "chart.tradeoff_x"), rangemode="tozero"),
                      # Up to a little above the highest point: the points spread over the height.
                      yaxis=dict(title=tr(lang, "chart.tradeoff_y"),
                                 range=[0, min(1.0, 0.1 + max((pt.bubble_fraction for pt in (*theory, *measured)),
                                                              default=0.9))]),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1))
    return fig
