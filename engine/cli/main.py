"""Command line: ``pipelab list | simulate | run | export`` (see --help of each)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from pipelab.engine.actions import ScheduleError


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments end in one line naming the problem and exit code 2, not a usage dump."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def fail(message: str) -> None:
    print(f"pipelab: error: {message}", file=sys.stderr)
    raise SystemExit(2)


SIMULATE_MOST = 250_000
"""Stage-micro-batches ``pipelab simulate`` plays at most (stages x chunks x micro-batches x
steps): the simulator and its text grid are plain Python, 20-75 µs each here (p = m = 500 took
19 s), and a million took 80 s and printed a 66 MB grid (the Zero Bubble paper's largest setup,
p = 32 and m = 256, is 8192)."""


def check_output_paths(args) -> None:
    """--out and --trace must name a file in a folder that exists, checked before anything runs:
    a run that measured for a minute ended on FileNotFoundError as it wrote them."""
    for flag in ("out", "trace"):
        path = getattr(args, flag, None)
        if not path:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            fail(f"--{flag} {path} is a folder: give a file's name")
        if not os.path.isdir(folder):
            fail(f"cannot write --{flag} {path}: there is no folder {folder}")
        if not os.access(folder, os.W_OK):
            fail(f"cannot write --{flag} {path}: the folder {folder} is not writable")


def add_schedule_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schedule", required=True, help="schedule name (see `pipelab list`)")
    p.add_argument("--stages", type=int, required=True, help="pipeline devices p")
    p.add_argument("--microbatches", type=int, required=True, help="micro-batches m per step")
    from pipelab.engine.schedules import chunked_schedules
    p.add_argument("--chunks", type=int, default=None,
                   help=f"model chunks per device v ({', '.join(chunked_schedules())})")
    p.add_argument("--out", help="write the result as JSON here")
    p.add_argument("--trace", help="write a Chrome trace (Perfetto, chrome://tracing) here")


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="pipelab", description="PipeLab pipeline-parallelism engine")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    sub.add_parser("list", help="list the schedules")
    sim = sub.add_parser("simulate", help="theory: play a schedule on a cost model")
    add_schedule_args(sim)
    # None: not given. With no cost given the play is in units of T_F (T_F = T_I = T_W = 1, the
    # papers' figures) and says so; any cost given makes every figure seconds.
    sim.add_argument("--t-forward", type=float, default=None, help="T_F per stage, seconds (default: 1 unit)")
    sim.add_argument("--t-input", type=float, default=None, help="T_I (input-gradient backward), seconds")
    sim.add_argument("--t-weight", type=float, default=None, help="T_W (weight-gradient backward), seconds")
    sim.add_argument("--link", type=float, default=None, help="seconds per message between devices")
    sim.add_argument("--weight-memory", type=float, default=1.0,
                     help="share of a micro-batch's activations W still holds after I, 0 to 1 (what the "
                          "memory limit of zb-1p/zb-2p counts until W; arXiv 2401.10241, Table 1)")
    sim.add_argument("--t-reduce", type=float, default=None, metavar="S",
                     help="data parallelism: each stage's gradient all-reduce (R), seconds; plays R after each "
                          "stage's last backward (or at the flush with --reduce-at flush)")
    sim.add_argument("--reduce-at", default="backward", choices=("backward", "flush"),
                     help="with --t-reduce: after each stage's own last backward, or after every stage's")
    sim.add_argument("--replicas", default=None, metavar="R,R,...",
                     help="PipeDream's replicated stages: one worker count per stage (2,1,1 or 2-1-1); "
                          "micro-batches go round-robin over a stage's workers")
    sim.add_argument("--steps", type=int, default=1, help="training steps to play")
    sim.add_argument("--overlap-steps", action="store_true",
                     help="no flush or barrier between steps (always so for pipedream and 2bw); "
                          "the bubble counts the steady steps")
    run = sub.add_parser("run", help="run the real multi-process engine and measure it")
    add_schedule_args(run)
    from pipelab.engine.config import add_run_args
    add_run_args(run)
    run.add_argument("--runtime", default="engine", choices=("engine", "torch"),
                     help="engine: ours; torch: torch.distributed.pipelining's _PipelineScheduleRuntime running "
                          "the schedule's exported CSV on the same layers")
    from pipelab.engine.cli.export import add_export_args
    add_export_args(sub.add_parser("export", help="write a schedule as torch.distributed.pipelining's CSV"))
    from pipelab.engine.cli.plan import add_plan_args
    add_plan_args(sub.add_parser("plan", help="PipeDream's planner: split and replicate the layers over N workers"))
    args = parser.parse_args(argv)
    check_output_paths(args)
    try:
        if args.command == "list":
            return cmd_list()
        if args.command == "simulate":
            return cmd_simulate(args)
        if args.command == "export":
            from pipelab.engine.cli.export import cmd_export
            return cmd_export(args)
        if args.command == "plan":
            from pipelab.engine.cli.plan import cmd_plan
            return cmd_plan(args)
        from pipelab.engine.cli.run import cmd_run
        return cmd_run(args)
    except (ScheduleError, ValueError) as err:
        fail(str(err).splitlines()[0] if not hasattr(err, "table") else f"{err.rule}")
    return 0


def cmd_list() -> int:
    from pipelab.engine.schedules import REGISTRY
    width = max(map(len, REGISTRY))
    for name, info in REGISTRY.items():
        # The chunk counts --chunks takes, where it is a knob (the registry's chunk rule).
        chunks = f"  (--chunks: {info.chunks.describe()})" if info.chunks.takes_chunks else ""
        print(f"{name:<{width}}  {info.summary['en']}  [{info.paper}]{chunks}")
    return 0


def cmd_simulate(args) -> int:
    from pipelab.engine.results.metrics import SimulatedMetrics
    from pipelab.engine.results.timeline import format_grid
    from pipelab.engine.results.windows import StepWindows
    from pipelab.engine.schedules import build_schedule
    from pipelab.engine.schedules.costs import PassCosts
    from pipelab.engine.theory import formulas as theory
    from pipelab.engine.theory.held_activations import schedule_peak_activations
    from pipelab.engine.theory.papers import span_bubble_rate
    from pipelab.engine.theory.simulate import CostModel, simulate, simulate_run
    from pipelab.engine.theory.validate import format_table, validate

    for name in ("t_forward", "t_input", "t_weight", "link", "weight_memory", "t_reduce"):
        if (getattr(args, name) or 0) < 0:
            fail(f"--{name.replace('_', '-')} must be >= 0")
    unit = all(getattr(args, name) is None for name in ("t_forward", "t_input", "t_weight", "link", "t_reduce"))
    unit_name = "T_F" if unit else "s"  # what every time below is counted in
    for name, default in (("t_forward", 1.0), ("t_input", 1.0), ("t_weight", 1.0), ("link", 0.0)):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.steps < 1:
        fail(f"--steps must be a whole number >= 1, got {args.steps}")
    played = args.stages * max(args.chunks or 1, 1) * args.microbatches * args.steps
    if args.stages >= 1 and args.microbatches >= 1 and played > SIMULATE_MOST:
        fail(f"simulate plays at most {SIMULATE_MOST} stage-micro-batches (stages x chunks x micro-batches x steps), "
             f"got {played}")
    # A cost-aware schedule (zb-h2, zb-1p, zb-2p) is built for these costs (arXiv 2401.10241, section 3).
    costs = PassCosts(forward=args.t_forward, backward_input=args.t_input, backward_weight=args.t_weight,
                      link=args.link, weight_memory=args.weight_memory)
    schedule = build_schedule(args.schedule, args.stages, args.microbatches, args.chunks, costs=costs)
    if args.t_reduce is not None:
        if schedule.is_async:
            fail(f"--t-reduce: {schedule.name} updates inside the step; data parallelism runs synchronous schedules")
        from pipelab.engine.schedules.data_parallel import with_gradient_reduce
        schedule = with_gradient_reduce(schedule, args.reduce_at)
    if args.replicas is not None:
        from pipelab.engine.config import replicated_schedule
        from pipelab.engine.schedules.replication import parse_replicas
        if args.t_reduce is not None:
            fail("--replicas and --t-reduce: a replicated stage's all-reduce is its own; give one of them")
        def rebuild(n):  # the same schedule for a worker's share of the micro-batches, at these costs
            return build_schedule(args.schedule, args.stages, n, args.chunks, costs=costs)
        schedule = replicated_schedule(schedule, parse_replicas(args.replicas) or (), args.steps, rebuild)
    validate(schedule)
    cost = CostModel(forward=args.t_forward, backward_input=args.t_input,
                     backward_weight=args.t_weight, link=args.link, reduce=args.t_reduce or 0.0)
    overlap = args.overlap_steps or schedule.is_async
    # One synchronous step is the schedule's own program (its update after the flush left out).
    several = overlap or args.steps > 1
    timeline = simulate_run(schedule, cost, args.steps, overlap) if several else simulate(schedule, cost)
    p, m, v = schedule.num_ranks, schedule.num_microbatches, schedule.chunks
    overlapped = overlap and args.steps > 1
    formula = None if schedule.is_replicated else theory.formula_bubble_fraction(
        schedule.name, p, m, v, args.t_forward, args.t_input, args.t_weight, overlapped=overlapped)
    # Windowed as a run is (engine/results/windows.py): the steady steps of a stream, or the
    # first step with a barrier around it (every step of a simulation costs the same).
    windows = StepWindows.of_run(args.steps, True) if overlapped else StepWindows(False, (0,))
    window = timeline if overlap else windows.window(timeline, schedule)  # a stream keeps its updates
    figures = windows.figures(window)
    # The Zero Bubble paper's own rate (arXiv 2401.10241, section 5.3), for one synchronous step:
    # the longest device span, first pass to last, less a device's compute, over that span.
    one = None if overlapped else windows.split(window)[0]
    paper_rate = None if overlap else span_bubble_rate(one.events, p, max(one.busy_time()))
    metrics = SimulatedMetrics(
        bubble_fraction=figures.bubble,
        bubble_fraction_per_device=figures.bubble_per_device,
        steady_bubble_fraction=figures.bubble if overlapped else figures.steady,
        formula_bubble_fraction=formula,
        overlapped_steps=overlap,
        steps=args.steps,
        step_time_s=figures.step_times[0],
        peak_inflight_per_device=tuple(timeline.peak_inflight()),
        peak_held_microbatches_per_device=tuple(schedule_peak_activations(schedule)),
        weight_versions_per_device=tuple(timeline.weight_versions()),
        messages=schedule.messages_per_step,
    )
    how = f", {args.steps} steps " + ("overlapping" if overlap else "with a barrier between them")
    placement = f"{schedule.num_stages} stages on {p} workers ({args.replicas})" if schedule.is_replicated else f"p={p}"
    print(f"{schedule.name}: {placement} m={m} v={v}{how if args.steps > 1 else ''}"
          "  (program order; step k = each rank's k-th action)")
    print(format_table(schedule))
    print("\nsimulated timeline (time flows right):")
    print(format_grid(timeline))
    if overlap and args.steps > 1:
        print("(bubble and step time over the steady steps: each device from its first action of a step to its "
              "first of the next, after the first step and before the last)")
    print(f"\nstep time            {metrics.step_time_s:.4g} {unit_name}"
          + ("   (unit costs: T_F = T_I = T_W = 1, a message free; --t-forward ... give seconds)" if unit else ""))
    formula = metrics.formula_bubble_fraction
    formula_text = f"{formula:.4f}" if formula is not None else (
        "n/a (no closed form for replicated stages)" if schedule.is_replicated else "n/a (no closed form registered)")
    print(f"bubble (mean)        {metrics.bubble_fraction:.4f}   formula {formula_text}")
    if paper_rate is not None:
        print(f"bubble rate (paper)  {paper_rate:.4f}   (Zero Bubble's section 5.3: the longest device span, "
              "first pass to last, less its compute, over that span)")
    print(f"bubble per device    {' '.join(f'{b:.3f}' for b in metrics.bubble_fraction_per_device)}")
    # Shown as lists: [2, 1].
    print(f"peak in-flight       {list(metrics.peak_inflight_per_device)}")
    # A count, not bytes: SimulatedMetrics.peak_held_microbatches_per_device.
    print(f"held micro-batches   {' '.join(f'{a:g}' for a in metrics.peak_held_microbatches_per_device)}"
          "   (most a device holds at once, from F until B or W; a chunk counts 1/v)")
    print(f"weight versions      {list(metrics.weight_versions_per_device)}")
    if args.t_reduce is not None:
        exposed = (one or timeline).exposed_reduce()
        where = "the flush" if args.reduce_at == "flush" else "its last backward"
        print(f"exposed all-reduce   {' '.join(f'{exposed.get(s, 0.0):.4g}' for s in range(schedule.num_stages))}"
              f" {unit_name} per stage   (R of {args.t_reduce:g} {unit_name} after {where}; the part after the step's "
              "last compute)")
    if args.out:
        config = {"schedule": schedule.name, "stages": p, "microbatches": m, "chunks": v,
                  "t_forward": args.t_forward, "t_input": args.t_input, "t_weight": args.t_weight,
                  "link": args.link, "steps": args.steps, "overlap_steps": overlap,
                  # What every time of this file counts: T_F units at unit costs, else seconds.
                  "time_unit": "T_F" if unit else "s", "replicas": list(schedule.stage_replicas)}
        data = {"config": config, "events": timeline.to_dict()["events"], "metrics": metrics.to_dict()}
        with open(args.out, "w") as f:
            json.dump(data, f, indent=1)
    if args.trace:
        timeline.write_chrome_trace(args.trace)
    return 0


def quiet_on_broken_pipe(entry) -> int:
    """Run ``entry()``; when the reader of our output goes away (``... | head``), end quietly
    with 0 instead of a BrokenPipeError traceback. A run has already cleaned up by the time
    its summary prints. Python's documented recipe: point stdout at devnull, so the flush at
    exit does not raise again."""
    import os
    try:
        code = entry()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0

