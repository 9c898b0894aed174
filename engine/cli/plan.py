"""``pipelab plan``: profile the model on this host, then PipeDream's planner (engine/theory/planner.py).

Each layer's forward and backward time (one micro-batch, one thread, as a rank computes), its
output's bytes and its parameters' bytes are profiled here. A layer alone runs faster than
inside the engine, where each action also pays the engine's own time and its saved-tensor
accounting, so one short run of the engine (2 stages, 1F1B) scales the layers' times by what a
stage's forward and backward, and the executor's time after each, really cost there. The link
is measured by the engine too: two runs of one layer on 2 replicas, whose all-reduce costs
(measured at set-up, as a run measures them) give a latency and a bandwidth.
"""

from __future__ import annotations

import argparse
import sys

from pipelab.engine.config import MODELS, ConfigError, RunConfig
from pipelab.engine.errors import Message
from pipelab.engine.schedules.replication import check_replicas, parse_replicas
from pipelab.engine.theory.planner import Link, Plan, data_parallel, plan, replicated_plan, straight_pipeline

LINK_HIDDEN = (64, 1024)
"""Widths of the one-layer models whose all-reduce the link is fitted to: a small message
(mostly latency) and a large one (mostly bandwidth)."""


LINK_LAUNCHES = 3
"""Launches per message size whose fastest all-reduce the link is fitted to."""


def add_plan_args(p: argparse.ArgumentParser) -> None:
    d = RunConfig(model="mlp", layers=16, hidden=512, microbatch_size=64)
    p.add_argument("--workers", type=int, required=True, metavar="N", help="workers (processes) to plan for")
    p.add_argument("--microbatches", type=int, default=8, metavar="B",
                   help="micro-batches per step over all replicas (the global batch)")
    p.add_argument("--model", default=d.model, choices=MODELS)
    p.add_argument("--layers", type=int, default=d.layers)
    p.add_argument("--hidden", type=int, default=d.hidden)
    p.add_argument("--heads", type=int, default=d.heads)
    p.add_argument("--seq-len", type=int, default=d.seq_len)
    p.add_argument("--microbatch-size", type=int, default=d.microbatch_size)
    p.add_argument("--replicas", default=None, metavar="R-R-...",
                   help="also price this configuration (e.g. 2-1-1: stage 0 on 2 workers), its layers cut "
                        "where they are best cut")
    p.add_argument("--bandwidth", type=float, default=None, metavar="BYTES_PER_S",
                   help="the link's bandwidth instead of measuring it here (with --latency)")
    p.add_argument("--latency", type=float, default=0.0, metavar="S", help="the link's per-hop latency, seconds")


def config_of(args) -> RunConfig:
    """The model the plan profiles, checked as a run's would be (one line for a bad value)."""
    for name in ("workers", "microbatches"):
        value = getattr(args, name)
        if value < 1:
            raise ConfigError.of("whole_number", knob=name, got=repr(value))
    config = RunConfig(schedule="gpipe", stages=1, microbatches=1, model=args.model, layers=args.layers,
                       hidden=args.hidden, heads=args.heads, seq_len=args.seq_len,
                       microbatch_size=args.microbatch_size)
    config.check_values()
    most = config.layers * args.microbatches
    if args.workers > most:  # past it the planner's search only grows (minutes at 1024 workers)
        raise ConfigError(Message.plain(f"--workers must be at most layers x micro-batches = {config.layers} x "
                                        f"{args.microbatches} = {most} (a stage holds at least one layer and runs "
                                        f"on at most one worker per micro-batch), got {args.workers}"))
    return config


def profile_layers(config: RunConfig):
    """Each layer's forward+backward seconds, output bytes and parameter bytes, one micro-batch."""
    import torch

    from pipelab.engine.model.partition import profile_layer_times
    from pipelab.engine.model.parts import model_parts
    from pipelab.engine.theory.planner import LayerProfile
    parts = model_parts(config)
    x = parts.batch(0, 0)[0]
    torch.set_num_threads(1)  # as a rank computes (engine/device.py)
    times = profile_layer_times(parts.layers, x)
    profiles = []
    with torch.no_grad():
        for layer, seconds in zip(parts.layers, times):
            x = layer(x)
            params = sum(p.numel() * p.element_size() for p in layer.parameters())
            profiles.append(LayerProfile(seconds, x.numel() * x.element_size(), params))
    return tuple(profiles)


def calibrated(config: RunConfig, layers: tuple, workers: int = 2, microbatches: int = 4) -> tuple:
    """``layers`` with their compute scaled to the engine's: one short 1F1B run of ``workers``
    stages (at most one a layer) and the planned ``microbatches``, so that its processes share the
    host's cores as the planned runs' will; per stage, its measured mean F + B plus the executor's
    time after each, over the profiled sum of its layers, scales that stage's layers."""
    import dataclasses
    import statistics

    from pipelab.engine.runtime.launch import run
    stages = max(1, min(workers, len(layers)))
    result = run(config.with_(schedule="1f1b", stages=stages, microbatches=max(microbatches, stages), steps=4))
    costs = result.metrics.costs_s
    host = {s: statistics.fmean(e.host_after for e in result.timeline.compute_events()
                                if e.stage == s and e.kind in ("F", "B") and e.step >= 2)
            for s in range(stages)}
    # Each stage's own factor for its own layers: a wide layer's larger matrices may run nearer the
    # core's peak than narrow ones, so one factor for the whole model would misprice both.
    factor_of = {}
    for s, (start, stop) in enumerate(result.layer_ranges):
        factor = (costs.forward[s] + costs.backward[s] + 2 * host[s]) / sum(layers[i].compute_s
                                                                          for i in range(start, stop))
        factor_of.update({i: factor for i in range(start, stop)})
    return tuple(dataclasses.replace(layer, compute_s=layer.compute_s * factor_of[i]) for i, layer in enumerate(layers))


