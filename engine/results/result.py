"""A finished run: the measured timeline and every number the lessons compare.

Measured (device and wall clock), simulated (the simulator fed with this run's measured
mean per-stage costs, never its start times; and once more with each action's own mean cost)
and formula (theory.py) sit side by side.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, UPDATE
from pipelab.engine.config import RunConfig
from pipelab.engine.results.data_parallel import DataParallelFigures, median_exposed
from pipelab.engine.results.metrics import BreakdownEntry, RunMetrics, StageCosts, StepCheckCounts
from pipelab.engine.results.rank_record import RankPayload
from pipelab.engine.results.records import GradientCheck, Placement, RankMemory
from pipelab.engine.results.schema import (
    SCHEMA_VERSION,
    check_version,
    plain,
    seqs,
    upgraded_metrics,
    version_of,
)
from pipelab.engine.results.timeline import Event, Timeline
from pipelab.engine.results.windows import StepWindows, overlapped_step_times
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.replication import describe_replicas
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.breakdown import Overlapped, bubble_breakdown
from pipelab.engine.theory.simulate import CostModel, simulate
from pipelab.engine.theory.validate import schedule_to_text


@dataclass
class RunResult:
    """A finished run; ``to_dict`` is the result JSON (docs/results.md)."""
    config: RunConfig
    schedule: Schedule
    timeline: Timeline
    """Measured, on the device clock; each event also carries its wall-clock times."""
    simulated: Timeline
    """The simulator's timeline for this run's measured costs."""
    metrics: RunMetrics
    memory: dict[int, RankMemory]
    losses: list[float]
    check: GradientCheck | None = None
    layer_ranges: tuple[tuple[int, int], ...] | None = None
    """Per stage, its layers as (start, stop); None in a result saved before runs reported it."""
    device: str | None = None
    transport: str | None = None
    microbatch_losses: tuple[tuple[float, ...], ...] | None = None
    """Per step, each micro-batch's loss on the last stage."""
    data_parallel: DataParallelFigures | None = None
    """With data parallelism (R actions): the layout, every process's events and each stage's
    all-reduce, measured and simulated. Every other figure is replica 0's pipeline."""

    def all_processes_timeline(self) -> Timeline:
        """The measured timeline with every process's row: d x p with data parallelism (rank =
        process, RankLayout), else the pipeline's own."""
        if self.data_parallel is None:
            return self.timeline
        return self.data_parallel.timeline(self.schedule.num_microbatches, self.schedule.stage_to_rank)

    def measured_steps(self) -> list[int]:
        """The steps its figures cover (engine/results/windows.py)."""
        return list(StepWindows.of_run(self.config.steps, self.config.overlapping(self.schedule)).steps)

    def at_step(self, index: int) -> RunResult:
        """This run as its ``index``-th measured step alone: that step's device-clock time and
        bubbles in place of the medians over the steps, everything else as measured over all
        of them. What a comparison of runs that took turns in one launch pairs step by step
        (engine/runtime/paired.py, paired_values)."""
        m = self.metrics
        bubbles = m.device_bubble_fraction_per_step[index]
        return dataclasses.replace(self, metrics=dataclasses.replace(
            m, device_step_time_s=m.device_step_times_s[index], device_bubble_fraction_per_device=tuple(bubbles),
            device_bubble_fraction=statistics.fmean(bubbles),
            device_steady_bubble_fraction=m.device_steady_bubble_fraction_per_step[index]))

    def to_dict(self) -> dict:
        data = {"schema_version": SCHEMA_VERSION, "config": self.config.to_dict(),
                "schedule": schedule_to_text(self.schedule), "stage_to_rank": list(self.schedule.stage_to_rank),
                "stage_replicas": list(self.schedule.stage_replicas),
                "replicas_run_own_programs": self.schedule.replicas_run_own_programs,
                "events": [dict(vars(e)) for e in self.timeline.events],
                "simulated_events": [dict(vars(e)) for e in self.simulated.events],
                "metrics": self.metrics.to_dict(), "memory": {str(r): m.to_dict() for r, m in self.memory.items()},
                "losses": list(self.losses), "layer_ranges": plain(self.layer_ranges), "device": self.device,
                "transport": self.transport, "microbatch_losses": plain(self.microbatch_losses)}
        if self.check is not None:
            data["check"] = self.check.to_dict()
            data["grad_max_rel_diff"] = self.check.grad_max_rel_diff
        data["data_parallel"] = None if self.data_parallel is None else self.data_parallel.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> RunResult:
        """The run ``to_dict`` wrote (e.g. a stored run), or one saved before results had a
        schema_version: every view of a finished run reads back the same. The schedule comes
        back from its action text, under the config's name. Raises ResultSchemaError (one
        line) for a result of a newer schema."""
        from pipelab.engine.theory.validate import parse_schedule
        check_version(data)
        config = RunConfig(**data["config"])
        stage_to_rank = tuple(data["stage_to_rank"])
        schedule = parse_schedule(data["schedule"], num_microbatches=config.microbatches,
                                  stage_to_rank=stage_to_rank, name=config.schedule,
                                  stage_replicas=tuple(data.get("stage_replicas", ())))
        schedule = dataclasses.replace(schedule, replicas_run_own_programs=data.get("replicas_run_own_programs", False))
        memory = {int(r): RankMemory.from_dict(m) for r, m in data["memory"].items()}
        timeline = Timeline(schedule.num_ranks, [Event(**e) for e in data["events"]], "device",
                            schedule.num_microbatches, stage_to_rank,
                            {r: list(m.activation_timeline) for r, m in memory.items()})
        simulated = Timeline(schedule.num_ranks, [Event(**e) for e in data["simulated_events"]], "simulated",
                             schedule.num_microbatches, stage_to_rank)
        check = data.get("check")
        ranges, losses = data.get("layer_ranges"), data.get("microbatch_losses")
        metrics = RunMetrics.from_dict(upgraded_metrics(data["metrics"], version_of(data)))
        data_parallel = data.get("data_parallel")
        return cls(config, schedule, timeline, simulated, metrics, memory,
                   list(data["losses"]), None if check is None else GradientCheck.from_dict(check),
                   None if ranges is None else seqs(ranges), data.get("device"), data.get("transport"),
                   None if losses is None else seqs(losses),
                   None if data_parallel is None else DataParallelFigures.from_dict(data_parallel))

    def write_json(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f)


