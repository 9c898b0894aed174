"""PipeLab's benchmark: measures, then writes bench/RESULTS.md and the README's few bench lines.

    PYTHONPATH=. .venv/bin/python bench/run.py            # full run, on 2 cores the longest
    PYTHONPATH=. .venv/bin/python bench/run.py --quick    # fewer steps, configs and rounds
    PYTHONPATH=. .venv/bin/python bench/run.py --tiny     # smoke test: every code path once

One module per figure, each with ``measure``, ``section_md`` and ``summary_rows``:
1. bench/speed.py, step time vs torch.distributed.pipelining and one process; 2.
bench/fidelity.py, device clock vs simulator and vs wall clock; 3. bench/overhead.py, the
executor's own time; 4. bench/app_latency_figure.py, click to chart in chromium; 5.
bench/growth.py, step and memory as m and p grow; 6. bench/overlap.py, steps with and
without a barrier; 7. bench/lesson_headlines.py, every lesson's claim at its defaults.
This file plans, runs each figure and writes the report (bench/plan.py, bench/report.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make "bench" and "engine" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import app_latency_figure, fidelity, growth, lesson_headlines, overhead, overlap, speed  # noqa: E402
from bench import report as R  # noqa: E402
from bench.measure import log, mp_context  # noqa: E402
from bench.plan import all_schedules, make_plan  # noqa: E402, F401 - all_schedules: read by tests/test_registry.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (results key, figure module), in the report's order.
FIGURES = (("speed", speed), ("fidelity", fidelity), ("overhead", overhead), ("app_latency", app_latency_figure),
           ("growth", growth), ("overlap", overlap), ("lessons", lesson_headlines))
# The order they run in: the browser last, as it starts a server of its own.
MEASURE_ORDER = ("speed", "fidelity", "overhead", "growth", "overlap", "lessons", "app_latency")
OPTIONAL = ("app_latency", "overlap", "lessons")
"""Figures whose summary says "not measured" (or nothing) when a results dict lacks them."""


def summary_rows(results: dict) -> list[list]:
    """Every figure's summary rows, in the report's order."""
    rows = []
    for key, module in FIGURES:
        if key in results or key in OPTIONAL:
            rows += module.summary_rows(results.get(key) or {})
    return rows


def summary_md(results: dict) -> str:
    """The README's bench section: a few headline lines; the full table is bench/RESULTS.md's."""
    mach = results["machine"]
    machine = (f"Measured by `bench/run.py{_flag(results)}` on {mach['date']}: {mach['cpu']}, "
               f"{mach['cores']} cores, {mach['ram']} RAM, torch {mach['torch']}.")
    return R.readme_summary(machine, summary_rows(results))


def _flag(results: dict) -> str:
    return " --tiny" if results.get("tiny") else " --quick" if results["quick"] else ""


def results_md(results: dict) -> str:
    mach = results["machine"]
    lines = [
        "# PipeLab benchmark results", "",
        f"Written by `bench/run.py{_flag(results)}` (took {results['seconds']:.0f} s).", "",
        "## Machine", "",
        R.table(["", ""], [["CPU", mach["cpu"]], ["cores", mach["cores"]], ["RAM", mach["ram"]],
                           ["Python", mach["python"]], ["torch", mach["torch"]], ["OS", mach["os"]],
                           ["date", mach["date"]], ["load average at start", mach["load"]]]), "",
        f"All ranks share these cores: with p=4 on {mach['cores']} cores the wall clock includes waiting for a core "
        "(docs/measuring.md). Numbers vary run to run by tens of percent when other "
        "work runs on the host; compare within one run.", "",
        "## Summary", "", R.table(["figure", "measured", "target", "verdict"], summary_rows(results)), "",
    ]
    for key, module in FIGURES:
        lines += [f"## {module.HEADING}", "", module.section_md(results.get(key) or {}), ""]
    lines += ["## How each figure is measured", ""]
    lines += [module.METHOD for _, module in FIGURES if hasattr(module, "METHOD")]
    lines += ["", f"README: {results['readme']}", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps, configs and rounds")
    ap.add_argument("--tiny", action="store_true", help="a tiny smoke configuration (tests)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--json", default=None, help="also write the raw numbers here")
    args = ap.parse_args(argv)
    plan = make_plan(args.quick or args.tiny, args.tiny)
    started = time.monotonic()
    results = {"quick": args.quick or args.tiny, "tiny": args.tiny, "machine": R.machine_description()}
    ctx = mp_context()
    figures = dict(FIGURES)
    for key in MEASURE_ORDER:
        results[key] = speed.measure(plan, ctx) if key == "speed" else figures[key].measure(plan)
    results["seconds"] = time.monotonic() - started
    results["readme"] = R.update_readme(args.readme, summary_md(results))
    text = results_md(results)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    log(f"wrote {args.out}; {results['readme']}")
    print(R.table(["figure", "measured", "target", "verdict"], summary_rows(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
