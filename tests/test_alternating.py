"""engine/runtime/alternating.py and turns.py: several schedules in one launch, their steps in turn."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from pipelab.engine.config import ConfigError, RunConfig
from pipelab.engine.runtime.alternating import run_alternating, why_not_alternating
from pipelab.engine.runtime.faults import injected
from pipelab.engine.runtime.paired import (
    PAIRS,
    STEPS_IN_TURN,
    SideBySideRequest,
    paired,
    paired_ratio,
    run_request,
)
from pipelab.engine.runtime.rank_processes import Cancelled, RunFailed
from pipelab.engine.runtime.turns import play_order
from tests.conftest import run_leftovers, wait_until_gone

A = RunConfig(schedule="1f1b", stages=2, microbatches=4, model="mlp", layers=4, hidden=16, microbatch_size=4, steps=4,
              check=True)


@pytest.mark.parametrize("plays, steps, order", [
    (2, 4, [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2), (1, 3), (0, 3)]),  # A B B A A B B A
    (3, 2, [(0, 0), (1, 0), (2, 0), (2, 1), (1, 1), (0, 1)]),
    (1, 2, [(0, 0), (0, 1)]),
])
def test_steps_take_turns_in_an_abba_order(plays, steps, order):
    assert play_order(plays, steps) == order


@pytest.mark.parametrize("other, why", [
    (A.with_(schedule="gpipe"), None),
    (A.with_(schedule="interleaved", chunks=2), None),  # its own layer split, the same two devices
    (A.with_(schedule="gpipe", microbatches=8, check=False), None),  # m may differ: its own reference
    (A.with_(schedule="gpipe", stages=4), "devices"),
    (A.with_(schedule="gpipe", hidden=32), "model"),
    (A.with_(schedule="gpipe", microbatch_size=8), "model"),
    (A.with_(schedule="gpipe", overlap_steps=True), "overlapping_steps"),
    (A.with_(schedule="pipedream", check=False), "overlapping_steps"),
    (A.with_(schedule="gpipe", runtime="torch"), "torch_runtime"),
    (A.with_(schedule="gpipe", clip_grad_norm=1.0), "step_check"),
])
def test_which_settings_can_share_a_launch(other, why):
    configs = [A, other]
    assert why_not_alternating(configs, [c.check_values() for c in configs]) == why


def test_settings_that_cannot_share_a_launch_fail_in_one_line_before_anything_starts():
    with pytest.raises(ConfigError) as err:
        run_alternating([A, A.with_(stages=4)])
    assert str(err.value) == "these settings cannot share one launch: different numbers of devices"


def metrics(launch, steps):
    return SimpleNamespace(metrics=SimpleNamespace(launch_id=launch, device_step_times_s=steps))


def test_a_ratio_pairs_steps_only_for_runs_of_one_launch():
    assert paired(metrics("x", (1, 2)), metrics("x", (1, 2)))
    assert not paired(metrics("x", (1, 2)), metrics("y", (1, 2)))
    assert not paired(metrics(None, (1, 2)), metrics(None, (1, 2)))
    assert not paired(SimpleNamespace(metrics=SimpleNamespace()), metrics("x", (1,)))  # a saved result's fake


def test_runs_made_apart_give_the_ratio_of_their_medians():
    ours = SimpleNamespace(metrics=SimpleNamespace(launch_id=None, device_step_time_s=3.0))
    other = SimpleNamespace(metrics=SimpleNamespace(launch_id=None, device_step_time_s=4.0))
    assert paired_ratio(ours, other, lambda r: r.metrics.device_step_time_s) == (0.75, 0.75, 0.75)


@pytest.mark.slow
def test_one_launch_runs_every_schedule_with_its_own_weights_and_correct_gradients(private_tmp):
    configs = [A, A.with_(schedule="gpipe"), A.with_(schedule="interleaved", chunks=2, steps=3)]
    progress = []
    results = run_alternating(configs, on_progress=lambda f, text: progress.append(text))
    assert [r.schedule.name for r in results] == ["1f1b", "gpipe", "interleaved"]
    assert len({r.metrics.launch_id for r in results}) == 1 and results[0].metrics.launch_id
    for r in results:
        assert r.config.steps == 4  # the most any asked for: every step has its pair
        assert r.check.grad_max_rel_diff < 1e-5 and r.check.weight_max_rel_diff < 1e-5
        assert len(r.metrics.device_step_times_s) == len(r.metrics.device_bubble_fraction_per_step) == 2
    assert results[2].layer_ranges != results[0].layer_ranges  # interleaved: four chunks of one layer
    # The same initial weights and data: every schedule's losses are one process's.
    assert results[1].losses == pytest.approx(results[0].losses)
    assert results[2].losses == pytest.approx(results[0].losses)
    assert progress and progress[-1] == "step 4 of 4 of each schedule, in turn"
    # The steps really took turns: on the host's clock, step k of each schedule ran in round k,
    # forwards then backwards.
    starts = {(i, e.step): e.wall_start for i, r in enumerate(results) for e in r.timeline.events if e.microbatch == 0
              and e.kind == "F" and e.stage == 0}
    played = sorted(starts, key=starts.get)
    assert played == play_order(3, 4)
    assert wait_until_gone() == [] and run_leftovers(private_tmp) == []


@pytest.mark.slow
def test_a_cancelled_or_failed_launch_leaves_nothing(private_tmp):
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    with pytest.raises(Cancelled), injected("hang", 0, 3):
        run_alternating([A.with_(steps=6), A.with_(schedule="gpipe")], cancel=cancel)
    assert wait_until_gone() == [] and run_leftovers(private_tmp) == []
    with pytest.raises(RunFailed, match="rank 1"), injected("crash", 1, 1):
        run_alternating([A, A.with_(schedule="gpipe")])
    assert wait_until_gone() == [] and run_leftovers(private_tmp) == []


@pytest.mark.slow
def test_a_comparison_is_one_launch_with_a_value_per_pair_of_steps():
    outcome = run_request(SideBySideRequest((A, A.with_(schedule="gpipe"))))
    assert outcome.method == STEPS_IN_TURN and outcome.why_rounds is None
    assert len(outcome.figures()) == PAIRS and all(v > 0 for v in outcome.figures())
    assert outcome.shown()[0].metrics.launch_id == outcome.shown()[1].metrics.launch_id
    ratio, low, high = paired_ratio(*outcome.shown(), lambda r: r.metrics.device_step_time_s)
    assert low <= ratio <= high
