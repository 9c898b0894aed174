"""engine/runtime/gradient_reduce.py: what an R lasts on the device clock is timed once per
launch for one group and gradient size, so the plays of a launch that take turns agree on it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from pipelab.engine.runtime import gradient_reduce as G


@pytest.fixture
def collective(monkeypatch):
    """torch.distributed's calls _timed_cost makes, counted, each all-reduce 'taking' its turn's time."""
    calls = {"all_reduce": 0}

    def all_reduce(tensor, op=None, group=None):
        calls["all_reduce"] += 1

    monkeypatch.setattr(G.dist, "barrier", lambda group=None: None)
    monkeypatch.setattr(G.dist, "all_reduce", all_reduce)
    monkeypatch.setattr(G, "_TIMED", {})
    return calls


def reduce_of(replicas: int = 2) -> G.GradientReduce:
    device = SimpleNamespace(kind="cpu", torch_device=torch.device("cpu"))
    return G.GradientReduce(group=None, replicas=replicas, pipeline=None, device=device, cost_s={})


def test_the_second_play_of_a_launch_takes_the_first_ones_timing(collective):
    stage = nn.Linear(64, 64)
    first = reduce_of()._timed_cost(stage, members=(0, 2))
    timed = collective["all_reduce"]
    assert timed == G.TIMING_ROUNDS + 1  # the rounds and the group's agreement on the slowest
    again = reduce_of()._timed_cost(nn.Linear(64, 64), members=(0, 2))  # the other play: same group, same bytes
    assert again == first and collective["all_reduce"] == timed, "no second timing"


@pytest.mark.parametrize("members, width", [((1, 3), 64), ((0, 2), 32)])
def test_another_group_or_size_is_timed_on_its_own(collective, members, width):
    reduce_of()._timed_cost(nn.Linear(64, 64), members=(0, 2))
    timed = collective["all_reduce"]
    reduce_of()._timed_cost(nn.Linear(width, width), members=members)
    assert collective["all_reduce"] == 2 * timed


def test_one_replica_reduces_nothing(collective):
    assert reduce_of(replicas=1)._timed_cost(nn.Linear(8, 8), members=(0,)) == 0.0
    assert collective["all_reduce"] == 0
