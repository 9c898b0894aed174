"""The same schedule CSV and model on our runtime and on torch's, one beside the other.

    PYTHONPATH=. .venv/bin/python bench/torch_runtime.py [--stages 2] [--microbatches 4] [--steps 5]

Each schedule is exported once (engine/torch_bridge/csv_format.py) and that CSV text is what both runtimes
run: ours reads it as a custom schedule (engine/theory/validate.py reads commas as separators),
torch's ``_PipelineScheduleRuntime._load_csv`` reads the file (engine/torch_bridge/launch.py). Both
build the same layers with the same split (engine/model/parts.py, engine/model/partition.py), and
both report through engine/results/result.py: step time is the wall clock's median over the steps
after the warm-up ones (pipelab.engine.results.windows.WARM_UP_STEPS; CLOCK_MONOTONIC), bubble the device
clock's (thread CPU time per action; torch's device clock rebuilt from its actions' own
times, engine/torch_bridge/clock.py). Ours runs
twice, its messages through shared memory (its default on one host) and through gloo, as
torch's always are. Runs alternate ours, ours-gloo, torch per round, so drift on a shared
host hits each side alike. It prints a markdown table (and writes it with --out).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

if __package__ in (None, ""):  # run as a script: make "bench" and "engine" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import report as R  # noqa: E402
from bench.measure import log  # noqa: E402

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", "dualpipev")
SIDES = ("ours (shared memory)", "ours (gloo)", "torch")


def configs(name: str, stages: int, microbatches: int, steps: int, model: dict):
    """The three runs of one schedule, all from the same exported CSV text."""
    from pipelab.engine.config import RunConfig
    from pipelab.engine.schedules import CUSTOM, build_schedule
    from pipelab.engine.torch_bridge.csv_format import export_csv
    text = export_csv(build_schedule(name, stages, microbatches))
    base = dict(stages=stages, microbatches=microbatches, steps=steps, **model)
    ours = RunConfig(schedule=CUSTOM, custom_schedule=text, **base)
    return {SIDES[0]: ours, SIDES[1]: ours.with_(transport="torch"),
            SIDES[2]: RunConfig(schedule=name, **base)}  # torch's side exports the same CSV again


def measure(stages: int, microbatches: int, steps: int, rounds: int, model: dict,
            names=SCHEDULES) -> dict:
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.torch_bridge.launch import run_torch
    out = {}
    for name in names:
        row = {side: {"step": [], "bubble": []} for side in SIDES}
        try:
            runs = configs(name, stages, microbatches, steps, model)
            for rnd in range(rounds):
                for side, config in runs.items():
                    result = run_torch(config) if side == "torch" else run(config)
                    row[side]["step"].append(result.metrics.wall_step_time_s)
                    row[side]["bubble"].append(result.metrics.device_bubble_fraction)
                    log(f"{name} round {rnd} {side}: step {R.ms(result.metrics.wall_step_time_s)} "
                        f"bubble {result.metrics.device_bubble_fraction:.3f}")
        except Exception as err:  # noqa: BLE001 - one failure must not lose the table
            row["error"] = R.error_text(err)
            log(f"{name} failed: {row['error']}")
        out[name] = row
    return out


def table_md(results: dict) -> str:
    headers = ["schedule"] + [f"{side}: step, bubble" for side in SIDES] + ["torch / ours (gloo), step"]
    rows = []
    for name, row in results.items():
        if "error" in row:
            rows.append([name] + ["—"] * len(SIDES) + [R.NOT_MEASURED + ": " + row["error"]])
            continue
        cells = [f"{R.ms(_median(row[side]['step']))}, {R.num(_median(row[side]['bubble']))}" for side in SIDES]
        theirs, gloo = _median(row["torch"]["step"]), _median(row[SIDES[1]]["step"])
        rows.append([name] + cells + [R.num(theirs / gloo if theirs and gloo else None, 2)])
    return R.table(headers, rows)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def provenance(out: str) -> str:
    """The report's first line: which command wrote it, when, on what host."""
    import datetime
    import os
    import platform

    import torch
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"Written by `bench/torch_runtime.py --out {out}` on {when}, on this {os.cpu_count()}-core "
            f"{platform.machine()} host (torch {torch.__version__}).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6,
                        help="per run; the warm-up steps (engine.results.windows.WARM_UP_STEPS) are not measured")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model", default="gpt", choices=("mlp", "gpt"))
    parser.add_argument("--schedules", nargs="*", default=list(SCHEDULES))
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args(argv)
    from pipelab.engine.results.windows import WARM_UP_STEPS
    if args.steps <= WARM_UP_STEPS or args.rounds < 1:  # else every figure is a dash, or the warm-up's
        parser.error(f"--steps must be above {WARM_UP_STEPS} (the warm-up) and --rounds at least 1, "
                     f"got {args.steps} and {args.rounds}")
    model = {"model": args.model, "layers": max(4, 2 * args.stages)}
    results = measure(args.stages, args.microbatches, args.steps, args.rounds, model, args.schedules)
    text = (f"p={args.stages} m={args.microbatches}, model {args.model} ({model['layers']} layers), "
            f"{args.steps} steps x {args.rounds} rounds; step time: wall clock, median over the steps after the "
            "warm-up; bubble: device clock\n\n" + table_md(results) + "\n")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(provenance(args.out) + "\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
