"""The zero bubble paper's round-by-round heuristic (engine/schedules/cost_rounds.py, arXiv
2401.10241 section 3.1): complete orders that keep to the memory limit, and what it adds to ZB-2p."""

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules import build_schedule
from pipelab.engine.schedules.base import Schedule, linear_placement
from pipelab.engine.schedules.cost_rounds import ALL_ROUNDS, best_rounds_order, rounds_order
from pipelab.engine.schedules.cost_search import longest_own_span
from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.theory.held_activations import peak_activations
from pipelab.engine.theory.validate import validate

COSTS = [PassCosts(), PassCosts(forward=1, backward_input=1, backward_weight=0.5, link=0.05, weight_memory=0.4),
         PassCosts(forward=18.5, backward_input=18.1, backward_weight=9.3, link=0.6, weight_memory=0.37)]


@pytest.mark.parametrize("costs", COSTS)
@pytest.mark.parametrize("p, m, factor", [(4, 12, 1), (4, 12, 2), (8, 24, 2), (8, 32, 1)])
def test_every_setting_gives_a_valid_order_within_the_limit(p, m, factor, costs):
    for setting in ALL_ROUNDS:
        order = rounds_order(p, m, costs, factor * p, setting)
        assert order is not None, setting
        schedule = Schedule("rounds", p, m, linear_placement(p), tuple(map(tuple, order)))
        validate(schedule)
        assert all(len(program) == 3 * m for program in order)
        assert max(peak_activations(order, 1, costs.weight_memory)) <= factor * p + 1e-9, setting


def test_a_limit_below_one_micro_batch_has_no_order():
    assert rounds_order(4, 8, PassCosts(), 0.5, ALL_ROUNDS[0]) is None


@pytest.mark.parametrize("m", [24, 32])
def test_zb_2p_at_the_paper_s_costs_is_near_zero_and_beats_zb_h2(m):
    # 1.5B, p = 8 (arXiv 2401.10241, Tables 3 and 9): Table 5 gives ZB-2p 0.0433 at m = 24 and
    # 0.0039 at m = 32, against ZB-H2's 0.1083 and 0.0837.
    costs = PassCosts(forward=18.5, backward_input=18.1, backward_weight=9.3, link=0.6, weight_memory=0.3664)
    rate = {name: 1 - m * costs.work / longest_own_span(build_schedule(name, 8, m, costs=costs), costs)
            for name in ("zb-h2", "zb-2p")}
    assert rate["zb-2p"] < rate["zb-h2"] - 0.05
    assert rate["zb-2p"] < (0.05 if m == 24 else 0.01)


def test_weight_memory_is_a_share():
    with pytest.raises(ScheduleError, match="at most 1"):
        PassCosts(weight_memory=1.5)
    with pytest.raises(ScheduleError, match="weight_memory|weight-memory"):
        PassCosts(weight_memory=-0.1)


@pytest.mark.parametrize("costs", COSTS)
def test_the_best_setting_is_chosen_by_the_plan_s_own_times_which_are_the_simulator_s(costs):
    p, m = 6, 18
    spans = []
    for setting in ALL_ROUNDS:
        order = rounds_order(p, m, costs, 2 * p, setting)
        spans.append(longest_own_span(Schedule("rounds", p, m, linear_placement(p), tuple(map(tuple, order))), costs))
    best = best_rounds_order(p, m, costs, 2 * p)
    chosen = longest_own_span(Schedule("rounds", p, m, linear_placement(p), tuple(map(tuple, best))), costs)
    assert chosen == pytest.approx(min(spans))
