"""bench/executor_floor.py: which message an action sends, and a real play of the tiny model's
ranks with nothing between their actions but the clocks (slow)."""

from __future__ import annotations

import pytest

from bench import executor_floor
from bench.executor_costs import _config
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


@pytest.mark.slow  # starts two ranks of the tiny model, a few seconds each way
@pytest.mark.parametrize("copy", [False, True])
def test_every_gap_of_the_measured_steps_comes_back_and_none_is_negative(copy):
    config = _config("1f1b", 2, quick=True)
    schedule = config.build_schedule()
    gaps = executor_floor.measure(config, copy)
    measured = len(measured_steps(config.steps))
    # Each rank: a gap before every action but its step's first, one before each optimizer
    # step, and the last optimizer step's zero (nothing follows it), as the runs' figures count.
    per_step = sum(len(schedule.actions[r]) + len(schedule.stages_of(r)) for r in range(schedule.num_ranks))
    assert len(gaps) == measured * per_step
    assert min(gaps) >= 0 and gaps.count(0.0) >= measured * schedule.num_ranks
    assert executor_floor.median_us(gaps) > 0
