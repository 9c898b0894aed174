"""engine/runtime/executor.py: what the executor does between actions, apart from a run."""

import time
from dataclasses import fields
from types import SimpleNamespace

import pytest
import torch

from pipelab.engine.device import Device, HostStopwatch
from pipelab.engine.results.timeline import EVENT_ROW, ROW_HOST_AFTER, Event
from pipelab.engine.runtime import executor
from pipelab.engine.runtime.comm import sends_by_channel
from pipelab.engine.runtime.executor import PROGRESS_EVERY_S, Executor
from pipelab.engine.schedules import build_schedule


def test_progress_goes_to_the_launcher_at_most_every_interval_and_once_its_step_is_done(monkeypatch):
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


def test_an_event_is_a_plain_row_while_the_rank_runs_and_one_event_type_after():
    # Building a frozen dataclass after every action was the executor's own time; a row is a
    # list in EVENT_ROW's order, and its host_after is booked once the next action begins.
    rank = SimpleNamespace(events=[], _last_wall=0.0)
    row = Executor._event(rank, 3, 1, "F", 2, 0.5, 0.75, 10.5, 10.75)
    assert rank.events == [row] and rank._last_wall == 10.75
    booked = SimpleNamespace(host=SimpleNamespace(take=lambda: 0.01), _last_action=row, clock=0.75)
    booked._book_host = lambda elapsed: Executor._book_host(booked, elapsed)
    Executor._settle_host(booked)
    assert booked.clock == pytest.approx(0.76)
    assert Event.from_row(0, row, wall_origin=10.0) == Event(0, 1, "F", 2, 0.5, 0.75, 3, 0.5, 0.75, None, 0, 0.01)
    assert {"rank", *EVENT_ROW} == {f.name for f in fields(Event)} and len(EVENT_ROW) == len(fields(Event)) - 1


@pytest.mark.parametrize("name, stages, microbatches", [("1f1b", 2, 4), ("zb-h2", 4, 8), ("interleaved", 2, 4)])
def test_a_planned_action_receives_and_sends_what_its_schedule_says(name, stages, microbatches):
    # Executor._plan resolves keys and peers once per run; they must be the ones the message
    # plan (engine/runtime/comm.py) has every rank send.
    schedule = build_schedule(name, stages, microbatches)
    sent = {(key, src, dst) for (src, dst), sends in sends_by_channel(schedule).items() for key, _ in sends}
    planned_sends, planned_receives = set(), set()
    for rank, program in enumerate(schedule.actions):
        held = {a.stage for a in program}
        plans = Executor._plan(SimpleNamespace(_last_stage=schedule.num_stages - 1, schedule=schedule,
                                               stages={s: f"stage {s}" for s in held},
                                               shape_of=lambda s: (2, 3 + s)), program, None)
        for a, (kind, stage, held_stage, stream_mb, mb_in_step, receive, send) in zip(program, plans):
            assert (kind, stage, held_stage, stream_mb, mb_in_step) == (a.kind, a.stage, f"stage {a.stage}",
                                                                     a.microbatch, a.microbatch)
            if send is not None and send[1] != rank:
                planned_sends.add((send[0], rank, send[1]))
                # its bytes: float32 elements of the input shape of the stage it enters (or leaves back)
                entered = send[0][1] if send[0][0] == "act" else send[0][1] + 1
                assert send[2] == 2 * (3 + entered) * 4
            if receive is not None and receive[1] != rank:
                planned_receives.add((receive[0], receive[1], rank))
                entered = receive[0][1] if receive[0][0] == "act" else receive[0][1] + 1
                assert receive[2] == 2 * (3 + entered) * 4  # the RECV event's bytes, as the sender's
    assert planned_sends == sent == planned_receives


class _Mailbox:
    """One message from rank 0, in already or after a wait; taking it costs ``take_s`` of this
    thread's CPU, as taking a shared-memory message costs the rank's."""

    def __init__(self, waits: bool, take_s: float = 0.003):
        self.asked, self.waits, self.take_s = 0, waits, take_s

    def ready(self, key, src):
        self.asked += 1
        return not self.waits or self.asked > 1

    def take_if_in(self, key, src):
        return self.receive(key, src) if self.ready(key, src) else None

    def receive(self, key, src):
        _spin(self.take_s)
        return torch.zeros(2), 0.0  # stamped at 0 on the device clock: arrived long before the receiver's 1.0


