"""app/views/charts.py: a wait is drawn as idle, a message as its link cost; axes name clock and
unit; a timeline never draws more than MAX_BARS bars."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipelab.app.views import charts
from pipelab.engine.results.timeline import RECV, SEND, Event
from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory.memory_tradeoff import theory_points
from pipelab.engine.theory.simulate import UNIT_COSTS, simulate, simulate_run

LINK = 0.0002  # 0.2 ms


def comm_bars(figure):
    (trace,) = [t for t in figure.data if t.name == charts.NAMES["comm"]]
    return list(zip(trace.base, trace.x))


@pytest.mark.parametrize("start, end, drawn_ms", [
    (0.000, 0.005, 0.2),      # waited 5 ms for the sender: 4.8 ms idle, then 0.2 ms of transfer
    (0.004, 0.0041, 0.1),     # arrived 0.1 ms after the wait began: only that is drawn
])
def test_a_recv_bar_is_the_link_cost_not_the_wait(start, end, drawn_ms):
    events = [Event(1, 1, "F", 0, 0.006, 0.007), Event(1, 1, RECV, 0, start, end, peer=0)]
    figure = charts.timeline_figure(events, 2, "t", clock="device clock", link_cost_s=LINK)
    ((base, width),) = comm_bars(figure)
    assert width == pytest.approx(drawn_ms)
    assert base + width == pytest.approx(end * 1e3)  # ends when the message arrived


def test_zero_length_messages_draw_nothing():
    events = [Event(0, 0, "F", 0, 0.0, 0.001), Event(0, 0, SEND, 0, 0.001, 0.001, peer=1)]
    figure = charts.timeline_figure(events, 2, "t", link_cost_s=LINK)
    assert [t.name for t in figure.data] == [charts.NAMES["F"]]


@pytest.mark.parametrize("unit, clock, title", [
    ("ms", "device clock", "time (ms, device clock)"),
    ("ms", "wall clock", "time (ms, wall clock)"),
    ("units of T_F", "simulated", "time (units of T_F = one forward, simulated)"),
])
def test_the_time_axis_names_unit_and_clock(unit, clock, title):
    figure = charts.timeline_figure([Event(0, 0, "F", 0, 0.0, 1.0)], 1, "t", unit=unit, clock=clock)
    assert figure.layout.xaxis.title.text == title


def test_unit_costs_read_as_units_of_one_forward():
    timeline = simulate(build_schedule("gpipe", 4, 8), UNIT_COSTS)
    figure = charts.timeline_figure(timeline.events, 4, "t", unit="units of T_F")
    forward = next(t for t in figure.data if t.name == charts.NAMES["F"])
    assert set(forward.x) == {1.0}  # one forward is one unit, not 1000 "ms"
    assert figure.layout.xaxis.range[1] == pytest.approx(timeline.step_time() * 1.02)


def test_past_the_cap_a_timeline_draws_time_slices_and_says_so():
    schedule = build_schedule("interleaved", 8, 64, 4)  # 32 stages x 64 micro-batches x F, B
    events = simulate(schedule, UNIT_COSTS).events
    assert len(events) > charts.MAX_BARS
    figure = charts.timeline_figure(events, 8, "big")
    assert sum(len(t.x) for t in figure.data) <= charts.MAX_BARS
    assert "time slices" in figure.layout.title.text
    # Busy time is kept: each device's bars add up to its compute, idle stays blank.
    busy = {r: 0.0 for r in range(8)}
    for trace in figure.data:
        for y, x in zip(trace.y, trace.x):
            busy[int(y.split()[-1])] += x
    compute = {r: sum(e.duration for e in events if e.rank == r) * 1e3 for r in range(8)}
    assert busy == pytest.approx(compute)


def test_under_the_cap_every_action_is_its_own_bar():
    events = simulate(build_schedule("1f1b", 4, 8), UNIT_COSTS).events
    figure = charts.timeline_figure(events, 4, "small")
    assert sum(len(t.x) for t in figure.data) == len(events)
    assert "time slices" not in figure.layout.title.text


def test_a_chinese_chart_names_its_axis_legend_and_devices_in_chinese():
    events = simulate(build_schedule("1f1b", 2, 2), UNIT_COSTS).events
    figure = charts.timeline_figure(events, 2, "t", unit="units of T_F", clock="simulated", lang="zh")
    assert figure.layout.xaxis.title.text == "时间（单位 T_F = 一次前向，模拟）"
    assert [t.name for t in figure.data] == [charts.names("zh")["F"], charts.names("zh")["B"]] == ["F 前向", "B 反向"]
    assert set(figure.data[0].y) == {"设备 0", "设备 1"}
    # The English default stays what the tests above read.
    assert charts.names() == charts.NAMES and charts.NAMES["F"] == "F forward"


def test_breakdown_rows_keep_the_engines_order_in_chinese():
    from pipelab.engine.theory.breakdown import TableRow
    rows = [TableRow("formula: every stage at the run's mean costs", 0.27, None, "formula"),
            TableRow("+ message latency", 0.30, 0.03, "simulated"), TableRow("a future row", 0.31, 0.01, "simulated")]
    figure = charts.breakdown_figure(rows, lang="zh")
    assert list(figure.data[0].y) == ["公式：每个阶段都取本次运行的平均开销", "+ 消息延迟", "a future row"]


# ---- step marks (app/views/step_marks.py) -------------------------------------------------------

def test_each_device_marks_where_each_of_its_steps_starts():
    from pipelab.app.views.step_marks import add_step_marks
    from pipelab.engine.theory.simulate import simulate_run
    # ZB-H2 with overlapping steps: device 0 starts step 1 while the last device still works on step 0.
    timeline = simulate_run(build_schedule("zb-h2", 4, 8), UNIT_COSTS, 3, True)
    events = charts.step_events(timeline, None)
    figure = add_step_marks(charts.timeline_figure(events, 4, "t", unit="units"), events, 4, scale=1.0)
    marks = {(round(s.y0 + 0.45), s.x0) for s in figure.layout.shapes}
    expected = {(r, start) for r, starts in enumerate(timeline.step_starts()) for start in starts.values()}
    assert marks == expected and len(marks) == 4 * 3
    assert [a.text for a in figure.layout.annotations] == ["step 0", "step 1", "step 2"]  # on the top device
    # The tiling: device 0 turns to step 1 before the last device has finished step 0.
    last_end_of_step_0 = max(e.end for e in timeline.events if e.rank == 3 and e.step == 0)
    assert timeline.step_starts()[0][1] < last_end_of_step_0


def test_one_step_draws_no_marks():
    from pipelab.app.views.step_marks import add_step_marks
    events = charts.step_events(simulate(build_schedule("1f1b", 2, 4), UNIT_COSTS), None)
    assert add_step_marks(charts.timeline_figure(events, 2, "t"), events, 2).layout.shapes == ()


def test_step_marks_and_titles_in_chinese():
    from pipelab.app.views.step_marks import add_step_marks, steps_title
    events = charts.step_events(simulate_run_for_marks(), None)
    figure = add_step_marks(charts.timeline_figure(events, 2, "t", lang="zh"), events, 2, lang="zh")
    assert [a.text for a in figure.layout.annotations] == ["第 0 步", "第 1 步"]
    assert (steps_title(None, 3, "zh"), steps_title(2, 3, "zh")) == ("全部 3 步", "第 2 步")
    assert (steps_title(None, 3), steps_title(2, 3)) == ("all 3 steps", "step 2")


def simulate_run_for_marks():
    from pipelab.engine.theory.simulate import simulate_run
    return simulate_run(build_schedule("1f1b", 2, 2), UNIT_COSTS, 2, False)


# ---- layout: no legend over a title (issue 26, item 6) -------------------------------------

def every_figure_with_a_legend():
    from tests.fake_results import fake_memory, fake_metrics
    events = simulate(build_schedule("1f1b", 2, 2), UNIT_COSTS).events
    metrics = fake_metrics(2, device_bubble_fraction_per_device=(0.2, 0.3), formula_bubble_fraction=0.25)
    memory = {r: fake_memory(activation_timeline=((0.0, 0), (0.001, 2**20))) for r in range(2)}
    return {"timeline": charts.timeline_figure(events, 2, "a title as long as lesson 6's " * 3),
            "bubble": charts.bubble_figure(metrics, 2), "memory": charts.memory_figure(memory, 2),
            "losses": charts.loss_figure([("a", [1.0, 0.9]), ("b", [1.0, 0.8])]),
            "sweep": charts.sweep_figure("microbatches", [(4, metrics), (8, metrics)], [(4, 0.4), (8, 0.3)]),
            "bars": charts.bars_figure("t", [4, 8], [("device 0", [1.0, 2.0]), ("device 1", [1.0, 2.0])], "MiB"),
            "tradeoff": charts.tradeoff_figure(theory_points(4, 8).points)}


@pytest.mark.parametrize("name", list(every_figure_with_a_legend()))
def test_every_legend_sits_under_its_chart_never_beside_the_title(name):
    legend = every_figure_with_a_legend()[name].layout.legend
    # Pinned to the figure's bottom edge, in the margin plotly makes for it: never in the
    # band above the plot where the title is (y = 1.02 of the plot was there).
    assert (legend.yref, legend.y, legend.yanchor, legend.orientation) == ("container", 0, "bottom", "h")


def test_a_timeline_grows_by_its_legend_so_its_bars_keep_their_height():
    events = simulate(build_schedule("1f1b", 2, 2), UNIT_COSTS).events
    with_legend = charts.timeline_figure(events, 2, "t").layout.height
    without = charts.timeline_figure(events, 2, "t", legend=False).layout.height
    assert with_legend - without == charts.LEGEND_ROOM > 0


# ---- chunks: a micro-batch's second visit to a device shows (issue 47, item 15) -------------

def compute_bars(figure):
    """(kind, text, fill) of every compute bar, in trace order."""
    bars = []
    for trace in figure.data:
        if trace.x and trace.x[0] is not None and trace.name != charts.names()["comm"]:
            shapes = trace.marker.pattern.shape if trace.marker.pattern and trace.marker.pattern.shape else None
            for i in range(len(trace.x)):
                bars.append((trace.name, trace.text[i] if trace.text else None,
                             None if shapes is None else shapes[i], trace.customdata[i][0]))
    return bars


@pytest.mark.parametrize("name, stage_chunk", [
    ("interleaved", {0: 0, 1: 0, 2: 1, 3: 1}),  # stage s is chunk s // p
    ("zb-v", {0: 0, 1: 0, 2: 1, 3: 1}),         # the V: device r holds stages r and 2p-1-r
])
def test_each_bar_of_a_device_with_several_chunks_says_its_chunk(name, stage_chunk):
    schedule = build_schedule(name, 2, 2, 2)
    events = simulate(schedule, UNIT_COSTS).events
    assert charts.chunk_of(events, schedule.stage_to_rank) == stage_chunk == charts.chunk_of(events)
    figure = charts.timeline_figure(events, 2, "t", unit="units of T_F", stage_to_rank=schedule.stage_to_rank)
    bars = compute_bars(figure)
    assert bars and all(text == f"{text.split('·')[0]}·c{stage_chunk[stage]}" for _, text, _, stage in bars)
    assert all(fill == charts.CHUNK_PATTERNS[stage_chunk[stage]] for _, _, fill, stage in bars)
    assert {fill for _, _, fill, _ in bars} == {"", "/"}  # chunk 0 solid, chunk 1 hatched
    # Each kind's legend swatch (its first bar) is solid; only the chunk entry is hatched.
    assert all(trace.marker.pattern.shape[0] == "" for trace in figure.data
               if trace.marker.pattern and isinstance(trace.marker.pattern.shape, tuple))
    # White hatching over the kind's colour: plotly's default fill mode drew the hatching alone, on nothing.
    assert all(trace.marker.pattern.fillmode == "overlay" and trace.marker.pattern.fgcolor == "white"
               for trace in figure.data if trace.marker.pattern and trace.marker.pattern.shape is not None)
    # The legend says what the hatching is; the hover names the chunk.
    assert charts.tr("en", "chart.chunk_fill", chunk=1) in [trace.name for trace in figure.data]
    assert all("chunk" in trace.hovertemplate for trace in figure.data if trace.x and trace.x[0] is not None)


def test_a_device_with_one_stage_marks_no_chunk_and_keeps_its_plain_labels():
    schedule = build_schedule("1f1b", 2, 2)
    events = simulate(schedule, UNIT_COSTS).events
    figure = charts.timeline_figure(events, 2, "t", stage_to_rank=schedule.stage_to_rank)
    assert charts.chunk_of(events, schedule.stage_to_rank) == {}
    assert all(fill is None and text.isdigit() for _, text, fill, _ in compute_bars(figure))
    assert len(figure.data) == 2  # F and B: no chunk entry in the legend


def test_an_all_reduce_stays_red_and_unlabelled_beside_chunked_bars():
    events = [Event(0, 0, "F", 0, 0.0, 1.0), Event(0, 2, "F", 0, 1.0, 2.0), Event(0, 2, "R", 0, 2.0, 2.5),
              Event(1, 1, "F", 0, 1.0, 2.0), Event(1, 3, "F", 0, 2.0, 3.0)]
    figure = charts.timeline_figure(events, 2, "t", stage_to_rank=(0, 1, 0, 1))
    reduce = next(t for t in figure.data if t.name == charts.names()["R"])
    assert reduce.marker.color == charts.COLORS["R"] and reduce.text is None and reduce.marker.pattern.shape is None
    forward = next(t for t in figure.data if t.name == charts.names()["F"])
    assert list(forward.text) == ["0·c0", "0·c0", "0·c1", "0·c1"]  # chunk 0 first: a solid legend swatch


def test_the_comparison_legend_says_what_hatching_is_only_where_a_run_has_chunks():
    assert charts.tr("zh", "chart.chunk_note") in charts.legend_html("zh", chunked=True)
    assert "hatched" not in charts.legend_html("en")


@pytest.mark.parametrize("kinds, shown, hidden", [
    ({"F", "B", "U"}, ["F forward", "B backward", "U optimizer"], ["I input", "W weight"]),  # naive, GPipe
    ({"F", "I", "W", "U"}, ["I input", "W weight"], ["B backward"]),                       # zero bubble
    (None, ["F forward", "B backward", "I input", "W weight"], []),                          # no schedule given
])
def test_the_colour_key_lists_only_the_kinds_the_drawn_schedules_have(kinds, shown, hidden):
    html = charts.legend_html("en", kinds=kinds)
    assert all(word in html for word in shown) and not any(word in html for word in hidden), html


def test_the_colour_key_of_a_comparison_names_the_optimizer_step_it_draws():
    """A synchronous schedule's actions leave out U (the executor adds it after the flush), yet
    every measured chart draws it: the key comes from the events drawn, not the action lists."""
    schedule = build_schedule("1f1b", 2, 4)
    timeline = simulate_run(schedule, replace(UNIT_COSTS, update=0.5), 2)
    assert "U" not in {a.kind for program in schedule.actions for a in program}
    events = charts.step_events(timeline, 1) + [Event(0, 0, SEND, 0, 0.0, 0.0, peer=1), Event(1, 1, RECV, 0, 0.0, 0.1)]
    assert charts.drawn_kinds([events]) == {"F", "B", "U"}
    assert "U optimizer" in charts.legend_html("en", kinds=charts.drawn_kinds([events]))
