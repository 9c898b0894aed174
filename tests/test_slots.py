"""engine/runtime/slots.py: a channel has as many slots as messages in use at once, and never fewer."""

import random

import pytest

from pipelab.engine.runtime.comm import sends_by_channel
from pipelab.engine.runtime.slots import slots_needed
from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory.simulate import CostModel, simulate


def slots(name, p, m, v=None):
    schedule = build_schedule(name, p, m, v)
    return slots_needed(schedule, sends_by_channel(schedule))


@pytest.mark.parametrize("name, p, m, expected", [
    # 1F1B: stage s has p-s micro-batches in flight, whatever m is (arXiv 2104.04473, 2.2.1)
    ("1f1b",  4, 8,   {(0, 1): 4, (1, 2): 3, (2, 3): 2, (1, 0): 4, (2, 1): 3, (3, 2): 2}),
    ("1f1b",  4, 128, {(0, 1): 4, (1, 2): 3, (2, 3): 2, (1, 0): 4, (2, 1): 3, (3, 2): 2}),
    # GPipe: every forward of the step before the first backward
    ("gpipe", 4, 8,   {(0, 1): 8, (1, 2): 8, (2, 3): 8, (1, 0): 8, (2, 1): 8, (3, 2): 8}),
    # naive: one micro-batch at a time
    ("naive", 3, 5,   {(0, 1): 1, (1, 2): 1, (1, 0): 1, (2, 1): 1}),
])
def test_slots_per_channel(name, p, m, expected):
    assert slots(name, p, m) == expected


def overwrites(schedule, need, cost) -> list:
    """Every place where, in the simulator's run with ``cost``, a message is written into a
    slot before the receiver's last use of the message the slot held before."""
    timeline = simulate(schedule, cost)
    end = {(e.kind, e.stage, e.microbatch): e.end for e in timeline.events}
    split = schedule.split_backward_pairs
    bad = []
    for channel, messages in sends_by_channel(schedule).items():
        src, s_slots = channel[0], need[channel]
        for k in range(len(messages) - s_slots):
            (_, stage, j), _ = messages[k]
            last_use = end[("W" if (stage, j) in split else "B", stage, j)]
            sender = schedule.actions[src][messages[k + s_slots][1]]
            written = end[(sender.kind, sender.stage, sender.microbatch)]
            if written < last_use:
                bad.append((channel, k, k + s_slots))
    return bad


def random_costs(schedule, rng) -> CostModel:
    """Each rank its own speed (over four orders of magnitude: a fast sender can run ahead
    of a slow receiver), each action its own cost around it and its own host time after it,
    and a random link."""
    speed = [10 ** rng.uniform(-2, 2) for _ in schedule.actions]
    actions = [(r, (a.kind, a.stage, a.microbatch)) for r, prog in enumerate(schedule.actions) for a in prog]
    return CostModel(link=rng.choice([0.0, 0.01, 1.0, 5.0]),
                     per_action={key: speed[r] * 10 ** rng.uniform(-0.5, 0.5) for r, key in actions},
                     per_action_host_after={key: speed[r] * rng.uniform(0.0, 0.3) for r, key in actions})


@pytest.mark.parametrize("name, p, m, v", [
    ("gpipe", 3, 5, None), ("1f1b", 4, 8, None), ("1f1b", 3, 7, None), ("interleaved", 2, 4, 2),
    ("interleaved", 4, 8, 2), ("zb-h1", 4, 8, None), ("zb-h2", 3, 6, None), ("zb-v", 2, 4, 2),
    ("zb-v", 4, 8, 2), ("pipedream", 4, 8, None), ("pipedream-2bw", 4, 8, None), ("naive", 3, 4, None),
])
def test_no_run_overwrites_a_message_still_in_use(name, p, m, v):
    schedule = build_schedule(name, p, m, v)
    need = slots_needed(schedule, sends_by_channel(schedule))
    rng = random.Random(f"{name}-{p}-{m}")
    for _ in range(50):
        assert overwrites(schedule, need, random_costs(schedule, rng)) == []


@pytest.mark.parametrize("name, p, m", [("1f1b", 4, 8), ("gpipe", 3, 5), ("zb-h1", 4, 8)])
def test_one_slot_fewer_would_overwrite_a_message_still_in_use(name, p, m):
    schedule = build_schedule(name, p, m)
    need = slots_needed(schedule, sends_by_channel(schedule))
    tight = {channel: n for channel, n in need.items() if n > 1}
    rng = random.Random(0)
    for channel, n in tight.items():
        fewer = need | {channel: n - 1}
        assert any(overwrites(schedule, fewer, random_costs(schedule, rng)) for _ in range(50)), channel