def _spin(seconds: float) -> None:
    """Use ``seconds`` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def _after_an_action():
    """A rank on CPU whose last action (a row) ended at 1.0 s on the device clock, its host
    stopwatch running since."""
    rank = Executor.__new__(Executor)
    rank.rank, rank.link_cost, rank.cuda_memory, rank._deferred, rank.progress = 1, 0.0, None, None, None
    rank.events, rank._last_wall, rank.clock, rank._arrival = [], 0.0, 1.0, None
    rank._targets, rank._losses, rank.loss_scale = {0: None}, {}, 1.0
    rank._deferred, rank._account_later = [], lambda *queued: None  # accounting queued (none yet), as on CPU
    rank._last_action = row = [0, "F", 0, 0.5, 1.0, 0, 0.0, 0.0, None, 0, 0.0]
    rank.host = HostStopwatch(Device("cpu"))
    rank.host.start()
    return rank, row


def _forward_plan() -> tuple:
    """A planned forward of stage 1 (micro-batch 0) that takes its input from rank 0 (8 bytes) and
    sends nothing, whose stage hands its input on."""
    stage = SimpleNamespace(forward=lambda j, x, target, scale: x, versioned=False)
    return "F", 1, stage, 0, 0, (("act", 1, 0), 0, 8), None


@pytest.mark.parametrize("waits, take_counted", [
    (False, True),   # the message was in: taking it is the executor's own time, before the next action
    (True, False),   # the rank waited: the take after the wait is the message's latency
])
def test_taking_a_message_that_is_in_is_host_time_and_a_waited_one_is_latency(waits, take_counted):
    rank, row = _after_an_action()
    rank._act(_forward_plan(), 0, _Mailbox(waits))  # a forward of stage 1 takes it and starts
    assert (row[ROW_HOST_AFTER] >= 0.003) == take_counted
    recv, action = rank.events
    assert action[3] == pytest.approx(1.0 + row[ROW_HOST_AFTER])  # all of it before the max with the arrival (0.0)
    assert recv[1] == "recv" and recv[3] == recv[4] == action[3] and recv[9] == 8  # no device wait; planned bytes


def test_a_message_taken_in_already_moves_the_clock_to_its_arrival_after_the_host_time(monkeypatch):
    # The simulator's order: an action starts at max(previous end + host_after, arrival). The max
    # waits for the action's start (_arrive), so the host time after the take is before it too.
    rank, row = _after_an_action()
    rank.link_cost = 0.25
    taken = []
    mailbox = _Mailbox(waits=False, take_s=0.0)
    mailbox.receive = lambda key, src: taken.append(1) or (torch.zeros(2), 1.5)  # arrives at 1.5 + 0.25

    def wall_now():  # the executor's own work after the take (its RECV row, the way on to the action)
        if taken:
            taken.pop()
            _spin(0.003)
        return 0.0

    monkeypatch.setattr(executor, "wall_now", wall_now)
    rank._act(_forward_plan(), 0, mailbox)
    recv, action = rank.events
    assert row[ROW_HOST_AFTER] >= 0.003  # booked, not lost between the take and the action
    assert recv[3] == pytest.approx(1.0 + row[ROW_HOST_AFTER]) and recv[4] == action[3] == 1.75
    assert rank._arrival is None


def test_what_a_steps_last_actions_queued_is_counted_after_them_in_no_actions_host_time():
    # After its last action of a barrier step a rank only meets the next step's barrier: the queued
    # memory accounting counted there (3 ms of this thread's CPU here) is between two steps, as the
    # garbage collection is, not host_after of the step's last action nor on the device clock.
    rank, row = _after_an_action()
    counted, reports = [], []
    rank.tracker = SimpleNamespace(replay=lambda: counted.append(_spin(0.003)))
    rank.progress = lambda step, done, total: reports.append((step, done, total))
    rank._next_report, rank._step_plan = float("inf"), [None] * 5
    rank._close_step(2)
    assert counted == [None] and reports == [(2, 5, 5)]  # counted, and the step reported done at once
    assert row[ROW_HOST_AFTER] == 0.0 and rank.clock == 1.0
    assert rank.host.since is None  # stopped uncounted: nothing after it is booked to the last action
    rank._settle_host()
    assert row[ROW_HOST_AFTER] == 0.0 and rank.clock == 1.0
