"""The papers at their own scale: writes bench/PAPERS.md from the simulator (engine/theory/papers.py).

    PYTHONPATH=. .venv/bin/python bench/papers.py

Three sections, each our simulator's figure beside the published one:
1. Zero Bubble (arXiv 2401.10241), Table 5's bubble rate of every schedule it lists, from each
   setup's Table 9 costs; until those rows are typed in (pipelab.engine.theory.papers.TABLE_5), the same
   columns at the paper's closed forms' settings;
2. Megatron's interleaved bubble (arXiv 2104.04473, section 2.2);
3. the DualPipe README's bubble and memory columns (engine/theory/dualpipe_table.py).
No torch, no runs: a few seconds.
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make "bench" and "engine" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import report as R  # noqa: E402
from pipelab.engine.theory.dualpipe_table import dualpipe_table  # noqa: E402
from pipelab.engine.theory.papers import INTERLEAVED_CHUNKS, TABLE5_SCHEDULES, TABLE_5, compare, formula_rates, megatron_rows, table5_rates  # noqa: E402
from pipelab.engine.schedules.costs import PassCosts  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "PAPERS.md")

# Cost settings for section 1 while TABLE_5 is empty: the paper's own figures' setting
# (T_F = T_B = T_W) and settings where its closed forms part (T_W short of (T_F + T_B) / 2,
# a link). Labelled as ours, never as the paper's.
SETTINGS = (("T_F = T_B = T_W", PassCosts()),
            ("T_W = T_F / 2", PassCosts(forward=1.0, backward_input=1.0, backward_weight=0.5)),
            ("T_B = 2 T_F, T_W = T_F / 2, link 0.1 T_F",
             PassCosts(forward=1.0, backward_input=2.0, backward_weight=0.5, link=0.1)))
SHAPES = ((4, 12), (8, 24), (16, 48))
MEGATRON_SHAPES = ((4, 8, 2), (4, 16, 2), (8, 16, 2), (8, 32, 4), (16, 32, 2))
DUALPIPE_SHAPE = (8, 24)


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def zero_bubble_md() -> str:
    columns = list(TABLE5_SCHEDULES)
    lines = ["## 1. Zero Bubble, Table 5: bubble rate per schedule", "",
             "The paper's rate: 1 - m (T_F + T_B + T_W) / the longest stage's own span, first F to last pass "
             "(arXiv 2401.10241, section 5.1). 1F1B-I is our interleaved schedule with "
             f"v = {INTERLEAVED_CHUNKS}; ZB-1p and ZB-2p are our automatic schedules (engine/schedules/zb_auto.py).",
             ""]
    if TABLE_5:
        rows = []
        for compared in map(compare, TABLE_5):
            row = compared.row
            rows.append([row.model, row.p, row.m]
                        + [f"{_f(compared.ours[c])} / {_f(row.rates.get(c))}" for c in columns])
        lines += ["Each cell: ours / the paper's.", "",
                  R.table(["model", "p", "m"] + columns, rows)]
    else:
        lines += ["**The published rows are not in this repository yet.** Table 5's rates and Table 9's costs "
                  "were not in the sources engine/theory/papers.py was written from, and none are typed from memory "
                  "(pipelab.engine.theory.papers.TABLE_5). Below, the same columns at cost settings of ours, each cell "
                  "simulated / the paper's closed form where it gives one (communication left out).", ""]
        rows = []
        for label, costs in SETTINGS:
            for p, m in SHAPES:
                ours, formula = table5_rates(p, m, costs), formula_rates(p, m, costs)
                rows.append([label, p, m] + [f"{_f(ours[c])} / {_f(formula[c])}" for c in columns])
        lines.append(R.table(["costs", "p", "m"] + columns, rows))
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
                      "activations in stages x micro-batches, each formula / simulated (engine/theory/dualpipe_table.py).",
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
