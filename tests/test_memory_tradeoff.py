"""Bubble against held activations (engine/theory/memory_tradeoff.py) and its chart (app/views/charts.py)."""

import pytest

from pipelab.app.views import charts
from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.theory.held_activations import schedule_peak_activations
from pipelab.engine.theory.memory_tradeoff import (
    TradeoffPoint,
    frontier,
    measured_point,
    theory_points,
    tradeoff_schedules,
)
from pipelab.engine.theory.simulate import simulate
from pipelab.lessons.i18n import text as tr
from tests.test_comparison_verdict import finished  # noqa: F401, F811  (a fixture: batches that finished)


def test_every_synchronous_schedule_is_drawn_or_said_to_be_skipped():
    for p, m in ((4, 8), (4, 6), (3, 5)):
        theory = theory_points(p, m)
        drawn = [pt.schedule for pt in theory.points]
        assert sorted(drawn + list(theory.skipped)) == sorted(tradeoff_schedules())
        assert not {"pipedream", "pipedream-2bw"} & set(tradeoff_schedules())  # they stash weights instead
        assert {"v-min", "v-half", "1f1b", "zb-v"} <= set(drawn)
    refused = set()
    for name in tradeoff_schedules():  # m % p (interleaved), m >= 2p (dualpipev): a schedule's own constraint
        try:
            build_schedule(name, 4, 6)
        except ScheduleError:
            refused.add(name)
    assert {"interleaved", "dualpipev"} <= refused
    assert set(theory_points(4, 6).skipped) == refused


def test_a_point_is_its_schedules_simulated_bubble_and_held_activations():
    points = {pt.schedule: pt for pt in theory_points(4, 8).points}
    for name in ("1f1b", "gpipe", "v-min", "interleaved"):
        schedule = build_schedule(name, 4, 8, points[name].chunks)
        assert points[name].peak_activations == max(schedule_peak_activations(schedule))
        assert points[name].bubble_fraction == pytest.approx(simulate(schedule).bubble_fraction())
    assert points["interleaved"].chunks == 2 and points["1f1b"].chunks == 1
    # The sequel's trade: V-Min holds half of 1F1B's 4 here, V-Half 3; both idle less than 1F1B.
    assert points["v-min"].peak_activations < points["v-half"].peak_activations < points["1f1b"].peak_activations
    assert points["v-half"].bubble_fraction < points["1f1b"].bubble_fraction


def test_the_frontier_keeps_what_no_other_point_beats_on_both_axes():
    a, b, c, d = (TradeoffPoint("a", 1, 1.0, 0.7), TradeoffPoint("b", 1, 2.0, 0.2), TradeoffPoint("c", 1, 4.0, 0.2),
                  TradeoffPoint("d", 2, 4.0, 0.05))
    assert [pt.schedule for pt in frontier([d, c, b, a])] == ["a", "b", "d"]  # c: b holds less at its bubble
    assert frontier([a, a]) == (a, a)  # equal points do not beat each other
    names = [pt.schedule for pt in frontier(theory_points(8, 16).points)]
    assert "v-min" in names and "zb-v" in names and "1f1b" not in names  # zb-v: 1F1B's memory, less bubble


def test_a_measured_point_reads_the_runs_metrics():
    class Metrics:
        peak_held_microbatches_per_device, device_bubble_fraction = (2.0, 1.5, 1.0), 0.25

    class Result:
        schedule, metrics = build_schedule("v-min", 3, 6), Metrics()

    assert measured_point(Result()) == TradeoffPoint("v-min", 2, 2.0, 0.25)


FIXED = (TradeoffPoint("1f1b", 1, 4.0, 0.27), TradeoffPoint("v-min", 2, 2.0, 0.19), TradeoffPoint("zb-v", 2, 4.0, 0.06),
         TradeoffPoint("gpipe", 1, 8.0, 0.27))


def test_the_chart_draws_theory_runs_and_the_frontier_from_the_points_given():
    runs = (TradeoffPoint("v-min", 2, 2.0, 0.31),)
    figure = charts.tradeoff_figure(FIXED, runs)
    theory, measured, line = figure.data
    assert (list(theory.x), list(theory.y), list(theory.text)) == ([4.0, 2.0, 4.0, 8.0], [0.27, 0.19, 0.06, 0.27],
                                                                   ["1F1B", "V-Min", "ZB-V", "GPipe"])
    assert (list(measured.x), list(measured.y), list(measured.text)) == ([2.0], [0.31], ["V-Min"])
    assert (list(line.x), list(line.y)) == ([2.0, 4.0], [0.19, 0.06])  # v-min then zb-v
    assert (theory.name, measured.name) == (tr("en", "chart.tradeoff_theory"), tr("en", "chart.measured_device"))
    assert figure.layout.yaxis.range == (0, pytest.approx(0.41))  # a little above the highest point, 0.31
    # Every marker is named, theory's circles and the runs' diamonds alike, each in its series' colour.
    names = {(a.text, a.font.color) for a in figure.layout.annotations}
    # Named as the page says them (the registry's labels), never by id (walk finding 9).
    assert names == {("1F1B", charts.SERIES["simulated"]), ("V-Min", charts.SERIES["simulated"]),
                     ("ZB-V", charts.SERIES["simulated"]), ("GPipe", charts.SERIES["simulated"]),
                     ("V-Min", charts.SERIES["device"])}


