"""The recap table and the "which schedule?" ranking, read off the engine."""

from __future__ import annotations

import pytest

from pipelab.engine.schedules import REGISTRY
from pipelab.engine.theory import formulas as theory
from pipelab.lessons.overview import rank_schedules, schedule_row, schedule_rows


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


def test_ranking_fastest_within_budget_first():
    choices = rank_schedules(4, 8, budget=4)
    fits = [c for c in choices if c.fits]
    assert [c.row.name for c in fits][:2] == ["zb-v", "zb-h1"]
    assert all(c.row.peak_activations <= 4 for c in fits)
    assert [c.row.step_time for c in fits] == sorted(c.row.step_time for c in fits)
    assert all(not c.fits for c in choices[len(fits):])
    assert all(c.row.synchronous for c in choices)  # asynchronous schedules only on request


def test_ranking_with_room_for_everything_and_async_allowed():
    names = [c.row.name for c in rank_schedules(4, 8, budget=64, allow_async=True)]
    assert set(names) == set(REGISTRY) and names[-1] == "naive"


def test_a_budget_of_one_leaves_only_the_naive_schedule():
    assert [c.row.name for c in rank_schedules(4, 8, budget=1) if c.fits] == ["naive"]


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