def schedule_only(timeline: Timeline, schedule: Schedule, overlapped: bool = False) -> Timeline:
    """Drop the post-flush optimizer step of synchronous schedules (StepWindows.window)."""
    return StepWindows(overlapped, ()).window(timeline, schedule)


def measured_costs(timeline: Timeline, window: Timeline, schedule: Schedule, link: float, steps: list[int],
                   records: list, reduce: tuple[float, ...] = ()) -> CostModel:
    """Mean device-clock duration of each kind of action, per stage, over the measured steps,
    the executor's own time after an action (Event.host_after) per stage within ``window``
    (``schedule_only(timeline, schedule)``), the activation sizes the ranks measured
    (``records``: their RankRecords), and each stage's all-reduce cost (``reduce``, measured
    at set-up; none without data parallelism)."""
    means = _mean_durations(timeline, steps, lambda e: (e.kind, e.stage))
    hosts = _mean_durations(window, steps, lambda e: e.stage, value=lambda e: e.host_after)

    def mean(kind, s):
        return means.get((kind, s))

    S = schedule.num_stages
    f = tuple(mean(FORWARD, s) or 0.0 for s in range(S))
    b, i, w = [], [], []
    for s in range(S):
        tb, ti, tw = mean(BACKWARD, s), mean(BACKWARD_INPUT, s), mean(BACKWARD_WEIGHT, s)
        if tb is None:
            tb = (ti or 0.0) + (tw or 0.0)
        b.append(tb)
        i.append(ti if ti is not None else tb / 2)
        w.append(tw if tw is not None else tb / 2)
    u = tuple(mean(UPDATE, s) or 0.0 for s in range(S))
    return CostModel(forward=f, backward=tuple(b), backward_input=tuple(i), backward_weight=tuple(w),
                     update=u, link=link, host_after=tuple(hosts.get(s, 0.0) for s in range(S)),
                     reduce=tuple(reduce) if reduce else 0.0,
                     activation_bytes=_per_stage_sizes(records, "activation_bytes", S),
                     weight_grad_bytes=_per_stage_sizes(records, "weight_grad_bytes", S))


def mean_action_costs(window: Timeline, steps: list[int]) -> dict[tuple[str, int, int], float]:
    """Mean device-clock duration of each action (kind, stage, micro-batch) over the measured
    steps: per-stage means plus where in the step an action runs. The optimizer step of a
    synchronous schedule is left out, as the bubble leaves it out: ``window`` is
    ``schedule_only(timeline, schedule)``."""
    return _mean_durations(window, steps, _action_key)


