"""Zero bubble from the costs (arXiv 2401.10241): ZB-H2 at any T_F, T_I, T_W and link, and the
automatic schedules ZB-1p and ZB-2p under their memory limits."""

import json

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.cli.main import main
from pipelab.engine.schedules import build_schedule, cost_aware_schedules
from pipelab.engine.schedules.base import linear_placement
from pipelab.engine.schedules.cost_search import longest_own_span
from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.schedules.zb_auto import memory_limit
from pipelab.engine.schedules.zero_bubble import greedy_order
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.held_activations import schedule_peak_activations
from pipelab.engine.theory.simulate import CostModel, simulate
from pipelab.engine.theory.validate import validate

# (T_F, T_I, T_W, link): equal costs, W short of (F + I) / 2, I long, F long, W long, links
COST_SETS = [(1, 1, 1, 0), (1, 1, 0.5, 0), (1, 2, 0.5, 0), (2, 1, 1, 0), (1, 1, 2, 0), (3, 3, 2, 0),
             (1, 1, 1, 0.1), (1, 1, 0.5, 0.2), (2, 1.5, 0.7, 0.05)]
SHAPES = [(2, 4), (3, 9), (4, 8), (4, 12), (8, 16)]


def costs_of(t_f, t_i, t_w, link):
    return PassCosts(forward=t_f, backward_input=t_i, backward_weight=t_w, link=link)


def own_span_bubble(schedule, costs):
    """The paper's bubble (Table 5's rate times the span): the longest device's span from its
    first to its last pass, less one device's work."""
    return longest_own_span(schedule, costs) - schedule.num_microbatches * costs.work


@pytest.mark.parametrize("t_f, t_i, t_w, link", COST_SETS)
@pytest.mark.parametrize("p, m", SHAPES)
def test_zb_h2_from_costs_reaches_the_paper_s_bubble(p, m, t_f, t_i, t_w, link):
    # (p-1)(T_F + T_B - 2T_W), clipped at zero (section 2.2), plus one round trip of the link
    # per stage boundary: the first I reaches rank 0 2(p-1) messages after its first F.
    costs = costs_of(t_f, t_i, t_w, link)
    schedule = build_schedule("zb-h2", p, m, costs=costs)
    validate(schedule)
    expected = theory.zb_h2_bubble_time(p, t_f, t_i, t_w) + 2 * (p - 1) * link
    assert own_span_bubble(schedule, costs) == pytest.approx(expected, abs=1e-9)
    assert schedule_peak_activations(schedule)[0] == 2 * p - 1  # rank 0 holds 2p - 1 (section 2.2)
    assert max(schedule_peak_activations(schedule)) <= 2 * p - 1


@pytest.mark.parametrize("t_f, t_i, t_w", [(1, 1, 0.5), (1, 2, 0.5), (2, 1, 1), (3, 3, 2), (1, 1, 1)])
@pytest.mark.parametrize("p, m", SHAPES)
def test_zb_h2_s_synchronous_step_is_its_registered_formula(p, m, t_f, t_i, t_w):
    schedule = build_schedule("zb-h2", p, m, costs=costs_of(t_f, t_i, t_w, 0))
    timeline = simulate(schedule, CostModel(forward=t_f, backward_input=t_i, backward_weight=t_w))
    assert timeline.bubble_fraction() == pytest.approx(
        theory.formula_bubble_fraction("zb-h2", p, m, 1, t_f, t_i, t_w), abs=1e-9)


def test_the_paper_s_rate_counts_each_device_s_own_span_not_the_synchronous_step():
    # Table 5's rate is the longest device's own span (post-validation lets each device start
    # its next step early, section 4); one synchronous step also waits for the later devices'
    # (p-1) T_F of lag. With T_F long the two differ: that, not the order, is why a
    # synchronous step's bubble sits above the paper's ZB-H2 column.
    p, m, (t_f, t_i, t_w) = 8, 24, (2, 1, 1)
    costs = costs_of(t_f, t_i, t_w, 0)
    schedule = build_schedule("zb-h2", p, m, costs=costs)
    own = own_span_bubble(schedule, costs) / (own_span_bubble(schedule, costs) + m * costs.work)
    step = simulate(schedule, CostModel(forward=t_f, backward_input=t_i, backward_weight=t_w)).bubble_fraction()
    assert own == pytest.approx(theory.formula_bubble_fraction("zb-h2", p, m, 1, t_f, t_i, t_w, overlapped=True))
    assert step == pytest.approx(theory.formula_bubble_fraction("zb-h2", p, m, 1, t_f, t_i, t_w))
    assert step > own + 0.05


@pytest.mark.parametrize("p, m, t_f, t_i, t_w, link", [(4, 5, 2.6, 1.1, 2.8, 0), (6, 18, 0.6, 0.6, 0.5, 0.5),
                                                       (3, 6, 1.6, 1.0, 0.5, 0.5)])
