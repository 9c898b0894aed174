"""Do ranks that share cores bias the device clock by schedule? The same action, timed in two schedules.

    PYTHONPATH=. .venv/bin/python -m bench.core_bias            # 3 launches at p = 4 and at p = 2
    PYTHONPATH=. .venv/bin/python -m bench.core_bias --launches 5 --out bench/CORE_BIAS.md

The device clock times each action by its own thread CPU time (docs/measuring.md). Where more
ranks than cores compute at once, an action's CPU time grows (caches, memory bandwidth, the
hyper-thread beside it), and a schedule that keeps more ranks busy at once (ZB-H1 fills 1F1B's
idle slots with W) may pay more per action than 1F1B for the very same F. This measures it:
each launch plays 1F1B and ZB-H1 at lesson 6's defaults with their steps in turn
(engine/runtime/alternating.py), so both meet the same host, and compares each kind of
action's mean device-clock cost, ZB-H1's over 1F1B's, at p = 4 (here: two ranks a core) and at
p = 2 (a core each). The step-time ratio and theory's at each run's own costs sit beside it.
Writes bench/CORE_BIAS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def measure(stages: int) -> dict:
    """One launch of 1F1B and ZB-H1, steps in turn: each action kind's cost ratio and the step ratio."""
    from pipelab.app.runner.runs import knobs_to_config
    from pipelab.engine.results.windows import WARM_UP_STEPS
    from pipelab.engine.runtime.alternating import run_alternating
    from pipelab.engine.runtime.paired import PAIRS, paired_ratio
    from pipelab.lessons import get_lesson
    from pipelab.lessons.judging import mean_costs
    knobs = get_lesson("zero-bubble").defaults
    h1 = knobs_to_config(knobs).with_(stages=stages, steps=WARM_UP_STEPS + PAIRS, check=False)
    zb, one = run_alternating([h1, h1.with_(schedule="1f1b")])
    costs = [a / b for a, b in zip(mean_costs(zb.metrics), mean_costs(one.metrics))]
    step, low, high = paired_ratio(zb, one, lambda r: r.metrics.device_step_time_s)
    return dict(stages=stages, f=costs[0], i=costs[1], w=costs[2], step=step, step_low=low, step_high=high,
                theory=zb.metrics.simulated_step_time_s / one.metrics.simulated_step_time_s,
                f_ms=mean_costs(one.metrics)[0] * 1e3)


def report(rows: list[dict], machine: str, launches: int) -> str:
    lines = ["# The same action in two schedules: does sharing cores bias the device clock?", "",
             f"Written by `bench/core_bias.py` ({machine}), {launches} launches per p. Each launch plays 1F1B and "
             "ZB-H1 at lesson 6's defaults (mlp 16 x 512, 128 rows per micro-batch, m = 8) with their steps in turn; "
             "a cost ratio is ZB-H1's mean device-clock cost of that kind of action over 1F1B's in the same launch "
             "(1.00: no bias). Step: ZB-H1 ÷ 1F1B, the median over pairs of steps (range over pairs), beside theory at "
             "each run's own costs.", "",
             "| p | ranks per core | F ratio | I ratio | W ratio | 1F1B's T_F (ms) | step ratio (pairs) | theory at "
             "the run's costs |", "|---|---|---|---|---|---|---|---|"]
    cores = os.cpu_count() or 1
    for r in rows:
        lines.append(f"| {r['stages']} | {r['stages'] / cores:.1f} | {r['f']:.3f} | {r['i']:.3f} | {r['w']:.3f} | "
                     f"{r['f_ms']:.2f} | {r['step']:.3f} ({r['step_low']:.3f}-{r['step_high']:.3f}) | "
                     f"{r['theory']:.3f} |")
    by_p = {}
    for r in rows:
        by_p.setdefault(r["stages"], []).append(r["f"])
    lines += ["", "Median F ratio by p: " + ", ".join(f"p = {p}: {statistics.median(v):.3f}" for p, v in by_p.items())
              + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.core_bias", description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "CORE_BIAS.md"))
    args = parser.parse_args(argv)
    if args.launches < 1:
        parser.exit(2, f"{parser.prog}: error: --launches must be >= 1, got {args.launches}\n")
    import platform
    rows = []
    for _ in range(args.launches):
        for stages in (4, 2):  # p = 4 and p = 2 take turns: drift moves both alike
            rows.append(measure(stages))
            print(rows[-1], flush=True)
    machine = (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
               f"{os.cpu_count()} cores")
    with open(args.out, "w") as f:
        f.write(report(rows, machine, args.launches))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
