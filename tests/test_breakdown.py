"""engine/theory/breakdown.py: each row of the bubble breakdown moves only with its own effect."""

from dataclasses import replace

import pytest

from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.breakdown import PER_STEP_LABEL, breakdown_table, bubble_breakdown, equal_stage_costs
from pipelab.engine.theory.simulate import CostModel, simulate
from tests.fake_results import fake_metrics

ONE_F_ONE_B = build_schedule("1f1b", 4, 8)
UNIFORM = CostModel(forward=1.0, backward=2.0)
FORMULA = theory.gpipe_bubble_fraction(4, 8)  # 3/11
LABELS = ["simulator: every stage at the run's mean costs", "+ each stage's own costs", "+ message latency",
          "+ the engine's own time between actions", "+ each action's own mean cost (its place in the step)"]


def rows(cost, per_action=None, per_action_host=None, per_step=()):
    breakdown = bubble_breakdown(ONE_F_ONE_B, cost, per_action or {}, per_action_host or {}, per_step)
    return [r.bubble for r in breakdown.rows]


#   the run's costs                                           which rows rise above the formula's 3/11
CASES = [
    ("uniform stages, nothing else",                 UNIFORM,                                      []),
    ("a slow stage",                                 replace(UNIFORM, forward=(1.0, 1.0, 2.0, 1.0)), [1, 2, 3, 4]),
    ("message latency",                              replace(UNIFORM, link=0.5),                   [2, 3, 4]),
    ("the engine's time after each action",          replace(UNIFORM, host_after=0.2),             [3, 4]),
]


@pytest.mark.parametrize("name, cost, raised", CASES, ids=[c[0] for c in CASES])
def test_each_row_adds_only_its_own_effect(name, cost, raised):
    bubbles = rows(cost)
    for i, b in enumerate(bubbles):
        if i in raised:
            assert b > FORMULA + 1e-9, (i, bubbles)
        else:
            assert b == pytest.approx(FORMULA, abs=1e-12), (i, bubbles)


def test_an_actions_own_cost_moves_only_the_last_row():
    cold_first_forward = {("F", 0, 0): 3.0}  # a stage's first forward of a step runs cold
    bubbles = rows(UNIFORM, cold_first_forward)
    assert bubbles[:4] == pytest.approx([FORMULA] * 4, abs=1e-12)
    assert bubbles[4] > FORMULA


def test_rows_are_labelled_in_the_order_effects_come_in():
    assert [r.label for r in bubble_breakdown(ONE_F_ONE_B, UNIFORM, {}, {}).rows] == LABELS
    with_steps = bubble_breakdown(ONE_F_ONE_B, UNIFORM, {}, {}, [({}, {})])
    assert [r.label for r in with_steps.rows] == LABELS + [PER_STEP_LABEL]


# Two measured steps, each with one stage's forwards slower than the other three. Their mean
# makes two stages a little slow in every step; played step by step, one stage is much slower
# in each, and the slowest stage sets the pace (GPipe, arXiv 1811.06965): a mean of the steps'
# bubbles above the bubble of their mean costs.
def slow_forwards(stage, seconds):
    return {("F", stage, j): seconds for j in range(8)}


MEAN_OF_TWO = {**slow_forwards(1, 1.5), **slow_forwards(2, 1.5)}

#   each measured step's own costs                                     the last row against the row above
STEPS = [
    ("steps alike: nothing more than their mean",  [MEAN_OF_TWO, MEAN_OF_TWO],                        "equal"),
    ("steps vary: longer than their mean",         [{**slow_forwards(1, 2.0), **slow_forwards(2, 1.0)},
                                                    {**slow_forwards(1, 1.0), **slow_forwards(2, 2.0)}], "above"),
]


@pytest.mark.parametrize("name, steps, expected", STEPS, ids=[c[0] for c in STEPS])
def test_each_steps_own_costs_add_what_their_variation_costs(name, steps, expected):
    bubbles = rows(UNIFORM, MEAN_OF_TWO, {}, [(costs, {}) for costs in steps])
    assert len(bubbles) == 6 and bubbles[4] > FORMULA
    if expected == "equal":
        assert bubbles[5] == pytest.approx(bubbles[4], abs=1e-12)
    else:
        assert bubbles[5] > bubbles[4] + 0.01, bubbles


def test_the_per_step_row_reduces_steps_as_the_measured_clocks_do():
    # Per device the median over steps, then the mean over devices (engine/results/result.py).
    steps = [slow_forwards(0, 3.0), {}, slow_forwards(3, 3.0)]
    row = bubble_breakdown(ONE_F_ONE_B, UNIFORM, {}, {}, [(costs, {}) for costs in steps]).step_costs
    per_step = [simulate(ONE_F_ONE_B, replace(UNIFORM, per_action=costs)).bubble_fractions() for costs in steps]
    assert row.bubble == pytest.approx(sum(sorted(col)[1] for col in zip(*per_step)) / 4)


def test_rows_4_and_5_are_the_runs_two_simulations():
    cost = CostModel(forward=(1.0, 1.2, 1.1, 0.9), backward=(2.0, 2.5, 2.2, 1.8), link=0.1, host_after=0.05)
    per_action, host = {("F", 1, 0): 2.5}, {("B", 3, 7): 0.3}
    bubbles = rows(cost, per_action, host)
    assert bubbles[3] == pytest.approx(simulate(ONE_F_ONE_B, cost).bubble_fraction())
    both = replace(cost, per_action=per_action, per_action_host_after=host)
    assert bubbles[4] == pytest.approx(simulate(ONE_F_ONE_B, both).bubble_fraction())


def test_equal_stage_costs_are_the_mean_over_stages_without_latency_or_host():
    cost = CostModel(forward=(1.0, 3.0), backward_input=(2.0, 4.0), backward_weight=(1.0, 1.0), link=0.5,
                     host_after=0.1)
    equal = equal_stage_costs(build_schedule("zb-h1", 2, 4), cost)
    assert (equal.forward, equal.backward_input, equal.backward_weight, equal.backward) == (2.0, 3.0, 1.0, 4.0)
    assert (equal.link, equal.host_after) == (0.0, 0.0)


@pytest.mark.parametrize("formula, expected_labels", [
    (0.273, ["formula: every stage at the run's mean costs", "simulator: every stage at the run's mean costs",
             "measured, device clock", "measured, wall clock (cores shared)"]),
    (None, ["simulator: every stage at the run's mean costs", "measured, device clock",  # a custom schedule
            "measured, wall clock (cores shared)"]),
])
def test_table_runs_from_the_formula_to_the_wall_clock_with_each_change(formula, expected_labels):
    metrics = fake_metrics(formula_bubble_fraction=formula, device_bubble_fraction=0.40, wall_bubble_fraction=0.55,
                           breakdown=[("simulator: every stage at the run's mean costs", 0.30)])
    table = breakdown_table(metrics)
    assert [row.label for row in table] == expected_labels
    assert [row.kind for row in table] == (["formula"] if formula else []) + ["simulated", "device", "wall"]
    assert table[0].change is None
    assert [round(row.change, 3) for row in table[1:]] == ([0.027, 0.1, 0.15] if formula else [0.1, 0.15])