def mean_action_host(window: Timeline, steps: list[int]) -> dict[tuple[str, int, int], float]:
    """Mean Event.host_after of each action over the measured steps, keyed as mean_action_costs."""
    return _mean_durations(window, steps, _action_key, value=lambda e: e.host_after)


def _action_key(e: Event) -> tuple[str, int, int]:
    return e.kind, e.stage, e.microbatch


def _mean_durations(timeline: Timeline, steps: list[int], key, value=lambda e: e.duration) -> dict:
    """Mean device-clock duration (or other ``value``) of the measured steps' compute actions,
    grouped by ``key``."""
    values: dict = {}
    steps = set(steps)
    for e in timeline.compute_events():
        if e.step in steps:
            values.setdefault(key(e), []).append(value(e))
    return {k: statistics.fmean(v) for k, v in values.items()}


def _per_stage_sizes(records, name: str, num_stages: int) -> tuple[int, ...]:
    """A size each rank measured for its own stages, as one tuple over all stages."""
    sizes = {s: b for r in records for s, b in getattr(r, name).items()}
    return tuple(sizes.get(s, 0) for s in range(num_stages))


def per_step_action_costs(window: Timeline) -> tuple[dict, dict]:
    """Every compute action's device-clock duration and host time, keyed (kind, stage,
    micro-batch, step): an overlapped run's steps played with their own costs, together."""
    costs, hosts = {}, {}
    for e in window.compute_events():
        costs[(e.kind, e.stage, e.microbatch, e.step)] = e.duration
        hosts[(e.kind, e.stage, e.microbatch, e.step)] = e.host_after
    return costs, hosts


def peaks_per_step(samples: list[tuple[float, int]], windows: list[tuple[float, float]]) -> list[int]:
    """Most live activation bytes within each of a device's step windows (Timeline.step_windows):
    a run whose memory grows from step to step shows it here."""
    peaks = [0] * len(windows)
    for t, live in samples:
        for k, (start, end) in enumerate(windows):
            if start <= t <= end:
                peaks[k] = max(peaks[k], live)
    return peaks