def test_without_runs_the_chart_draws_theory_only_and_speaks_chinese():
    figure = charts.tradeoff_figure(FIXED, (), lang="zh")
    assert [t.name for t in figure.data] == [tr("zh", "chart.tradeoff_theory"), tr("zh", "chart.tradeoff_frontier")]
    assert figure.layout.title.text == tr("zh", "chart.tradeoff_title") != tr("en", "chart.tradeoff_title")
    assert figure.layout.xaxis.title.text == tr("zh", "chart.tradeoff_x")


def test_the_v_schedules_are_registered_for_the_chart():
    assert {"v-min", "v-half"} <= set(REGISTRY) and REGISTRY["v-min"].synchronous


def label_boxes(figure):
    """Each name's box and each marker's, in the plot area charts.place_labels assumes (pixels)."""
    (x0, x1), (y0, y1) = figure.layout.xaxis.range, figure.layout.yaxis.range
    width, height = charts.LABEL_PLOT_PX

    def pixel(x, y):
        return (x - x0) / (x1 - x0) * width, height - (y - y0) / (y1 - y0) * height

    names = []
    for a in figure.layout.annotations:
        px, py = pixel(a.x, a.y)
        w, h = charts._label_size(a.text)
        names.append((a.text, (px + a.ax - w / 2, py + a.ay - h / 2, px + a.ax + w / 2, py + a.ay + h / 2)))
    r = charts.MARKER_PX
    markers = [(px - r, py - r, px + r, py + r) for trace in figure.data if trace.mode == "markers"
               for px, py in (pixel(x, y) for x, y in zip(trace.x, trace.y))]
    return names, markers


RUNS_AT_4_8 = ((1.0, 0.80), (2.0, 0.27), (3.0, 0.26), (4.0, 0.33), (4.0, 0.21), (4.0, 0.20), (4.0, 0.16),
               (4.5, 0.15), (5.5, 0.25), (7.0, 0.19), (8.0, 0.20), (8.0, 0.31))
"""Bubbles a run of lesson 6's settings measures (above theory's on unit costs), ZB-2p holding 8 to theory's 7."""


def lesson_6_chart(runs: str, lang: str = "en"):
    """Theory's points at lesson 6's p = 4, m = 8, the runs' diamonds (``runs`` "all") or none,
    and the chart drawn from them in ``lang``."""
    theory = theory_points(4, 8).points
    order = sorted(theory, key=lambda pt: (pt.peak_activations, -pt.bubble_fraction))
    measured = () if runs == "none" else tuple(TradeoffPoint(pt.schedule, pt.chunks, x, y)
                                               for pt, (x, y) in zip(order, RUNS_AT_4_8))
    return theory, measured, charts.tradeoff_figure(theory, measured, lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("runs", ["none", "all"])
def test_every_name_has_its_own_place_even_where_points_share_a_vertical(runs, lang):
    """Issue 47: names overlapped at x = 4, where 1F1B, ZB-H1, ZB-1p and ZB-V hold p, and the runs'
    diamonds had none. Every marker is named, no two names overlap, no name covers a marker."""
    theory, measured, figure = lesson_6_chart(runs, lang)
    names, markers = label_boxes(figure)
    sep = tr(lang, "results.list_sep")
    named = {schedule for text, _ in names for schedule in text.split(sep)}
    assert named == {charts.label_in(lang, pt.schedule) for pt in (*theory, *measured)}
    assert sum(text.count(sep) + 1 for text, _ in names) == len(theory) + len(measured)  # one spot, one name
    overlap = charts._overlap
    assert [(a, b) for i, (a, box) in enumerate(names) for b, other in names[i + 1:] if overlap(box, other)] == []
    assert [a for a, box in names if any(overlap(box, marker) for marker in markers)] == []


# ---- the runs' caption says what the chart shows (issue 47, item 5) -------------------------

def test_held_gaps_name_each_run_off_its_circle_s_vertical():
    from pipelab.app.views.extras.memory_tradeoff import held_gaps
    theory = theory_points(4, 8).points
    runs = (TradeoffPoint("1f1b", 1, 4.0, 0.30), TradeoffPoint("zb-2p", 1, 8.0, 0.20))
    assert held_gaps(runs, theory) == [("zb-2p", 8.0, 7.0)]
    assert held_gaps(runs[:1], theory) == []


def fake_tradeoff_run(schedule: str, held: float, bubble: float, chunks: int = 1):
    from tests.test_tradeoff_verdict import fake_tradeoff_run as fake  # the verdict reads theory at its own costs too
    return fake(schedule, held, bubble, chunks=chunks)


@pytest.mark.parametrize("zb_2p_held, says", [
    (8.0, "Not every diamond sits on its circle's vertical: ZB-2p held 8 measured against theory's 7. ZB-2p: built "
          "from the costs the run profiled first"),
    (7.0, "Every run held the count theory gives its schedule, so each diamond sits on its circle's vertical."),
])
def test_run_them_all_s_caption_never_claims_what_the_chart_contradicts(finished, zb_2p_held, says):  # noqa: F811
    """Issue 47: the caption said every diamond sits on its circle's vertical where ZB-2p held 8
    measured against theory's 7."""
    from tests.test_comparison_verdict import open_page
    finished["zero-bubble:memory"] = [("1f1b", fake_tradeoff_run("1f1b", 4.0, 0.30)),
                                      ("zb-2p", fake_tradeoff_run("zb-2p", zb_2p_held, 0.20))]
    at = open_page("zero-bubble")
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption if c.value.startswith("Diamonds: the runs")]
    assert len(captions) == 1 and says in captions[0]
    if zb_2p_held != 7.0:
        assert "so each diamond sits on its circle's vertical" not in captions[0]
    zh = open_page("zero-bubble", "zh")
    assert any("ZB-2p 实测保存 8，理论为 7" in c.value for c in zh.caption) == (zb_2p_held == 8.0)


