"""Typed results for the tests' small fakes: every required field filled, then the ones a
test is about."""

from __future__ import annotations

from pipelab.engine.results.metrics import BreakdownEntry, RunMetrics, StageCosts
from pipelab.engine.results.records import RankMemory


def fake_metrics(p: int = 1, breakdown=None, **values) -> RunMetrics:
    """RunMetrics of a ``p``-device run, all zeros except ``values``; ``breakdown``: the
    simulated rows as (label, bubble) pairs."""
    zeros = (0.0,) * p
    filled = dict(device_bubble_fraction=0.0, device_bubble_fraction_per_device=zeros, wall_bubble_fraction=0.0,
                  wall_bubble_fraction_per_device=zeros, simulated_bubble_fraction=0.0,
                  simulated_bubble_fraction_per_device=zeros, formula_bubble_fraction=None,
                  device_steady_bubble_fraction=0.0, wall_step_time_s=0.0, device_step_time_s=0.0,
                  simulated_step_time_s=0.0,
                  wall_step_times_s=(), costs_s=StageCosts(zeros, zeros, zeros, zeros), link_cost_s=0.0,
                  messages_per_step=0.0, peak_inflight_per_device=(0,) * p, theory_peak_inflight_per_device=None,
                  run_seconds=0.0)
    if breakdown is not None:
        values["bubble_breakdown"] = tuple(BreakdownEntry(label, bubble) for label, bubble in breakdown)
    return RunMetrics(**{**filled, **values})


def fake_memory(**values) -> RankMemory:
    """One device's RankMemory, all zeros except ``values``."""
    filled = dict(peak_activation_bytes=0, parameter_bytes=0, gradient_bytes=0, optimizer_bytes=0, weight_versions=1,
                  theory_weight_versions=None, peak_stashed_weight_bytes=0, activation_timeline=())
    return RankMemory(**{**filled, **values})


def theory_peaks(schedule: str, p: int, m: int, v: int = 1) -> tuple[int, ...] | None:
    """Each device's peak in flight by the schedule's registered theory, as a real run's
    ``theory_peak_inflight_per_device`` carries it (None without a closed form)."""
    from pipelab.engine.theory import formulas
    peaks = tuple(formulas.peak_inflight(schedule, p, m, r, v) for r in range(p))
    return None if None in peaks else peaks
