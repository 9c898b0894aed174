"""Lesson 7's theory for the all-reduce at the flush against after each stage's last backward, at one
set of costs (lessons/pp_dp/shared_costs.py): never below 1, where each run's own costs could say less."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from pipelab.engine.results.metrics import StageCosts
from pipelab.lessons.pp_dp.shared_costs import flush_over_backward, shared_cost_model, step_at


def run(reduce_at, forward=(0.004, 0.004), backward=(0.008, 0.008), reduce=(0.004, 0.004), link=0.0, m=4):
    """A 2-stage pipeline's result as the theory reads it: its measured costs and set-up timings."""
    costs = StageCosts(forward, backward, tuple(b / 2 for b in backward), tuple(b / 2 for b in backward))
    return NS(schedule=NS(name="1f1b", num_microbatches=m), config=NS(stages=len(forward), reduce_at=reduce_at),
              metrics=NS(costs_s=costs, link_cost_s=link, simulated_step_time_s=None),
              data_parallel=NS(reduce_cost_s=reduce))


@pytest.mark.parametrize("forward, backward, reduce, link", [
    # F per stage       B per stage        all-reduce per stage  link
    ((0.004, 0.004),    (0.008, 0.008),    (0.004, 0.004),       0.0),
    ((0.004, 0.004),    (0.008, 0.008),    (0.0, 0.0),           0.0),
    ((0.002, 0.006),    (0.004, 0.012),    (0.003, 0.010),       0.0005),
    ((0.006, 0.002),    (0.012, 0.004),    (0.020, 0.001),       0.0),
    ((0.004, 0.004),    (0.008, 0.008),    (0.050, 0.050),       0.002),
])
def test_at_one_set_of_costs_the_flush_is_never_shorter(forward, backward, reduce, link):
    flush, after = (run(where, forward, backward, reduce, link) for where in ("flush", "backward"))
    assert flush_over_backward(flush, after) >= 1


def test_the_costs_are_the_two_runs_mean_per_stage():
    cost = shared_cost_model(run("flush", reduce=(0.003, 0.010)), run("backward", reduce=(0.005, 0.004)))
    assert cost.reduce == pytest.approx((0.004, 0.007))
    assert cost.forward == pytest.approx((0.004, 0.004)) and cost.backward == pytest.approx((0.008, 0.008))


def test_where_the_flushs_all_reduce_was_timed_shorter_its_own_costs_say_less_than_1_and_one_set_does_not():
    # The student walk's case: the flush's run timed its all-reduce at 3 ms, the other's at 4 ms.
    flush, after = run("flush", reduce=(0.003, 0.003)), run("backward", reduce=(0.004, 0.004))
    # Each at its own costs, as the runs' own simulations are:
    own = step_at(flush, "flush", shared_cost_model(flush)) / step_at(after, "backward", shared_cost_model(after))
    assert own < 1 <= flush_over_backward(flush, after)
