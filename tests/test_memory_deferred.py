"""Deferred activation accounting (ActivationTracker.later / replay, the executor's on CPU) gives
exactly what counting after every action gives: the curve, the peak, each key's bytes, and
the stage's per-micro-batch sizes, wherever the replays fall."""

import pytest
import torch

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD
from pipelab.engine.runtime.memory import DEFER_AT_MOST
from pipelab.engine.runtime.stage import Stage
from tests.test_stage import middle_stage as stage_between

F, B, I, W = FORWARD, BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT  # noqa: E741 (the schedules' letters)

# One stage's actions (kind, micro-batch), as a schedule would order them.
ONE_F_ONE_B = [(F, 0), (F, 1), (B, 0), (F, 2), (B, 1), (F, 3), (B, 2), (B, 3)]
ZERO_BUBBLE = [(F, 0), (F, 1), (I, 0), (F, 2), (W, 0), (I, 1), (F, 3), (I, 2), (W, 1), (I, 3), (W, 2), (W, 3)]
GPIPE_LONG = [(F, j) for j in range(12)] + [(B, j) for j in range(12)]  # past DEFER_AT_MOST queued


def middle_stage(recompute: bool, split: bool) -> Stage:
    """tests/test_stage.py's middle stage, 16 wide inside: its two layers' tensors differ in size."""
    return stage_between(recompute, split, hidden=16)


def act(stage: Stage, kind: str, j: int) -> None:
    if kind == F:
        stage.forward(j, torch.randn(4, 8, generator=torch.Generator().manual_seed(j)), None, 1.0)
    elif kind == W:
        stage.weight_grad(j)
    else:
        stage.backward(j, torch.ones(4, 8), split=kind == I)


def figures(stage: Stage) -> dict:
    t = stage.tracker
    return {"live": t.live, "keys": dict(t.key_bytes), "extra": dict(t.extra), "peak": t.peak,
            "samples": list(t.samples), "activation": stage.activation_bytes, "held for W": stage.weight_grad_bytes}


def play(actions, recompute: bool, split: bool, replay_after: set | None) -> list[dict]:
    """The figures after every action: counted at once (``replay_after`` None), or queued and
    replayed only after the actions whose index it holds (and at the end)."""
    stage = middle_stage(recompute, split)
    if replay_after is not None:
        stage.tracker.defer()
    seen = []
    for index, (kind, j) in enumerate(actions):
        act(stage, kind, j)
        if replay_after is None:
            stage.account(kind, j)
            stage.tracker.sample(float(index))
        else:
            stage.tracker.later(stage, kind, j, float(index))
            if index in replay_after or index == len(actions) - 1:
                stage.tracker.replay()
        seen.append(figures(stage) if replay_after is None or not stage.tracker.deferred else None)
    return seen


@pytest.mark.parametrize("actions, recompute, split", [
    (ONE_F_ONE_B, False, False),
    (ONE_F_ONE_B, True, False),   # a recompute forward keeps its input by hand, which B drops
    (ZERO_BUBBLE, False, True),   # I leaves W's inputs held until W runs
    (GPIPE_LONG, False, False),
])
@pytest.mark.parametrize("replay_after", [set(), {1}, {2, 5}, set(range(30))])
def test_deferred_accounting_equals_counting_after_every_action(actions, recompute, split, replay_after):
    at_once = play(actions, recompute, split, None)
    deferred = play(actions, recompute, split, replay_after)
    assert at_once[-1]["peak"] > 0 and at_once[-1]["live"] == 0  # it counted something, and freed it all
    assert len(at_once[-1]["samples"]) == len(actions) + 1  # one sample per action, after the start's
    for index, (now, later) in enumerate(zip(at_once, deferred)):
        if later is not None:  # the queue was empty here: everything so far was counted
            assert later == now, index
    assert deferred[-1] == at_once[-1]


def test_the_queue_is_counted_once_it_holds_defer_at_most_actions():
    stage = middle_stage(recompute=False, split=False)
    queue = stage.tracker.defer()
    for j in range(DEFER_AT_MOST - 1):
        act(stage, F, j)
        stage.tracker.later(stage, F, j, float(j))
    assert len(queue) == DEFER_AT_MOST - 1 and stage.tracker.live == 0
    act(stage, F, DEFER_AT_MOST)
    stage.tracker.later(stage, F, DEFER_AT_MOST, 9.0)
    assert queue == [] and stage.tracker.live > 0 and len(stage.tracker.samples) == DEFER_AT_MOST + 1


def test_reading_the_tracker_counts_the_queue_first():
    # A rollback's release (Stage.discard) or the run's end reads the count: never a stale one.
    stage = middle_stage(recompute=False, split=False)
    stage.tracker.defer()
    act(stage, F, 0)
    stage.tracker.later(stage, F, 0, 1.0)
    assert stage.tracker.live_bytes() == stage.activation_bytes > 0
    assert stage.tracker.samples[-1] == (1.0, stage.activation_bytes)


@pytest.mark.parametrize("actions, recompute, split", [
    (ONE_F_ONE_B, False, False), (ONE_F_ONE_B, True, False), (ZERO_BUBBLE, False, True)])
def test_a_replay_cut_short_counts_a_prefix_and_keeps_the_rest_queued(actions, recompute, split):
    # A receive's wait counts the queue until its message is in (replay's ``until``): whatever
    # has been counted so far must be what counting at once gives after as many actions.
    at_once = play(actions, recompute, split, None)
    stage = middle_stage(recompute, split)
    stage.tracker.defer()
    cut_short = 0
    for index, (kind, j) in enumerate(actions):
        act(stage, kind, j)
        stage.tracker.later(stage, kind, j, float(index))
        if index % 3 == 2:  # now and then one action is counted, and the wait is over
            stage.tracker.replay(until=lambda: True)
            counted = len(stage.tracker.samples) - 1
            cut_short += counted <= index  # (at DEFER_AT_MOST queued, later counted them all)
            assert 0 < counted <= index + 1 and len(stage.tracker.deferred) == index + 1 - counted
            assert figures(stage) == at_once[counted - 1], index
    assert cut_short >= 2
    stage.tracker.replay()
    assert figures(stage) == at_once[-1]


def test_a_replay_keeps_the_tensors_noted_after_the_last_queued_action():
    # Counted before the action that saved them is queued, they stay noted, and count as its.
    at_once = play(ONE_F_ONE_B[:2], False, False, None)
    stage = middle_stage(recompute=False, split=False)
    stage.tracker.defer()
    act(stage, F, 0)
    stage.tracker.later(stage, F, 0, 0.0)
    act(stage, F, 1)  # saved, not queued yet
    stage.tracker.replay()
    assert figures(stage) == at_once[0] and stage.tracker._saved
    stage.tracker.later(stage, F, 1, 1.0)
    stage.tracker.replay()
    assert figures(stage) == at_once[1]
