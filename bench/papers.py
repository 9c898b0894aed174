"""The papers at their own scale: writes bench/PAPERS.md from the simulator (engine/theory/papers.py).

    PYTHONPATH=. .venv/bin/python bench/papers.py

Three sections, each our simulator's figure beside the published one:
1. Zero Bubble (arXiv 2401.10241), Table 5's bubble rate of every schedule it lists, from each
   setup's Table 9 costs (pipelab.engine.theory.papers.TABLE_5), and each schedule's peak activations
   beside Table 2's (and Table 4's measured GB);
2. Megatron's interleaved bubble (arXiv 2104.04473, section 2.2);
3. the DualPipe README's bubble and memory columns (engine/theory/dualpipe_table.py).
No torch, no runs: under a minute (the automatic schedules at p = 32, m = 256 take the most).
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make "bench" and "engine" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import report as R  # noqa: E402
from pipelab.engine.theory.dualpipe_table import dualpipe_table  # noqa: E402
from pipelab.engine.theory.papers import TABLE5_SCHEDULES, TABLE_5, compare, megatron_rows  # noqa: E402
from pipelab.engine.theory.papers_memory import memory_rows  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "PAPERS.md")

MEGATRON_SHAPES = ((4, 8, 2), (4, 16, 2), (8, 16, 2), (8, 32, 4), (16, 32, 2))
DUALPIPE_SHAPE = (8, 24)


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def zero_bubble_md() -> str:
    columns = list(TABLE5_SCHEDULES)
    compared = [compare(row) for row in TABLE_5]
    rows = [[c.row.model, c.row.p, c.row.m, c.row.chunks]
            + [f"{_f(c.ours[col])} / {_f(c.row.rates[col])}" for col in columns] for c in compared]
    worst = [max(abs(c.differences()[col]) for c in compared) for col in columns]
    return "\n".join([
        "## 1. Zero Bubble, Table 5: bubble rate per schedule", "",
        "The paper's rate (arXiv 2401.10241, section 5.3): (cost - m (T_F + T_B + T_W)) / cost, where cost is the "
        "largest execution time of all stages (each stage's first pass to its last), simulated from Table 9's "
        "profiled T_F, T_B, T_W and T_comm. 1F1B-I is our interleaved schedule with v chunks per device, one per "
        "layer of a middle stage (Table 3: (layers + 2) / p); ZB-1p and ZB-2p are our automatic schedules "
        "(engine/schedules/zb_auto.py) under limits of p and 2p M_B, counting only W's share of a micro-batch "
        "after I (Table 1).", "",
        "Each cell: ours / the paper's.", "",
        R.table(["model", "p", "m", "v"] + columns, rows), "",
        "Largest |ours - the paper's| per column: "
        + ", ".join(f"{col} {w:.4f}" for col, w in zip(columns, worst)) + ".", "",
        "1F1B-I is the one column not to the table's last digit: our simulator makes every micro-batch's hop from "
        "the last stage back to the first (the next chunk) wait for T_comm, while the authors' replay of the "
        "schedule (megatron/core/pipeline_parallel/efficiency.py in sail-sg/zero-bubble-pipeline-parallelism) "
        "makes only the first micro-batch of each group of p wait, so ours is a little higher.",
        "", memory_md()])


def memory_md() -> str:
    lines = ["### Peak activations", "",
             "Ours: the device holding most along its order (engine/theory/held_activations.py), in M_B, counted "
             "whole until W / with only W's share after I (Table 1). The paper's: Table 2's analytic peaks (1F1B and "
             "ZB-H1 p, ZB-H2 2p - 1) and section 3's limits (ZB-1p p, ZB-2p 2p). Table 4's measured GB per GPU "
             "(the paper's A100 runs, weights and optimizer state included) are quoted as the paper's, not compared.",
             ""]
    columns = list(TABLE5_SCHEDULES)
    rows = []
    for row in (r for r in TABLE_5 if r.m == min(q.m for q in TABLE_5 if q.model == r.model)):
        peaks = {x.column: x for x in memory_rows(row.p, row.m, row.costs, row.chunks, row.model)}
        rows.append([row.model, row.p, row.m] + [
            f"{x.ours_whole:.3g} / {x.ours_weighted:.3g} / {'—' if x.paper is None else x.paper}"
            f"{'' if x.measured_gb is None else f' ({x.measured_gb} GB)'}" for x in map(peaks.get, columns)])
    lines += ["Each cell: ours whole / ours with W's share / the paper's M_B (Table 4's GB).", "",
              R.table(["model", "p", "m"] + columns, rows), "",
              "Counted whole until W, ZB-2p holds more than its 2p M_B: it puts off W's to the end, which its limit "
              "allows because a micro-batch waiting for W holds only W's share of it (Model.weight_memory)."]
    return "\n".join(lines)


def megatron_md() -> str:
    rows = [[r.p, r.m, r.v, _f(r.formula), _f(r.simulated)] for r in megatron_rows(MEGATRON_SHAPES)]
    return "\n".join(["## 2. Megatron's interleaved 1F1B", "",
                      "(p-1)/v / (m + (p-1)/v) (arXiv 2104.04473, section 2.2) beside the simulator's synchronous "
                      "step, T_F = T_B = T_W, a chunk doing 1/v of a stage.", "",
                      R.table(["p", "m", "v", "formula", "simulated"], rows)])


def dualpipe_md() -> str:
    p, m = DUALPIPE_SHAPE
    rows = [[r.schedule, " / ".join(r.readme) if r.readme else "—", f"{r.formula_bubble:g} / {r.simulated_bubble:g}",
             f"{r.formula_activations:g} / {r.simulated_activations:g}"] for r in dualpipe_table(p, m)]
    return "\n".join(["## 3. The DualPipe README's columns", "",
                      f"p = {p}, m = {m}, T_F = T_B = T_W = 1 per stage. Bubble in idle time per device and "
                      "activations in stages x micro-batches, each formula / simulated "
                      "(engine/theory/dualpipe_table.py).",
                      "", R.table(["schedule", "README (bubble / params / activations)", "bubble",
                                   "activations"], rows)])


def report_md() -> str:
    return "\n\n".join(["# The papers at their scale",
                        "Written by `bench/papers.py` from the simulator; no runs, no host figures.",
                        zero_bubble_md(), megatron_md(), dualpipe_md()]) + "\n"


def main() -> int:
    with open(OUT, "w") as f:
        f.write(report_md())
    print(f"wrote {os.path.relpath(OUT, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
