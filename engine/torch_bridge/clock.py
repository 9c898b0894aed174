"""The device clock of a run on torch's runtime, rebuilt from what each rank measured.

Our executor keeps the device clock as it runs: every message carries its sender's clock
stamp and the receiver moves to max(own clock, stamp + link cost) (docs/design.md, "The two
clocks"). torch's runtime sends bare tensors, so no stamp travels. What each rank can still
measure is every action's own thread CPU time (``time.thread_time``, one torch thread per
rank) and its wall-clock start and end (``time.monotonic``, one clock for the host). The
device clock follows from those durations alone: each step is played along the schedule's
dependencies with each action's own measured cost and the measured link cost, the rule our
executor applies message by message. (Ours matches the simulator fed its measured costs
event by event, tests/test_engine_run.py; here it is that by construction.) The wall clock
is kept as measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.results.timeline import Event
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.theory.simulate import CostModel, simulate


@dataclass(frozen=True)
class MeasuredAction:
    """One action a rank ran inside torch's runtime, as the rank measured it."""
    rank: int
    stage: int
    kind: str
    """F, B, I or W."""
    microbatch: int
    step: int
    cpu_s: float
    """Thread CPU time of the stage's forward_one_chunk, backward_one_chunk or
    backward_weight_one_chunk (and, after the last stage's F, its loss)."""
    wall_start: float
    """CLOCK_MONOTONIC seconds since the run's origin (rank 0's reading, shared by the host)."""
    wall_end: float
    live_bytes: int
    """Activation bytes the rank holds once the action is over (autograd's saved tensors,
    from each F until the backward that completes it: B, or W after I)."""


def device_clock_events(schedule: Schedule, measured: list[MeasuredAction], link_s: float) -> list[Event]:
    """Every measured action as an Event: device-clock start/end from playing each step with
    its own measured costs, steps one after the other (a barrier starts each); wall clock as
    measured."""
    events: list[Event] = []
    offset = 0.0
    for step in sorted({a.step for a in measured}):
        mine = [a for a in measured if a.step == step]
        costs = {(a.kind, a.stage, a.microbatch): a.cpu_s for a in mine}
        played = simulate(schedule, CostModel(per_action=costs, link=link_s))
        at = {(e.kind, e.stage, e.microbatch): e for e in played.compute_events()}
        for a in mine:
            e = at[(a.kind, a.stage, a.microbatch)]
            events.append(Event(a.rank, a.stage, a.kind, a.microbatch, offset + e.start, offset + e.end, step,
                                a.wall_start, a.wall_end))
        offset += played.span()[1]
    return events


def memory_samples(events: list[Event], measured: list[MeasuredAction], rank: int) -> list[tuple[float, int]]:
    """(device-clock time, live activation bytes) after each of the rank's actions."""
    ends = {(e.step, e.kind, e.stage, e.microbatch): e.end for e in events if e.rank == rank}
    samples = [(0.0, 0)]
    samples += sorted((ends[(a.step, a.kind, a.stage, a.microbatch)], a.live_bytes) for a in measured
                      if a.rank == rank)
    return samples