def build_result(config: RunConfig, schedule: Schedule, payload: RankPayload, wall_seconds: float,
                 launch_id: str | None = None, placement: Placement | None = None) -> RunResult:
    """The RunResult of a finished run from its ranks' records; ``launch_id`` names the launch
    it shared with other schedules, steps in turn (engine/runtime/alternating.py); ``placement``
    says where its processes ran (engine/runtime/placement.py)."""
    if placement is not None and all(r.cpus is not None for r in payload.records):
        # What each process's OS held it to, beside the plan (replica k's rank r is process k * p + r).
        ordered = sorted(payload.records, key=lambda r: (r.replica, r.rank))
        placement = dataclasses.replace(placement, ran_on=tuple(r.cpus for r in ordered))
    # With data parallelism every pipeline figure is replica 0's; data_parallel_figures keeps the rest.
    records = [r for r in payload.records if r.replica == 0]
    events = sorted((e for r in records for e in r.events), key=lambda e: (e.step, e.start, e.rank))
    p = schedule.num_ranks
    timeline = Timeline(p, events, "device", schedule.num_microbatches, schedule.stage_to_rank,
                        {r.rank: r.memory for r in records})
    overlap = config.overlapping(schedule)
    windows = StepWindows.of_run(config.steps, overlap)
    window = windows.window(timeline, schedule)
    steps = list(windows.steps)
    cost = measured_costs(timeline, window, schedule, payload.link_cost_s, steps, records, payload.reduce_cost_s)
    # Medians over the windowed steps, per device (docs/measuring.md): one step the host disturbed
    # does not move a figure; the wall clock is exposed to that, the device clock much less.
    each_step = None if overlap else windows.split(window)  # the device clock's steps, cut once
    device, wall = windows.figures(window, each_step), windows.figures(window.on_wall_clock())
    if overlap:
        # One stream: the simulator plays the stream, each step with its own costs in the last row.
        breakdown = bubble_breakdown(schedule, cost, mean_action_costs(window, steps), mean_action_host(window, steps),
                                     overlapped=Overlapped(config.steps, tuple(steps)),
                                     per_step_stream=per_step_action_costs(window))
    else:
        # From the formula's setting to this run's costs, one measured effect at a time; the
        # last row plays each measured step with its own costs, as the device clock did.
        per_step = [(mean_action_costs(one, [k]), mean_action_host(one, [k]))
                    for k, one in zip(steps, each_step)]
        breakdown = bubble_breakdown(schedule, cost, mean_action_costs(window, steps), mean_action_host(window, steps),
                                     per_step)
    (simulated,), (by_action,) = breakdown.host_time.timelines, breakdown.action_costs.timelines
    stages = range(schedule.num_stages)
    t_f = statistics.fmean(cost.of(FORWARD, s) for s in stages)
    t_i = statistics.fmean(cost.of(BACKWARD_INPUT, s) for s in stages)
    t_w = statistics.fmean(cost.of(BACKWARD_WEIGHT, s) for s in stages)
    # None where the papers give no closed form (a custom schedule, replicated stages)
    formula = None if schedule.is_replicated else theory.formula_bubble_fraction(
        schedule.name, p, schedule.num_microbatches, schedule.chunks, t_f, t_i, t_w, overlapped=overlap)
    first_step = timeline.of_step(steps[0])
    cpu_times = [sum(r.cpu_seconds[k] for r in records) for k in steps]
    step_check = None
    if config.clip_grad_norm is not None:  # every rank took the same verdicts; rank 0's say it
        step_check = StepCheckCounts(tuple(records[0].steps_clipped), tuple(records[0].steps_skipped),
                                     tuple(records[0].steps_replayed))
    metrics = RunMetrics(
        device_bubble_fraction=device.bubble,
        device_bubble_fraction_per_device=device.bubble_per_device,
        wall_bubble_fraction=wall.bubble,
        wall_bubble_fraction_per_device=wall.bubble_per_device,
        simulated_bubble_fraction=breakdown.host_time.bubble,
        simulated_bubble_fraction_per_device=tuple(simulated.steady_bubble_fractions(steps) if overlap
                                                   else simulated.bubble_fractions()),
        # The same simulator with each action's own mean cost (bench/run.py, section 2).
        simulated_bubble_fraction_per_action_costs=breakdown.action_costs.bubble,
        # Each measured step played with its own costs: the device clock's model, so equal to
        # bubble_fraction unless a rank waited outside its schedule (bench/run.py, section 2).
        simulated_bubble_fraction_per_step_costs=breakdown.step_costs.bubble,
        formula_bubble_fraction=formula,
        # What a barrier between steps would cost at this run's own costs: the fair yardstick
        # for an overlapped run (a formula leaves out the engine's time and unequal stages).
        simulated_barrier_bubble_fraction=simulate(schedule, cost).bubble_fraction() if overlap else None,
        bubble_breakdown=tuple(BreakdownEntry(row.label, row.bubble) for row in breakdown.rows),
        device_steady_bubble_fraction=device.steady,
        # Whether the steps overlapped (no barrier between them) and, per device, where it
        # turned to each step on the device clock: a chart's step boundaries.
        overlapped_steps=overlap,
        device_step_starts_per_device=tuple(tuple(starts.get(k) for k in range(config.steps))
                                     for starts in timeline.step_starts()),
        wall_step_time_s=wall.step_time,
        device_step_time_s=device.step_time,
        simulated_step_time_s=(statistics.median(overlapped_step_times(simulated, steps)) if overlap
                               else simulated.step_time()),
        simulated_step_time_per_action_costs_s=(statistics.median(overlapped_step_times(by_action, steps))
                                                if overlap else by_action.step_time()),
        wall_step_times_s=wall.step_times,
        costs_s=StageCosts(cost.forward, cost.backward, cost.backward_input, cost.backward_weight),
        link_cost_s=payload.link_cost_s,
        messages_per_step=sum(r.messages_sent for r in records) / config.steps,
        # Host CPU of all ranks' processes per step: on shared cores, what the wall clock pays for.
        cpu_per_step_s=statistics.median(cpu_times),
        cpu_times_s=tuple(cpu_times),
        peak_inflight_per_device=tuple(first_step.peak_inflight()),
        # Held from F until the backward is complete (B, or W), in full stages (a chunk is
        # 1/v), along the order the devices ran their actions in the first measured step.
        peak_held_microbatches_per_device=tuple(first_step.peak_activations()),
        # The simulator's memory for this run's measured per-micro-batch sizes.
        simulated_peak_activation_bytes_per_device=tuple(max(b for _, b in simulated.memory[r]) for r in range(p)),
        theory_peak_inflight_per_device=_theory_peaks(schedule),
        run_seconds=wall_seconds,
        step_check=step_check,
        device_step_times_s=device.step_times,
        device_bubble_fraction_per_step=device.bubbles_per_step,
        device_steady_bubble_fraction_per_step=device.steady_per_step,
        launch_id=launch_id,
        placement=placement,
    )
    spans = timeline.step_windows(list(range(config.steps)))  # per device, each step's (start, end)
    memory = {r.rank: RankMemory(peak_activation_bytes=r.peak_activation_bytes, parameter_bytes=r.parameter_bytes,
                                 peak_activation_bytes_per_step=tuple(peaks_per_step(r.memory, spans[r.rank])),
                                 gradient_bytes=r.gradient_bytes, optimizer_bytes=r.optimizer_bytes,
                                 weight_versions=r.weight_versions,
                                 theory_weight_versions=None if schedule.is_replicated
                                 else theory.weight_versions(schedule.name, p, r.rank),
                                 peak_stashed_weight_bytes=r.peak_stashed_bytes, cuda_peak_bytes=r.cuda_peak_bytes,
                                 cuda_breakdown=r.cuda_breakdown,
                                 message_buffer_bytes=r.message_buffer_bytes,
                                 activation_timeline=tuple(r.memory))
              for r in records}
    losses, microbatch_losses = last_stage_losses(schedule, records)
    check = GradientCheck.of_ranks([r.grads for r in payload.records]) if config.check else None
    data_parallel = None
    if schedule.reduces_gradients:
        data_parallel = data_parallel_figures(config, schedule, payload, windows, simulated, metrics.device_step_time_s)
    return RunResult(config, schedule, timeline, simulated, metrics, memory, losses, check,
                     payload.ranges, payload.device, payload.transport, microbatch_losses, data_parallel)


