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
        peak_held_microbatches_per_device, bubble_fraction = (2.0, 1.5, 1.0), 0.25

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
                                                                   ["1f1b", "v-min", "zb-v", "gpipe"])
    assert (list(measured.x), list(measured.y), list(measured.text)) == ([2.0], [0.31], ["v-min"])
    assert (list(line.x), list(line.y)) == ([2.0, 4.0], [0.19, 0.06])  # v-min then zb-v
    assert (theory.name, measured.name) == (tr("en", "chart.tradeoff_theory"), tr("en", "chart.measured_device"))
    assert figure.layout.yaxis.range == (0, pytest.approx(0.41))  # a little above the highest point, 0.31
    assert (theory.mode, measured.mode) == ("markers+text", "markers")  # names on theory's markers only


def test_without_runs_the_chart_draws_theory_only_and_speaks_chinese():
    figure = charts.tradeoff_figure(FIXED, (), lang="zh")
    assert [t.name for t in figure.data] == [tr("zh", "chart.tradeoff_theory"), tr("zh", "chart.tradeoff_frontier")]
    assert figure.layout.title.text == tr("zh", "chart.tradeoff_title") != tr("en", "chart.tradeoff_title")
    assert figure.layout.xaxis.title.text == tr("zh", "chart.tradeoff_x")


def test_the_v_schedules_are_registered_for_the_chart():
    assert {"v-min", "v-half"} <= set(REGISTRY) and REGISTRY["v-min"].synchronous


def test_names_of_points_on_one_vertical_take_turns_so_they_do_not_overlap():
    points = (TradeoffPoint("1f1b", 1, 4.0, 0.27), TradeoffPoint("v-min", 1, 2.0, 0.19),
              TradeoffPoint("zb-h1", 1, 4.0, 0.10), TradeoffPoint("zb-v", 2, 4.0, 0.06))
    assert charts.label_positions(points) == ["top center", "top center", "middle right", "bottom center"]
