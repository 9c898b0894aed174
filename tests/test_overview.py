"""The recap table and the "which schedule?" ranking, read off the engine."""

from __future__ import annotations

from itertools import groupby

import pytest

from pipelab.engine.schedules import REGISTRY
from pipelab.engine.theory import formulas as theory
from pipelab.lessons.overview import rank_schedules, schedule_row, schedule_rows
from tests.test_schedule_contract import BUILT_IN


def is_upper_bound(name: str) -> bool:
    """A formula registered as a bound (``bubble_is_bound``: DualPipe's README form counts an
    overlapped F&B pair, this engine runs the pair back to back) bounds the simulator from above."""
    return REGISTRY[name].theory.bubble_is_bound

SETTINGS = [(4, 8, 2), (2, 4, 2), (4, 16, 4), (3, 6, 2)]


@pytest.mark.parametrize("p, m, v", SETTINGS)
def test_one_row_per_registered_schedule(p, m, v):
    assert [row.name for row in schedule_rows(p, m, v)] == list(REGISTRY)


@pytest.mark.parametrize("p, m, v", SETTINGS)
def test_formula_and_simulator_agree_on_unit_costs(p, m, v):
    for row in schedule_rows(p, m, v):
        if row.formula_value is None:
            continue
        if is_upper_bound(row.name):
            assert row.simulated_bubble <= row.formula_value + 1e-12, row.name
        else:
            assert row.simulated_bubble == pytest.approx(row.formula_value), row.name


@pytest.mark.parametrize("name, p, m, v, peak, versions, messages", [
    # schedule        p  m  v  peak (whole stages)  versions  messages per step
    ("gpipe",         4, 8, 2, 8,                   1,        2 * 3 * 8),
    ("1f1b",          4, 8, 2, 4,                   1,        2 * 3 * 8),
    ("pipedream",     4, 8, 2, 4,                   4,        2 * 3 * 8),
    ("pipedream-2bw", 4, 8, 2, 4,                   2,        2 * 3 * 8),
    ("zb-h2",         4, 8, 2, 7,                   1,        2 * 3 * 8),
    ("interleaved",   4, 8, 2, 5.5,                 1,        2 * 7 * 8),   # p(1 + (p-1)/(vp)) on rank 0
    ("zb-v",          4, 8, 2, 4,                   1,        2 * 6 * 8),   # the V's turn stays on one rank
])
def test_row_numbers(name, p, m, v, peak, versions, messages):
    row = schedule_row(name, p, m, v)
    assert (row.peak_activations, row.weight_versions, row.messages_per_step) == (peak, versions, messages)
    assert row.peak_activations == max(theory.peak_inflight(name, p, m, r, row.chunks) for r in range(p)) / row.chunks


def test_a_schedule_the_settings_break_names_the_constraint():
    row = schedule_row("interleaved", 4, 6, 2)
    assert not row.buildable and "m % p == 0" in row.error and row.simulated_bubble is None


def test_chunk_share_makes_interleaving_faster_not_longer():
    one, two = schedule_row("1f1b", 4, 8), schedule_row("interleaved", 4, 8, 2)
    assert two.step_time < one.step_time  # the same model: each chunk costs 1/v


def rule_key(choice):
    """What rank_schedules orders by (its docstring): the ones that fit first, by step, then
    peak, then messages; the others by peak, then step. Equal keys are a tie, either order right."""
    row = choice.row
    if choice.fits:
        return (0, round(row.step_time, 9), row.peak_activations, row.messages_per_step)
    return (1, row.peak_activations, round(row.step_time, 9))


def ranking(choices) -> list[set[str]]:
    """The built-in schedules in ranked order, the ones the rule ties in one set. A schedule
    registered beside them is left out: a copy (tests/copied_schedule.py) ties with its
    original, a new one takes its own place, and neither moves the built-ins."""
    groups = [{c.row.name for c in tied} & set(BUILT_IN) for _, tied in groupby(choices, key=rule_key)]
    return [group for group in groups if group]


@pytest.mark.parametrize("budget, allow_async", [(1, False), (4, False), (64, True)])
def test_the_ranking_follows_its_rule(budget, allow_async):
    choices = rank_schedules(4, 8, budget=budget, allow_async=allow_async)
    assert [rule_key(c) for c in choices] == sorted(rule_key(c) for c in choices)
    assert all(c.fits == (c.row.peak_activations <= budget) for c in choices)
    if not allow_async:  # asynchronous schedules (stale weights) only on request
        assert all(c.row.synchronous for c in choices)


def test_ranking_fastest_within_budget_first():
    fits = [c for c in rank_schedules(4, 8, budget=4) if c.fits]
    # ZB-H1 and ZB-1p build the same order at unit costs: a tie the rule leaves to either.
    assert ranking(fits)[:2] == [{"zb-v"}, {"zb-h1", "zb-1p"}]


def test_ranking_with_room_for_everything_and_async_allowed():
    choices = rank_schedules(4, 8, budget=64, allow_async=True)
    assert {c.row.name for c in choices} == set(REGISTRY)
    assert ranking(choices)[-1] == {"naive"}  # one device at work at a time: the slowest step


def test_a_budget_of_one_leaves_only_the_naive_schedule():
    assert ranking([c for c in rank_schedules(4, 8, budget=1) if c.fits]) == [{"naive"}]


# ---- the split: n workers as d pipelines of p stages ----------------------------------------------
from pipelab.lessons.overview import rank_splits, split_rows  # noqa: E402


@pytest.mark.parametrize("reduce_cost, p, d, exposed, step", [
    # all-reduce of the whole model   p  d   exposed (stage 0's)      step, whole-model forwards
    (0.0,                             4, 1,  0.0,                     (8 + 3) * 0.75),   # (m+p-1)(T_F+T_B), 1/p each
    (0.0,                             2, 2,  0.0,                     (4 + 1) * 1.5),
    (0.5,                             2, 2,  0.5 * 1 / 2,             (4 + 1) * 1.5 + 0.25),
    (0.5,                             1, 4,  0.5 * 1.5,               2 * 3 + 0.75),     # a ring over 4: 2(d-1)/d = 1.5
])
def test_every_split_trains_one_model_and_pays_its_exposed_reduce(reduce_cost, p, d, exposed, step):
    row = next(r for r in split_rows(4, 8, reduce_cost) if (r.stages, r.replicas) == (p, d))
    assert row.microbatches == 8 // d and row.model_share == 1 / p
    assert row.exposed_reduce == pytest.approx(exposed) and row.step_time == pytest.approx(step)


def test_splits_that_cannot_share_the_global_batch_are_left_out():
    assert [(r.stages, r.replicas) for r in split_rows(4, 6, 0.5)] == [(4, 1), (2, 2)]  # 6 does not split 4 ways


def test_the_split_ranking_is_by_step_within_the_model_budget():
    ranked = rank_splits(split_rows(4, 8, 0.5), model_budget=0.5)
    assert [(r.stages, r.replicas, fits) for r, fits in ranked] == [(2, 2, True), (4, 1, True), (1, 4, False)]
    fits = [r.step_time for r, ok in ranked if ok]
    assert fits == sorted(fits)
    # A reduce three times as costly tips the balance to the one long pipeline.
    assert rank_splits(split_rows(4, 8, 3.0), model_budget=0.5)[0][0].replicas == 1
