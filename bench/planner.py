"""The planner's predicted step against the measured one, for the configurations it reports.

    PYTHONPATH=. .venv/bin/python -m bench.planner [--rounds N] [--quick] [--out FILE.md]

``pipelab plan`` (engine/cli/plan.py) profiles each layer on this host, calibrates them with a
short engine run of as many stages as workers, and measures the link with the engine's own
all-reduce; engine/theory/planner.py predicts a synchronous step for any split of the layers
into stages and any replicas per stage. For two models on 4 workers and a global batch of 8:

- the mlp (16 equal layers): the three uniform layouts (4 stages, 2 x 2, the whole model on 4);
- wide-first (its first layer as heavy as eight of the rest, PipeDream's case for a replicated
  stage): the planner's own choice, the straight pipeline, the first stage on two workers
  ("2-1-1") and plain data parallelism, each cut where the planner cuts it.

Each configuration runs as the planner priced it (engine/cli/plan.py config_for: its stages,
their layers and their workers), the model's configurations in one launch per round, steps in
turn; each measured figure is the median device-clock step over every measured step. Target
(issue 44): every prediction within 15 % of the measured step. Writes bench/PLANNER.md and .json.
"""

from __future__ import annotations

import os
import statistics

from bench import report as R
from bench.measure import log

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 0.15
WORKERS, GLOBAL = 4, 8
MODELS = {
    "mlp": dict(model="mlp", layers=16, hidden=512, microbatch_size=64),
    "wide-first": dict(model="wide-first", layers=9, hidden=512, microbatch_size=64),
}
QUICK = {
    "mlp": dict(model="mlp", layers=4, hidden=64, microbatch_size=4),
    "wide-first": dict(model="wide-first", layers=5, hidden=64, microbatch_size=4),
}


def plans(size: dict) -> tuple[dict, object]:
    """Per configuration label, the planner's Plan; and the link it measured."""
    from argparse import Namespace

    from pipelab.engine.cli.plan import calibrated, config_of, measure_link, profile_layers
    from pipelab.engine.theory.planner import data_parallel, layout_plan, plan, replicated_plan, straight_pipeline
    args = Namespace(workers=WORKERS, microbatches=GLOBAL, heads=4, seq_len=64, **size)
    config = config_of(args)
    layers = calibrated(config, profile_layers(config), WORKERS, GLOBAL)
    link = measure_link()
    if size["model"] == "mlp":
        return {f"{d} x {p}": layout_plan(layers, p, d, GLOBAL, link) for p, d in ((4, 1), (2, 2), (1, 4))}, link
    chosen = plan(layers, WORKERS, GLOBAL, link)
    return {f"planner's choice ({chosen.config})": chosen,
            "straight": straight_pipeline(layers, WORKERS, GLOBAL, link),
            "2-1-1": replicated_plan(layers, (2, 1, 1), GLOBAL, link),
            "data parallel": data_parallel(layers, WORKERS, GLOBAL, link)}, link


def measured_steps(planned: dict, rounds: int, size: dict) -> dict:
    """Per configuration, the median device-clock step over every measured step of every round."""
    from pipelab.engine.cli.plan import config_for
    from pipelab.engine.config import RunConfig
    from pipelab.engine.runtime.alternating import run_alternating
    base = RunConfig(steps=10, **size)
    configs = [config_for(p, base) for p in planned.values()]
    steps: dict = {label: [] for label in planned}
    for k in range(rounds):
        for label, result in zip(planned, run_alternating(configs)):
            steps[label] += list(result.metrics.device_step_times_s)
        log(f"{size['model']}: round {k + 1}/{rounds}")
    return {label: statistics.median(values) for label, values in steps.items()}


def report_md(data: dict, machine: dict) -> str:
    lines = ["# The planner's step against the measured step", "",
             f"Written by `python -m bench.planner --rounds {data['rounds']}{' --quick' if data['quick'] else ''}` "
             f"on {machine.get('date', '?')} ({machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, load "
             f"{machine.get('load', '?')}).", "",
             f"{WORKERS} workers, a global batch of {GLOBAL} micro-batches, 1F1B. The planner "
             "(engine/theory/planner.py) profiled each layer here, calibrated them with a short engine run of "
             f"{WORKERS} stages, and measured the link with the engine's own all-reduce. Each configuration runs "
             "as the planner priced it (its stages, their layers and their workers; `pipelab plan` prints the "
             "command), a model's configurations in one launch per round, steps in turn (median device-clock "
             f"step). Target: within {TARGET:.0%}.", ""]
    for section in data["models"]:
        size = ", ".join(f"{k} {v}" for k, v in section["size"].items())
        rows = []
        for row in section["rows"]:
            error = abs(row["predicted_s"] - row["measured_s"]) / row["measured_s"]
            rows.append([row["label"], row["config"], row["stage_layers"], R.ms(row["predicted_s"]),
                         R.ms(row["measured_s"]), R.pct(error), R.verdict(error, TARGET)])
        lines += [f"## {section['size']['model']}", "", f"{size}; the link: {section['link']}.", "",
                  R.table(["configuration", "workers per stage", "layers per stage", "planner", "measured", "error",
                           f"<= {TARGET:.0%}"], rows), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = R.rounds_args("python -m bench.planner", __doc__, os.path.join(ROOT, "bench", "PLANNER.md"), argv)
    sections = []
    for size in (QUICK if args.quick else MODELS).values():
        planned, link = plans(size)
        measured = measured_steps(planned, args.rounds, size)
        sections.append({
            "size": size, "link": f"{link.bandwidth_bytes_per_s / 1e9:.2f} GB/s, {link.latency_s * 1e6:.0f} us per hop",
            "rows": [{"label": label, "config": p.config, "stage_layers": "-".join(map(str, p.stage_layers)),
                      "predicted_s": p.step_s, "measured_s": measured[label]} for label, p in planned.items()]})
    R.write_report(args.out, {"rounds": args.rounds, "quick": args.quick, "models": sections}, report_md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