def last_stage_losses(schedule: Schedule, records) -> tuple[list[float], tuple[tuple[float, ...], ...]]:
    """Each step's loss and its micro-batches' losses in micro-batch order, from the last stage's
    rank, or from every worker of a replicated last stage (micro-batch j on the worker
    Schedule.rank_of names, the (j // replicas)-th it ran)."""
    last = schedule.num_stages - 1
    workers = {r.rank: r for r in records if r.rank in schedule.workers_of(last)}
    count = len(schedule.workers_of(last))
    steps = min(len(r.microbatch_losses) for r in workers.values())
    per_step = tuple(tuple(workers[schedule.rank_of(last, j)].microbatch_losses[k][j // count]
                           for j in range(schedule.num_microbatches)) for k in range(steps))
    if count == 1:  # the rank's own record, as it kept it
        (only,) = workers.values()
        return list(only.losses), tuple(tuple(step) for step in only.microbatch_losses)
    return [sum(step) / len(step) for step in per_step], per_step


def data_parallel_figures(config: RunConfig, schedule: Schedule, payload: RankPayload, windows: StepWindows,
                          simulated: Timeline, step_time: float) -> DataParallelFigures:
    """The layout, every process's events and each stage's exposed all-reduce: measured on
    both clocks (every process, median over the measured steps) and simulated at the run's costs."""
    layout = config.layout
    S = schedule.num_stages
    everyone = tuple(dataclasses.replace(e, rank=layout.process(r.replica, e.rank),
                                         peer=None if e.peer is None else layout.process(r.replica, e.peer))
                     for r in payload.records for e in r.events)
    events = tuple(sorted(everyone, key=lambda e: (e.step, e.start, e.rank)))
    # Measured over every process: an all-reduce waits for its slowest replica, and the step's
    # compute ends with the last replica's (the simulator plays one replica; they run alike).
    every = windows.window(Timeline(layout.world, list(events), "device", schedule.num_microbatches,
                                    schedule.stage_to_rank), schedule)
    return DataParallelFigures(
        replicas=config.data_parallel, reduce_at=config.reduce_at,
        layout=tuple(describe_replicas(schedule) if schedule.is_replicated else layout.describe()),
        reduce_cost_s=tuple(payload.reduce_cost_s) or (0.0,) * S,
        exposed_reduce_s=median_exposed(windows.split(every), S),
        exposed_reduce_wall_s=median_exposed(windows.split(every.on_wall_clock()), S),
        simulated_exposed_reduce_s=median_exposed([simulated], S),  # the run's simulation, at its own costs
        device_step_time_s=step_time, events=events)


def _theory_peaks(schedule: Schedule) -> tuple[int, ...] | None:
    """Each device's peak in-flight micro-batches by the papers' closed form; None without one."""
    if schedule.is_replicated:  # the closed forms are for one worker per stage
        return None
    peaks = tuple(theory.peak_inflight(schedule.name, schedule.num_ranks, schedule.num_microbatches, r,
                                       schedule.chunks) for r in range(schedule.num_ranks))
    return None if None in peaks else peaks
