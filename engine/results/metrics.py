"""The numbers a finished run reports (RunResult.metrics), and those ``pipelab
simulate`` reports (SimulatedMetrics), typed.

Each field keeps the name it has in the result JSON's "metrics" object (docs/results.md
lists them with their units and clocks). Fields with a default were added after the first
results were saved: a result saved before reads them back as None.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from pipelab.engine.results.records import Placement
from pipelab.engine.results.schema import load_record, record_dict, seq, seqs


@dataclass(frozen=True)
class StageCosts:
    """Mean device-clock seconds of each action kind, per stage, over the measured steps."""
    forward: tuple[float, ...]
    backward: tuple[float, ...]
    backward_input: tuple[float, ...]
    backward_weight: tuple[float, ...]

    def mean_f_i_w(self) -> tuple[float, float, float]:
        """Mean T_F, T_I, T_W over stages: what the closed forms take (engine/theory/formulas.py)."""
        return (statistics.fmean(self.forward), statistics.fmean(self.backward_input),
                statistics.fmean(self.backward_weight))

    def to_dict(self) -> dict:
        return record_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> StageCosts:
        return load_record(cls, data, dict.fromkeys(("forward", "backward", "backward_input", "backward_weight"),
                                                    seq), "costs_s")


@dataclass(frozen=True)
class BreakdownEntry:
    """One simulated row of the bubble breakdown (engine/theory/breakdown.py): what it adds, and
    the simulated bubble with it."""
    label: str
    bubble: float

    def to_dict(self) -> dict:
        return record_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> BreakdownEntry:
        return load_record(cls, data, {}, "bubble_breakdown")


@dataclass(frozen=True)
class StepCheckCounts:
    """The step check's verdicts (engine/runtime/post_validation.py), as step numbers."""
    clipped: tuple[int, ...]
    skipped: tuple[int, ...]
    replayed: tuple[int, ...] = ()

    def to_dict(self) -> dict:
        return record_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> StepCheckCounts:
        return load_record(cls, data, dict.fromkeys(("clipped", "skipped", "replayed"), seq), "step_check")


