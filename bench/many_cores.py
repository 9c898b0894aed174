"""One report from a lent many-core machine: the lessons' clicks with pinned ranks and the
core-per-rank comparison at p = 4 (bench/many_cores.sh runs both, then this).

    python -m bench.many_cores DIR [--out bench/MANY_CORES.md] [--command TEXT]

DIR holds what the two benches wrote there: clicks.json (bench/clicks.py, every click as it
finished, so a run stopped by its time limit still counts the clicks it made) and
CORE_PER_RANK.md and .json (bench/core_per_rank.py --stages 4). Writes one Markdown report:
the machine and its cores (physical, hyperthreads, this process's affinity), where a launch of
4 ranks goes by engine/runtime/placement.py's rule, the clicks' tables (bench/clicks.py's own)
with every click's placement, then the core-per-rank report; and its .json. Nothing is
recomputed but the clicks' summary, by bench/clicks.py's own functions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

COMMAND = "bash bench/many_cores.sh"
P = 4
"""The pipeline depth the report's placement line and the core-per-rank comparison are for."""


def topology() -> dict:
    """This host's CPUs as the placement reads them."""
    from pipelab.engine.runtime.placement import allowed_cpus, cpu_list_text, physical_cores, plan
    allowed = allowed_cpus() or ()
    cores = physical_cores(allowed)
    launch = plan(cores, P, "auto")
    from bench.clicks import placement_text
    return {"allowed_cpus": cpu_list_text(allowed), "cpus": len(allowed), "physical_cores": len(cores),
            "threads_per_core": max((len(c) for c in cores), default=0), "launch_of_4": placement_text(launch)}


def demoted(markdown: str) -> str:
    """A report's headings one level down, to sit under this report's own."""
    return "\n".join("#" + line if line.startswith("#") else line for line in markdown.splitlines())


def report_md(data: dict, machine: dict) -> str:
    from bench.clicks import Click, summarize
    from bench.clicks import report_md as clicks_md
    clicks = [Click.from_dict(c) for c in data["clicks"]]
    top = data["topology"]
    lines = ["# The classroom server's host: pinned ranks on a many-core machine", "",
             f"Written by `{data['command']}` on {machine.get('date', '?')} ({machine.get('cpu', '?')}, "
             f"torch {machine.get('torch', '?')}, load {machine.get('load', '?')}); assembled by "
             "`python -m bench.many_cores`. docs/measuring.md says how to read it and how to run it again.", "",
             f"- CPUs this process may use: {top['cpus']} ({top['allowed_cpus']}), on {top['physical_cores']} "
             f"physical cores of {top['threads_per_core']} hyperthread(s) each",
             f"- a launch of {P} ranks here (engine/runtime/placement.py, PIPELAB_PIN=1): {top['launch_of_4']}", ""]
    if clicks:
        per_button = Counter((c.slug, c.button) for c in clicks)
        placements = Counter(c.placement for c in clicks)
        lines += [f"## 1. Clicks of every lesson button, ranks pinned ({len(clicks)} clicks, "
                  f"{min(per_button.values())}-{max(per_button.values())} per button)", "",
                  demoted(clicks_md(summarize(clicks), "the run above").split("\n", 2)[2]), "",
                  "Where each click's first run put its ranks (as its result records it):", ""]
        lines += [f"- {count} clicks: {text}" for text, count in placements.most_common()]
    else:
        lines += ["## 1. Clicks of every lesson button", "", "No click finished within the time limit."]
    lines += ["", "## 2. The core-per-rank comparison", "",
              demoted(data["core_per_rank"]) if data["core_per_rank"] else "Not finished within its time limit."]
    return "\n".join(lines) + "\n"


def read(folder: str, name: str) -> str:
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.many_cores", description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where bench/many_cores.sh's two benches wrote")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "MANY_CORES.md"))
    parser.add_argument("--command", default=COMMAND, help="the command that measured it, for the report's first line")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.folder):
        parser.exit(2, f"{parser.prog}: error: no folder {args.folder}\n")
    clicks_text = read(args.folder, "clicks.json")
    cpr = read(args.folder, "CORE_PER_RANK.json")
    data = {"command": args.command, "topology": topology(),
            "clicks": json.loads(clicks_text) if clicks_text else [],
            "core_per_rank": read(args.folder, "CORE_PER_RANK.md"),
            "core_per_rank_data": json.loads(cpr) if cpr else None}
    from bench.report import write_report
    write_report(args.out, data, report_md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
