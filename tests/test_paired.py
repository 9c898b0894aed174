"""engine/runtime/paired.py: settings measured side by side, the order turning each round."""

import dataclasses
from types import SimpleNamespace

import pytest

from pipelab.engine.config import ConfigError, RunConfig
from pipelab.engine.runtime.paired import (
    ROUNDS_OF_RUNS,
    SideBySideRequest,
    run_request,
    run_side_by_side,
    sweep_request,
    turn_order,
)

A = RunConfig(schedule="1f1b", stages=2, microbatches=2, model="mlp", layers=2, hidden=8, microbatch_size=2, steps=1)
B = A.with_(schedule="gpipe")
C = A.with_(schedule="zb-h1")


def fake_runs(step_ms):
    """A run function that records the order it ran in; ``step_ms[(schedule, k)]`` is each run's step."""
    order = []

    def run(config, limits, on_progress=None, cancel=None, nice=0):
        k = sum(1 for name in order if name == config.schedule)
        order.append(config.schedule)
        on_progress(1.0, "done")
        metrics = SimpleNamespace(device_step_time_s=step_ms[(config.schedule, k)] / 1e3, run_seconds=0.1)
        return SimpleNamespace(config=config, metrics=metrics, round=k)
    return run, order


@pytest.mark.parametrize("count, round_index, order", [
    (2, 0, [0, 1]), (2, 1, [1, 0]), (2, 2, [0, 1]),
    (3, 0, [0, 1, 2]), (3, 1, [1, 2, 0]), (3, 2, [2, 0, 1]),
])
def test_each_round_starts_one_further_on(count, round_index, order):
    assert turn_order(count, round_index) == order


def test_every_setting_runs_once_per_round_in_turning_order_and_keeps_its_place():
    run, order = fake_runs({(s, k): 10.0 for s in ("1f1b", "gpipe", "zb-h1") for k in range(3)})
    progress = []
    side = run_side_by_side([A, B, C], rounds=3, on_progress=lambda f, text: progress.append((f, text)), run_fn=run)
    assert order == ["1f1b", "gpipe", "zb-h1", "gpipe", "zb-h1", "1f1b", "zb-h1", "1f1b", "gpipe"]
    assert [[r.config.schedule for r in row] for row in side.runs] == [["1f1b", "gpipe", "zb-h1"]] * 3
    assert [[r.round for r in row] for row in side.runs] == [[0, 0, 0], [1, 1, 1], [2, 2, 2]]
    assert progress[-1] == (1.0, "round 3 of 3, run 9 of 9")
    assert [f for f, _ in progress] == sorted(f for f, _ in progress)  # never goes back


def test_the_caller_reads_every_round_by_its_headline_and_is_shown_the_median_one():
    # Ratios 1F1B / GPipe by round: 1.2, 0.8, 1.0: the median is round 2 (index 2). The engine
    # keeps every round; the headline is the caller's, applied after the runs (no lesson code runs inside).
    steps = {("1f1b", 0): 12.0, ("gpipe", 0): 10.0, ("1f1b", 1): 8.0, ("gpipe", 1): 10.0,
             ("1f1b", 2): 10.0, ("gpipe", 2): 10.0}
    run, _ = fake_runs(steps)
    ratio = lambda rs: rs[0].metrics.device_step_time_s / rs[1].metrics.device_step_time_s  # noqa: E731
    outcome = run_request(SideBySideRequest((A, B), rounds=3), run_fn=run)
    assert [[r.round for r in results] for results in outcome.rounds] == [[0, 0], [1, 1], [2, 2]]
    assert outcome.figures(ratio) == pytest.approx((1.2, 0.8, 1.0))
    assert [r.round for r in outcome.shown(ratio)] == [2, 2]
    # Without a headline: the first setting's step, 12, 8, 10 ms: the median is round 2 again; by
    # GPipe's step (10 ms in every round), a tie: the middle round in the order run.
    assert outcome.figures() == pytest.approx((0.012, 0.008, 0.010))  # fake_runs: steps in ms
    assert [r.round for r in outcome.shown()] == [2, 2]
    assert [r.round for r in outcome.shown(lambda rs: rs[1].metrics.device_step_time_s)] == [1, 1]


def test_a_request_is_plain_data():
    """What travels to the runner (and to a cluster's node) is settings, never a function."""
    assert {f.name for f in dataclasses.fields(SideBySideRequest)} == {"configs", "rounds", "pairs"}


#  the sweep's steps per setting       -> measured steps each keeps in the shared launch
SWEEPS = [
    ((5, 5, 5),                              3),  # a lesson's: 2 warm up, 3 measured, as in a run of its own
    ((1, 1, 1),                              1),
    ((5, 2, 5),                              1),  # the fewest any setting would measure alone
]


@pytest.mark.parametrize("steps, pairs", SWEEPS)
def test_a_sweep_asks_for_one_launch_at_its_own_steps_and_each_setting_once_where_none_can_be_shared(steps, pairs):
    configs = [A.with_(microbatches=m, steps=s) for m, s in zip((2, 4, 8), steps)]
    request = sweep_request(configs)
    assert (request.configs, request.rounds, request.pairs) == (tuple(configs), 1, pairs)


def test_an_empty_sweep_is_refused_in_one_line_before_anything_runs():
    run, order = fake_runs({})
    with pytest.raises(ConfigError) as err:
        run_request(sweep_request([]), run_fn=run)
    assert str(err.value) == "a side-by-side comparison needs at least one setting" and order == []


@pytest.mark.slow
def test_a_sweeps_points_take_turns_in_one_launch_with_the_steps_a_run_has():
    configs = [A.with_(microbatches=m, steps=5) for m in (2, 4)]
    outcome = run_request(sweep_request(configs))
    assert outcome.method == "steps in turn"
    shown = outcome.shown()
    assert [r.config.microbatches for r in shown] == [2, 4]
    assert [len(r.metrics.device_step_times_s) for r in shown] == [3, 3]
    assert len({r.metrics.launch_id for r in shown}) == 1


@pytest.mark.parametrize("configs, rounds, line", [
    ([], 3, "a side-by-side comparison needs at least one setting"),
    ([A], 0, "a side-by-side comparison needs at least one round, got 0"),
    ([A, A.with_(stages=0)], 1, "stages must be a whole number >= 1, got 0"),
])
def test_bad_requests_fail_in_one_line_before_anything_runs(configs, rounds, line):
    run, order = fake_runs({})
    with pytest.raises(ConfigError) as err:
        run_side_by_side(configs, rounds, run_fn=run)
    assert str(err.value) == line and order == []


@pytest.mark.slow
def test_settings_that_cannot_share_a_launch_run_in_rounds_of_their_own_launches():
    outcome = run_request(SideBySideRequest((A, B.with_(stages=1)), rounds=2))
    assert [r.schedule.name for r in outcome.shown()] == ["1f1b", "gpipe"]
    assert outcome.method == ROUNDS_OF_RUNS and outcome.why_rounds == "devices"
    assert len(outcome.figures()) == 2 and all(v > 0 for v in outcome.figures())
    assert {r.metrics.launch_id for results in outcome.rounds for r in results} == {None}
