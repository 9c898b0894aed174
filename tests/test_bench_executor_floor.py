"""bench/executor_floor.py: which message an action sends and takes, which schedules its transport
plays, and a real play of the tiny model's ranks with nothing between their actions but the
clocks, the send's copy or the transport (slow)."""

from __future__ import annotations

import pytest

from bench import executor_floor
from bench.executor_costs import _config
from pipelab.engine.config import RunConfig
from pipelab.engine.results.windows import measured_steps


@pytest.mark.parametrize("kind, stage, last, boundary", [
    ("F", 0, 3, 1),  # the activation entering stage 1
    ("F", 3, 3, None),  # the last stage's forward ends in the loss: nothing to send
    ("B", 3, 3, 3),  # the gradient of the activation entering stage 3
    ("I", 2, 3, 2),  # ZB's input gradient sends as B does
    ("B", 0, 3, None),  # the first stage's input is data: no gradient to send
    ("W", 1, 3, None),  # the weight gradient stays on its rank
])
def test_an_action_sends_across_the_boundary_of_the_tensor_it_makes(kind, stage, last, boundary):
    assert executor_floor.sent_across(kind, stage, last) == boundary


@pytest.mark.parametrize("kind, stage, last, boundary", [
    ("F", 1, 3, 1),  # the activation entering its stage
    ("F", 0, 3, None),  # the first stage's input is data
    ("B", 2, 3, 3),  # the gradient of the activation entering the next stage
    ("I", 0, 3, 1),  # ZB's input gradient takes as B does
    ("B", 3, 3, None),  # the last stage's backward starts from its loss
    ("W", 1, 3, None),  # the weight gradient needs no message
])
def test_an_action_takes_the_message_of_the_boundary_it_starts_from(kind, stage, last, boundary):
    assert executor_floor.received_from(kind, stage, last) == boundary


@pytest.mark.parametrize("schedule, kind, stage, peers", [
    ("1f1b", "F", 1, (2, 0)),  # p = 4, one stage per rank: stage s on rank s; (sends to, takes from)
    ("1f1b", "B", 1, (0, 2)),
    ("1f1b", "F", 0, (1, None)),
    ("1f1b", "B", 3, (2, None)),
    ("interleaved", "F", 5, (2, 0)),  # p = 4, v = 2: stage s on rank s mod 4
    ("interleaved", "B", 4, (3, 1)),
])
def test_an_action_sends_to_and_takes_from_the_ranks_of_its_neighbour_stages(schedule, kind, stage, peers):
    built = RunConfig(schedule=schedule, stages=4, microbatches=4).build_schedule()
    assert executor_floor.peers(built, kind, stage, 0) == peers


@pytest.mark.parametrize("schedule, plays", [
    ("1f1b", True),
    ("zb-h2", True),
    ("interleaved", True),
    ("zb-v", False),  # the V's turn hands its message over on the same rank
])
def test_the_floor_plays_through_the_transport_only_messages_between_two_ranks_in_send_order(schedule, plays):
    built = RunConfig(schedule=schedule, stages=2, microbatches=4).build_schedule()
    if plays:
        executor_floor.check_plays_through_transport(built)
    else:
        with pytest.raises(ValueError, match="between two ranks only"):
            executor_floor.check_plays_through_transport(built)


def test_an_unknown_variant_is_refused_before_any_rank_starts():
    with pytest.raises(ValueError, match="no floor variant 'copy'"):
        executor_floor.measure(_config("1f1b", 2, quick=True), "copy")


def test_a_rank_that_died_without_its_gaps_stops_the_play_at_once_with_its_exit_code():
    import queue
    from types import SimpleNamespace
    ranks = [SimpleNamespace(exitcode=None), SimpleNamespace(exitcode=1)]  # rank 1 died; rank 0 waits on it
    with pytest.raises(RuntimeError, match="rank 1 stopped with exit code 1"):
        executor_floor._next_rank_gaps(queue.Queue(), ranks)
    waiting = queue.Queue()
    waiting.put([1e-6])
    assert executor_floor._next_rank_gaps(waiting, ranks) == [1e-6]  # what came back is taken first


@pytest.mark.slow  # starts two ranks of the tiny model, a few seconds each way
@pytest.mark.parametrize("variant", executor_floor.VARIANTS)
def test_every_gap_of_the_measured_steps_comes_back_and_none_is_negative(variant, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the transport's channel files: removed once played
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    config = _config("1f1b", 2, quick=True)
    schedule = config.build_schedule()
    gaps = executor_floor.measure(config, variant)
    measured = len(measured_steps(config.steps))
    # Each rank: a gap before every action but its step's first, one before each optimizer
    # step, and the last optimizer step's zero (nothing follows it), as the runs' figures count.
    per_step = sum(len(schedule.actions[r]) + len(schedule.stages_of(r)) for r in range(schedule.num_ranks))
    assert len(gaps) == measured * per_step
    seconds = [s for _, s in gaps]
    assert min(seconds) >= 0 and seconds.count(0.0) >= measured * schedule.num_ranks
    assert executor_floor.median_us(gaps) > 0
    # Named as ours are (bench/executor_costs.py): 1F1B at p = 2 has these, as many per step.
    names = [name for name, _ in gaps]
    per_step_named = {name: names.count(name) // measured for name in set(names)}
    m = config.microbatches
    assert per_step_named == {"F0 -> F0": 1, "F0 -> B0": m - 1, "B0 -> F0": m - 2, "B0 -> B0": 1, "B0 -> U0": 1,
                              "U0 -> end": 1, "F1 -> B1": m, "B1 -> F1": m - 1, "B1 -> U1": 1, "U1 -> end": 1}
    assert executor_floor.median_by_gap_us(gaps).keys() == per_step_named.keys()
    assert not list(tmp_path.glob("pipelab-floor-*"))  # torch may leave its own caches there