def test_built_for_its_costs_zb_h2_beats_the_unit_grid_replayed_at_them(p, m, t_f, t_i, t_w, link):
    costs = costs_of(t_f, t_i, t_w, link)
    fitted, unit = build_schedule("zb-h2", p, m, costs=costs), build_schedule("zb-h2", p, m)
    assert own_span_bubble(fitted, costs) < own_span_bubble(unit, costs) - 0.3
    assert max(schedule_peak_activations(fitted)) <= 2 * p - 1


@pytest.mark.parametrize("p", range(1, 9))
def test_equal_costs_keep_zb_h2_s_unit_grid_shape(p):
    for m in range(1, 4 * p + 1):
        grid = greedy_order(linear_placement(p), m, [2 * (p - r) - 1 for r in range(p)], [2 * p - 1] * p)
        for costs in (None, costs_of(2, 2, 2, 0)):
            assert build_schedule("zb-h2", p, m, costs=costs).actions == tuple(map(tuple, grid)), (p, m, costs)


@pytest.mark.parametrize("name", ["zb-1p", "zb-2p"])
@pytest.mark.parametrize("t_f, t_i, t_w, link", COST_SETS)
@pytest.mark.parametrize("p, m", SHAPES + [(4, 4), (4, 2)])
def test_automatic_schedules_hold_their_memory_limit(name, p, m, t_f, t_i, t_w, link):
    schedule = build_schedule(name, p, m, costs=costs_of(t_f, t_i, t_w, link))
    validate(schedule)
    assert max(schedule_peak_activations(schedule)) <= memory_limit(name, p)
    assert memory_limit(name, p) == {"zb-1p": p, "zb-2p": 2 * p}[name]


@pytest.mark.parametrize("t_f, t_i, t_w, link", COST_SETS)
@pytest.mark.parametrize("p, m", SHAPES + [(4, 4)])
def test_automatic_schedules_are_never_slower_than_the_hand_written_ones(p, m, t_f, t_i, t_w, link):
    # ZB-1p at ZB-H1's memory, ZB-2p at ZB-H2's (and one more): section 3 finds them faster.
    costs = costs_of(t_f, t_i, t_w, link)
    bubble = {name: own_span_bubble(build_schedule(name, p, m, costs=costs), costs)
              for name in ("1f1b", "zb-h1", "zb-h2", "zb-1p", "zb-2p")}
    assert bubble["zb-1p"] <= bubble["zb-h1"] + 1e-9 < bubble["1f1b"]
    assert bubble["zb-2p"] <= min(bubble["zb-h2"], bubble["zb-1p"]) + 1e-9


def test_zb_1p_beats_zb_h1_where_the_costs_leave_room():
    # Few micro-batches and a long input-gradient pass: the heuristic's order is shorter.
    costs = costs_of(1, 2, 0.5, 0.1)
    h1, auto = (own_span_bubble(build_schedule(name, 4, 4, costs=costs), costs) for name in ("zb-h1", "zb-1p"))
    assert auto < h1 - 0.1


@pytest.mark.parametrize("p", [2, 4, 8])
def test_zb_2p_has_no_bubble_inside_a_device_s_span_at_equal_costs(p):
    for m in (2 * p, 3 * p):
        schedule = build_schedule("zb-2p", p, m)
        assert own_span_bubble(schedule, costs_of(1, 1, 1, 0)) == pytest.approx(0.0)


def test_cost_aware_schedules_are_registered_as_such():
    assert set(cost_aware_schedules()) == {"zb-h2", "zb-1p", "zb-2p"}
    with_costs = build_schedule("1f1b", 4, 8, costs=costs_of(1, 2, 3, 0))
    assert with_costs == build_schedule("1f1b", 4, 8)  # the others ignore them


@pytest.mark.parametrize("field, value", [("forward", -1.0), ("link", float("nan")), ("backward_weight", "1"),
                                          ("backward_input", True)])
def test_bad_costs_are_one_line_naming_the_constraint(field, value):
    with pytest.raises(ScheduleError) as err:
        PassCosts(**{field: value})
    text = str(err.value)
    assert "\n" not in text and field.replace("_", "-") in text and ">= 0" in text


def test_simulate_builds_from_the_cost_flags(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["simulate", "--schedule", "zb-h2", "--stages", "4", "--microbatches", "12", "--t-forward", "1",
            "--t-input", "2", "--t-weight", "0.5", "--out", str(out)]
    assert main(args) == 0
    metrics = json.loads(out.read_text())["metrics"]
    # The schedule built for these costs: the step idles (p-1)(T_F + T_I - 2T_W) = 6, not the
    # unit grid's replay, and the printed formula says the same.
    assert metrics["step_time_s"] == pytest.approx(12 * 3.5 + 6)
    assert metrics["bubble_fraction"] == pytest.approx(metrics["formula_bubble_fraction"])
    assert max(metrics["peak_held_microbatches_per_device"]) == 7
    assert "formula 0.1250" in capsys.readouterr().out


def test_simulate_refuses_a_negative_cost_in_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--schedule", "zb-1p", "--stages", "4", "--microbatches", "8", "--t-weight", "-1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--t-weight must be >= 0" in err
