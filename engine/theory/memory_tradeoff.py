"""Bubble against activation memory: where each synchronous schedule sits at one p and m.

The controllable-memory sequel (arXiv 2405.15362, section 1) reads the schedules as points on
two axes, the activations the worst device holds and the bubble, and builds V-Min, V-Half and
V-ZB to fill in the curve between them. Here each registered synchronous schedule is one such
point, from theory (the simulator on unit costs, the held-activation count of its order) or
from a finished run (its device-clock bubble and the count along the order its ranks ran).

Units are the lessons' own: activations in stages x micro-batches held from F until the
backward is complete (B, or W after a split one; a chunk counts 1/v); bubble as the mean over
devices of the idle share of one synchronous step. Asynchronous schedules (PipeDream, 2BW)
update inside the step and keep weight versions instead: they are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules import REGISTRY, build_schedule, chunks_for
from pipelab.engine.theory.simulate import UNIT_COSTS, simulate

CHUNKS = 2
"""The v a schedule that takes a chunk count is drawn with (interleaved; a V takes only 2)."""


@dataclass(frozen=True)
class TradeoffPoint:
    """One schedule on the memory / bubble plane."""

    schedule: str
    chunks: int
    """The v it was built with."""
    peak_activations: float
    """The worst device's held activations, stages x micro-batches."""
    bubble_fraction: float
    """Mean over devices of the idle share of one step."""


@dataclass(frozen=True)
class TradeoffTheory:
    """Every synchronous schedule at one p and m, and those that cannot be built there."""

    points: tuple[TradeoffPoint, ...]
    skipped: tuple[str, ...]
    """Names whose builder refused this p and m (e.g. interleaved's m % p == 0)."""


def tradeoff_schedules() -> tuple[str, ...]:
    """The registered synchronous schedules, in list order."""
    return tuple(name for name, info in REGISTRY.items() if info.synchronous)


def theory_points(p: int, m: int) -> TradeoffTheory:
    """Each synchronous schedule simulated on unit costs (T_F = T_I = T_W = 1 per chunk)."""
    points, skipped = [], []
    for name in tradeoff_schedules():
        v = chunks_for(name, CHUNKS)
        try:
            schedule = build_schedule(name, p, m, v)
        except ScheduleError:
            skipped.append(name)
            continue
        timeline = simulate(schedule, UNIT_COSTS)
        points.append(TradeoffPoint(name, v, max(timeline.peak_activations()), timeline.bubble_fraction()))
    return TradeoffTheory(tuple(points), tuple(skipped))


def measured_point(result) -> TradeoffPoint:
    """A finished run (pipelab.engine.results.result.RunResult) as a point: the device-clock bubble and the
    held activations counted along the order its ranks ran."""
    metrics = result.metrics
    return TradeoffPoint(result.schedule.name, result.schedule.chunks, max(metrics.peak_held_microbatches_per_device),
                         metrics.device_bubble_fraction)


def frontier(points: tuple[TradeoffPoint, ...] | list[TradeoffPoint]) -> tuple[TradeoffPoint, ...]:
    """The points no other beats on both axes (less or equal memory and bubble, one strictly
    less), by memory: the trade-off curve a student can choose along."""
    def beaten(a: TradeoffPoint) -> bool:
        return any(b.peak_activations <= a.peak_activations and b.bubble_fraction <= a.bubble_fraction
                   and (b.peak_activations, b.bubble_fraction) != (a.peak_activations, a.bubble_fraction)
                   for b in points)
    return tuple(sorted((a for a in points if not beaten(a)), key=lambda a: (a.peak_activations, a.bubble_fraction)))