@pytest.mark.parametrize("p, m, naive_measured", [(4, 8, 0.80), (8, 16, 0.95)])
def test_the_axes_follow_the_data_so_no_marker_or_name_is_cut(p, m, naive_measured):
    """Issue 47: the chart's axis cut naive's point; a bubble near 1 (naive at p = 8, measured
    above its circle) was capped at 1. Every marker and every name lies inside the plot."""
    theory = theory_points(p, m).points
    measured = tuple(TradeoffPoint(pt.schedule, pt.chunks, pt.peak_activations,
                                   naive_measured if pt.schedule == "naive" else pt.bubble_fraction + 0.05)
                     for pt in theory)
    figure = charts.tradeoff_figure(theory, measured)
    names, markers = label_boxes(figure)
    width, height = charts.LABEL_PLOT_PX
    inside = [box for _, box in names] + markers
    assert all(0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height for x0, y0, x1, y1 in inside)


@pytest.mark.parametrize("runs", ["none", "all"])
def test_no_name_sits_on_the_frontier_s_dashes(runs):
    """Issue 47: the dashed frontier ran through "naive", "v-min" and "v-half", each named on the
    dash leaving its circle."""
    theory, measured, figure = lesson_6_chart(runs)
    names, _ = label_boxes(figure)
    (x0, x1), (y0, y1) = figure.layout.xaxis.range, figure.layout.yaxis.range
    width, height = charts.LABEL_PLOT_PX

    def pixel(x, y):
        return (x - x0) / (x1 - x0) * width, height - (y - y0) / (y1 - y0) * height

    ends = [(*pixel(a, b), *pixel(c, d)) for a, b, c, d in charts.frontier_segments(frontier(theory))]
    dashes = [(min(p0, p1) - 1, min(q0, q1) - 1, max(p0, p1) + 1, max(q0, q1) + 1) for p0, q0, p1, q1 in ends]
    assert len(dashes) >= 4
    assert [text for text, box in names if any(charts._overlap(box, dash) > 0 for dash in dashes)] == []


def test_a_chinese_name_s_box_is_as_wide_as_its_characters():
    """"朴素方式" covered its marker when each of its characters counted as wide as a Latin letter."""
    assert charts._label_size("朴素方式")[0] == charts._label_size("12345678")[0] > charts._label_size("Naive")[0]


def test_in_chinese_the_chart_and_its_runs_name_each_schedule_in_chinese_words():
    """Walk findings 9 and 18: the chart's names and the "saved on the server" list read the
    ids (naive, zb-h1) on a Chinese page."""
    from pipelab.app.views.extras.memory_tradeoff import tradeoff_items
    from pipelab.engine.theory.memory_tradeoff import theory_points
    from pipelab.lessons import Knobs
    from pipelab.lessons.i18n.run_label import RunLabel
    points = (TradeoffPoint("naive", 1, 1.0, 0.75), *FIXED)
    figure = charts.tradeoff_figure(points, (TradeoffPoint("zb-h1", 1, 4.0, 0.1),), lang="zh")
    names = {a.text for a in figure.layout.annotations}
    assert names == {"朴素方式", "1F1B", "V-Min", "ZB-V", "GPipe", "ZB-H1"}
    labels = [label for label, _ in tradeoff_items(Knobs(schedule="zb-h1"), theory_points(4, 8))]
    assert all(isinstance(label, RunLabel) for label in labels)
    said = {label.text("zh") for label in labels}
    assert {"朴素方式", "GPipe", "1F1B", "交错式 1F1B", "ZB-H1", "DualPipeV", "V-Min"} <= said
    assert {label.text("en") for label in labels} >= {"Naive", "ZB-H1", "Interleaved 1F1B"}
