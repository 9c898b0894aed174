"""engine/runtime/executor.py: what the executor does between actions, apart from a run."""

from types import SimpleNamespace

import pytest

from pipelab.engine.runtime import executor
from pipelab.engine.runtime.executor import PROGRESS_EVERY_S, Executor


def test_progress_goes_to_the_launcher_at_most_every_interval_and_at_a_steps_last_action(monkeypatch):
    # A write after every action was the executor's own time on the device clock; the
    # launcher reads the board only every 0.1 s. "Now" is the latest event's wall-clock end.
    monkeypatch.setattr(executor, "wall_now", lambda: pytest.fail("the report reads no clock of its own"))
    reports = []
    rank = SimpleNamespace(progress=lambda step, done, total: reports.append((rank._last_wall, done)),
                           _next_report=0.0, _last_wall=100.0)
    actions = 40
    for done in range(1, actions + 1):
        Executor._report(rank, 0, done, actions)
        rank._last_wall += PROGRESS_EVERY_S / 7
    done_reported = [done for _, done in reports]
    assert done_reported[0] == 1 and done_reported[-1] == actions
    assert len(reports) < actions / 5
    gaps = [b[0] - a[0] for a, b in zip(reports[:-2], reports[1:-1])]
    assert all(gap >= PROGRESS_EVERY_S - 1e-12 for gap in gaps)


def test_a_rank_without_a_launcher_reports_nothing(monkeypatch):
    # A rank run alone has no board to write to: no report, not even a clock read per action.
    reads = []
    monkeypatch.setattr(executor, "wall_now", lambda: reads.append(1) or 0.0)
    rank = SimpleNamespace(progress=None, _next_report=0.0)
    for done in range(1, 4):
        Executor._report(rank, 0, done, 3)  # done == total at the last: reported, had it a launcher
    assert reads == [] and rank._next_report == 0.0