def measure_link() -> Link:
    """Two engine runs, one Linear layer on 2 replicas each: t = 2 hops x latency + bytes / bandwidth
    (a ring over 2 sends every byte once), fitted through the two all-reduce costs."""
    from pipelab.engine.runtime.launch import run
    points = []
    for hidden in LINK_HIDDEN:
        # The fastest of a few launches: a busy host only ever slows an all-reduce down.
        results = [run(RunConfig(schedule="gpipe", stages=1, data_parallel=2, microbatches=1, model="mlp", layers=1,
                                 hidden=hidden, microbatch_size=1, steps=1)) for _ in range(LINK_LAUNCHES)]
        nbytes = sum(m.parameter_bytes for m in results[0].memory.values())
        points.append((nbytes, min(r.data_parallel.reduce_cost_s[0] for r in results)))
    (b1, t1), (b2, t2) = points
    per_byte = max((t2 - t1) / (b2 - b1), 1e-15)
    return Link(1.0 / per_byte, max(0.0, (t1 - b1 * per_byte) / 2))


def config_for(plan: Plan, base: RunConfig, schedule: str = "1f1b") -> RunConfig:
    """The run that plays ``plan``: its stages with their layers and workers, its global batch
    (one worker per stage leaves ``replicas`` unset: a straight pipeline)."""
    replicated = any(r > 1 for r in plan.replicas)
    return base.with_(schedule=schedule, stages=len(plan.stages), microbatches=plan.microbatches,
                      replicas=plan.replicas if replicated else None, stage_layers=plan.stage_layers)


def run_flags(config: RunConfig) -> str:
    """The ``pipelab run`` flags of a planned run (config_for): a plan a user can run as printed."""
    flags = f"--schedule {config.schedule} --stages {config.stages} --microbatches {config.microbatches}"
    if config.replicas:
        flags += " --replicas " + ",".join(map(str, config.replicas))
    return flags + " --stage-layers " + ",".join(map(str, config.stage_layers))


def plan_lines(chosen: Plan, straight: Plan | None, replicated: Plan, link: Link, base: RunConfig,
               asked: Plan | None = None) -> list[str]:
    def describe(p: Plan) -> str:
        return (f"{p.config:>9}  step {p.step_s * 1e3:8.1f} ms  {p.throughput:7.1f} micro-batches/s  "
                f"layers per stage {'-'.join(map(str, p.stage_layers))}")
    model = f"--model {base.model} --layers {base.layers} --hidden {base.hidden} --microbatch-size " \
            f"{base.microbatch_size}"
    lines = [f"link: {link.bandwidth_bytes_per_s / 1e9:.2f} GB/s, {link.latency_s * 1e6:.0f} us per hop",
             f"planned  {describe(chosen)}"]
    for s in chosen.stages:
        lines.append(f"  layers {s.first_layer}-{s.last_layer} on {s.replicas} worker(s): compute "
                     f"{s.compute_s * 1e3:.2f} ms per micro-batch, all-reduce {s.sync_s * 1e3:.2f} ms per step")
    lines.append(f"  run it: pipelab run {run_flags(config_for(chosen, base))} {model}")
    for label, other in (("asked", asked), ("straight", straight), ("data par", replicated)):
        if other is not None:
            lines.append(f"{label:<8} {describe(other)}")
    return lines


def asked_replicas(args, config: RunConfig) -> tuple[int, ...] | None:
    """``--replicas`` as workers per stage, checked (one line for a bad value); None where not asked."""
    if args.replicas is None:
        return None
    replicas = parse_replicas(args.replicas) or ()
    check_replicas(replicas, len(replicas))
    have = config.model_layer_count()
    if len(replicas) > have:
        raise ConfigError.of("layers", stages=len(replicas), p=len(replicas), v=1, model=config.model, have=have)
    return replicas


def cmd_plan(args) -> int:
    # Every value is checked before the profile, which launches the engine for seconds.
    config = config_of(args)
    if args.bandwidth is not None and not args.bandwidth > 0:
        raise ConfigError(Message.plain(f"--bandwidth must be > 0 bytes per second, got {args.bandwidth}"))
    if not args.latency >= 0:
        raise ConfigError(Message.plain(f"--latency must be >= 0 seconds, got {args.latency}"))
    if args.latency and args.bandwidth is None:  # it would be dropped for the measured link's
        raise ConfigError(Message.plain("--latency needs --bandwidth: without it the link is measured here"))
    replicas = asked_replicas(args, config)
    layers = calibrated(config, profile_layers(config), args.workers, args.microbatches)
    link = Link(args.bandwidth, args.latency) if args.bandwidth is not None else measure_link()
    chosen = plan(layers, args.workers, args.microbatches, link)
    straight = (straight_pipeline(layers, args.workers, args.microbatches, link)
                if args.workers <= len(layers) else None)
    asked = None if replicas is None else replicated_plan(layers, replicas, args.microbatches, link)
    print(f"{config.model}: {len(layers)} layers, micro-batch {config.microbatch_size}, global batch "
          f"{args.microbatches} micro-batches, {args.workers} workers (PipeDream's planner, arXiv 1806.03377, 3.1)")
    print("\n".join(plan_lines(chosen, straight, data_parallel(layers, args.workers, args.microbatches, link), link,
                               config, asked)))
    sys.stdout.flush()
    return 0