@dataclass(frozen=True, kw_only=True)
class RunMetrics:
    """Measured (device and wall clock), simulated and formula figures side by side.
    Fractions are of a step's time; seconds are per step unless named otherwise."""
    device_bubble_fraction: float
    """Device clock: mean over devices of each device's median idle share of a measured step."""
    device_bubble_fraction_per_device: tuple[float, ...]
    wall_bubble_fraction: float
    """The same on the wall clock."""
    wall_bubble_fraction_per_device: tuple[float, ...]
    simulated_bubble_fraction: float
    """The simulator fed this run's per-stage mean costs, link cost and host time."""
    simulated_bubble_fraction_per_device: tuple[float, ...]
    simulated_bubble_fraction_per_action_costs: float | None = None
    """The simulator with each action's own mean cost."""
    simulated_bubble_fraction_per_step_costs: float | None = None
    """Each measured step played with its own costs: the device clock's own model."""
    formula_bubble_fraction: float | None
    """The closed form (engine/theory/formulas.py) at this run's mean T_F, T_I, T_W; None for a
    schedule without one."""
    simulated_barrier_bubble_fraction: float | None = None
    """Overlapping steps only: the simulator playing one step with a barrier around it, fed
    this run's own costs (as simulated_bubble_fraction): what a barrier costs at them."""
    bubble_breakdown: tuple[BreakdownEntry, ...] | None = None
    device_steady_bubble_fraction: float
    """Device clock, idle share inside each device's own span (first to last action)."""
    overlapped_steps: bool | None = None
    device_step_starts_per_device: tuple[tuple[float | None, ...], ...] | None = None
    """Per device, per step: where it turned to the step, device clock (None: never)."""
    wall_step_time_s: float
    """Wall clock, median over the measured steps."""
    device_step_time_s: float
    simulated_step_time_s: float
    simulated_step_time_per_action_costs_s: float | None = None
    wall_step_times_s: tuple[float, ...]
    costs_s: StageCosts
    link_cost_s: float
    """One-way message latency, measured once per run by ping-pong (wall clock)."""
    messages_per_step: float
    cpu_per_step_s: float | None = None
    """Host CPU of all ranks' processes per step, median over the measured steps."""
    cpu_times_s: tuple[float, ...] | None = None
    peak_inflight_per_device: tuple[int, ...]
    peak_held_microbatches_per_device: tuple[float, ...] | None = None
    """Held from F until the backward is complete, in full stages (a chunk is 1/v)."""
    simulated_peak_activation_bytes_per_device: tuple[int, ...] | None = None
    theory_peak_inflight_per_device: tuple[int, ...] | None
    run_seconds: float
    """The whole run, start of the ranks to the gathered result, wall clock."""
    node: str | None = None
    """Where it ran when a Ray cluster ran it (app/runner/cluster.py): the machine's name and
    its Ray node; None on the server's own cores."""
    node_cores: int | None = None
    """That node's CPUs as Ray counts them (its usable cores); None on the server's own."""
    step_check: StepCheckCounts | None = None
    """Only with RunConfig.clip_grad_norm; absent from the JSON otherwise."""
    device_step_times_s: tuple[float, ...] | None = None
    """Device clock, each measured step's time, in order (device_step_time_s is their median)."""
    device_bubble_fraction_per_step: tuple[tuple[float, ...], ...] | None = None
    """Device clock, per measured step, each device's idle share of that step."""
    device_steady_bubble_fraction_per_step: tuple[float, ...] | None = None
    """Device clock, per measured step, the idle share inside each device's span, mean over devices."""
    launch_id: str | None = None
    """Shared by the runs of one launch whose steps took turns (engine/runtime/alternating.py):
    their measured step k ran within one round, so ratios pair them step by step."""
    placement: Placement | None = None
    """Where the rank processes ran: each on a core of its own, or left to the OS and why
    (engine/runtime/placement.py); None in a result saved before runs recorded it."""

    def to_dict(self) -> dict:
        data = record_dict(self)
        if self.step_check is None:
            del data["step_check"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> RunMetrics:
        return load_record(cls, data, _LOADERS, "metrics")


@dataclass(frozen=True, kw_only=True)
class SimulatedMetrics:
    """A schedule played on a cost model (``pipelab simulate``): the "metrics" object
    of its --out JSON, named as RunMetrics names a measured run's figures where it has them.
    Fractions are of a step's time; with overlapping steps, of each device's window in the
    steady steps (pipelab.engine.results.timeline.steady_steps)."""
    bubble_fraction: float
    """Mean over devices of bubble_fraction_per_device."""
    bubble_fraction_per_device: tuple[float, ...]
    """Per device: idle share of the step, from the first action on any device to the last."""
    steady_bubble_fraction: float
    """Mean over devices of the idle share inside each device's own span (first to last action);
    with overlapping steps, bubble_fraction."""
    formula_bubble_fraction: float | None
    """The closed form (engine/theory/formulas.py) at the given costs; None for a schedule without one."""
    overlapped_steps: bool
    """The steps played as one stream, without a flush or barrier between them."""
    steps: int
    step_time_s: float
    """Cost-model seconds."""
    peak_inflight_per_device: tuple[int, ...]
    """Most stage-micro-batches whose activations are alive at once."""
    peak_held_microbatches_per_device: tuple[float, ...]
    """Held from F until the backward is complete, in full stages (a chunk is 1/v)."""
    weight_versions_per_device: tuple[int, ...]
    """Most weight versions alive at once (PipeDream's stash, arXiv 1806.03377)."""
    messages: int
    """Sent between devices in one step: an activation and a gradient per micro-batch at each
    stage boundary that crosses devices."""

    def to_dict(self) -> dict:
        return record_dict(self)


_LOADERS = {
    **dict.fromkeys(("device_bubble_fraction_per_device", "wall_bubble_fraction_per_device",
                     "simulated_bubble_fraction_per_device", "wall_step_times_s", "cpu_times_s",
                     "peak_inflight_per_device", "peak_held_microbatches_per_device",
                     "simulated_peak_activation_bytes_per_device", "theory_peak_inflight_per_device",
                     "device_step_times_s", "device_steady_bubble_fraction_per_step"), seq),
    "device_step_starts_per_device": seqs,
    "device_bubble_fraction_per_step": seqs,
    "bubble_breakdown": lambda rows: tuple(BreakdownEntry.from_dict(row) for row in rows),
    "costs_s": StageCosts.from_dict,
    "step_check": StepCheckCounts.from_dict,
    "placement": Placement.from_dict,
}
