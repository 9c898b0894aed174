"""Do pinned ranks steady a lesson's step ratios? Its comparisons at p = 2, pinned and not, click by click.

    PYTHONPATH=. .venv/bin/python -m bench.pinning                  # 20 clicks per button and mode
    PYTHONPATH=. .venv/bin/python -m bench.pinning --clicks 2 --lessons gpipe --out /tmp/p.md

Every lesson button that compares schedules in one launch (their steps taking turns; bench/clicks.py
presses it as the page does), at the lesson's defaults but p = 2, so that each rank has a core
of its own on a 2-core host. Each click is pressed twice, once with PIPELAB_PIN=0 (the OS places
the ranks) and once pinned (engine/runtime/placement.py), the two in ABBA order over the clicks so
that a host that drifts moves both alike. Pinned means each rank on its own physical core; where
the host has no core left for the gradient check's one-process reference run (p + 1 cores), the
reference shares the ranks' cores (PIPELAB_PIN=ranks): it runs after every rank's last step, so
no measured step shares a core with it. Left out: lesson 3's comparison (whole runs in rounds,
no step ratio), lesson 4's (its headline is a bubble, not a step ratio; the others' 20 clicks
in both modes already take an hour here) and lesson 7's (d x p processes, more than a core each).

Writes bench/PINNING.md and .json: per button and mode, the headline's and every step ratio's
min / median / max and spread (the issue's target: at most 0.05), and the median click's time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import report as R  # noqa: E402

LESSONS = ("naive", "gpipe", "interleaved", "zero-bubble")
"""The lessons whose comparison shows a step ratio and runs in one launch of p processes (the
module docstring says why not the others)."""
STAGES = 2
NOT_PINNED, PINNED = "not pinned", "pinned"
STEP_SPREAD = 0.05


def pinned_value(stages: int) -> str:
    """PIPELAB_PIN for the pinned clicks: the default rule where the host has a core for every
    rank and one for the reference, else "ranks" (the reference shares, after the steps)."""
    from pipelab.engine.runtime.placement import allowed_cpus, physical_cores
    return "1" if len(physical_cores(allowed_cpus() or ())) >= stages + 1 else "ranks"


def measure(clicks: int, lessons: tuple[str, ...], stages: int, log=print, save=None) -> dict:
    """Every click in both modes; ``save(data)`` after each (a bench stopped early keeps its clicks)."""
    from bench.clicks import buttons, compares, press_in_turn
    plan = [b for b in buttons(list(lessons)) if compares(b)]
    modes = {NOT_PINNED: "0", PINNED: pinned_value(stages)}
    done: dict[str, list] = {mode: [] for mode in modes}
    data = {"clicks": clicks, "stages": stages, "modes": modes, "runs": done, "loads": []}

    def clicked(k, button, mode, click) -> None:
        data["loads"].append(os.getloadavg()[0])  # other work on the host, click by click
        if save is not None:
            save(data)
        log(f"click {k + 1}/{clicks} {button.slug} {mode}: {click.status}, {click.quantity} "
            f"{R.num(click.value)} ({click.seconds:.1f} s; {click.placement})", flush=True)
    press_in_turn(plan, {mode: {"PIPELAB_PIN": value} for mode, value in modes.items()}, clicks, stages, done,
                  clicked)
    return data


def summary(data: dict) -> list[dict]:
    """Per button, per mode: bench.clicks.summarize's row (headline, step ratios, seconds) and the placements."""
    from bench.clicks import Click, summarize
    rows = []
    for mode, runs in data["runs"].items():
        clicks = [Click.from_dict(c) for c in runs]
        for row in summarize(clicks):
            mine = [c for c in clicks if (c.slug, c.button) == (row["lesson"], row["button"])]
            rows.append({**row, "mode": mode, "placements": sorted({c.placement for c in mine})})
    return rows


def report_md(data: dict, machine: dict) -> str:
    from bench.clicks import theory_table
    rows = summary(data)
    p = data["stages"]
    made = [sum(1 for c in runs if (c["slug"], c["button"]) == key) for runs in data["runs"].values()
            for key in {(c["slug"], c["button"]) for c in runs}]
    clicks = min(made, default=0)
    pinned = data["modes"][PINNED]
    how = ("each rank on its own physical core, the reference run on another (PIPELAB_PIN=1)" if pinned == "1" else
           "each rank on its own physical core; the host has no core left for the gradient check's one-process "
           "reference run, which shares the ranks' cores after their last step (PIPELAB_PIN=ranks): no measured "
           "step shares a core with it")
    lines = [f"# Pinned ranks at p = {p}: the lessons' comparisons, {clicks} clicks each, pinned and not", "",
             f"Written by `python -m bench.pinning --clicks {data['clicks']}` on {machine.get('date', '?')} "
             f"({machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, torch {machine.get('torch', '?')}, "
             f"load {machine.get('load', '?')}). Each lesson's defaults at p = {p}; every click pressed twice, "
             f"not pinned (PIPELAB_PIN=0) and pinned: {how}. The two take turns click by click in ABBA order. "
             f"Target (issue 45): every step ratio a verdict shows spreads at most {STEP_SPREAD} over the clicks.", ""]
    loads = data.get("loads") or []
    if loads:
        lines += [f"The host's 1-minute load average after each click: {min(loads):.1f} to {max(loads):.1f} "
                  f"(median {statistics.median(loads):.1f}) on {machine.get('cores', '?')} cores: other work "
                  "shared the cores with both modes alike.", ""]
    step_table = []
    for r in rows:
        for o in r["steps"]:
            step_table.append([r["lesson"], r["mode"], o["quantity"].removeprefix("step time, "),
                               f"{R.num(o['min'])} / {R.num(o['median'])} / {R.num(o['max'])}", R.num(o["spread"]),
                               R.verdict(o["spread"], STEP_SPREAD), R.num(o["theory"])])
    side = {}
    for r in rows:
        for o in r["steps"]:
            side.setdefault((r["lesson"], o["quantity"].removeprefix("step time, ")), {})[r["mode"]] = (o, r["seconds"])
    lines += ["## Side by side", "",
              R.table(["lesson", "ratio", "spread, not pinned", "spread, pinned", "median, not pinned",
                       "median, pinned", "s per click, not pinned", "s per click, pinned"],
                      [[lesson, ratio] + [R.num(m[k][0]["spread"]) if k in m else "—" for k in (NOT_PINNED, PINNED)]
                       + [R.num(m[k][0]["median"]) if k in m else "—" for k in (NOT_PINNED, PINNED)]
                       + [f"{m[k][1]:.1f}" if k in m else "—" for k in (NOT_PINNED, PINNED)]
                       for (lesson, ratio), m in side.items()]), ""]
    lines += ["## Step ratios (device clock)", "",
              R.table(["lesson", "ranks", "ratio", "min / median / max", "spread", f"<= {STEP_SPREAD}",
                       "theory (simulator at the runs' costs)"], step_table), ""]
    lines += ["## Headlines and click times", "",
              R.table(["lesson", "button", "ranks", "headline", "min / median / max", "spread (target)",
                       "holds / noise / fails", "s per click (median)"],
                      [[r["lesson"], r["button"], r["mode"], r["quantity"] + (f" ({r['unit']})" if r["unit"] else ""),
                        f"{R.num(r['min'])} / {R.num(r['median'])} / {R.num(r['max'])}",
                        f"{R.num(r['spread'])} ({r['spread_target']:g})",
                        f"{r['holds']} / {r['noise']} / {r['fails']} of {r['clicks']}", f"{r['seconds']:.1f}"]
                       for r in rows]), ""]
    beside = theory_table(rows, mode=True)
    if beside:
        lines += ["## Headlines beside theory", *beside, ""]
    lines += ["## Where the ranks ran (each click's first run, as its result records it)", ""]
    lines += [f"- {r['lesson']}, {r['mode']}: {'; or '.join(r['placements'])}" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pinning", description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=20, help="clicks per button and mode (default 20)")
    parser.add_argument("--lessons", default=",".join(LESSONS), help=f"comma-separated (default {','.join(LESSONS)})")
    parser.add_argument("--stages", type=int, default=STAGES, help=f"pipeline devices p (default {STAGES})")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "PINNING.md"))
    parser.add_argument("--json", default=os.path.join(ROOT, "bench", "out", "pinning.json"),
                        help="every click so far, saved after each")
    parser.add_argument("--report-only", action="store_true", help="write the report from --json's clicks")
    args = parser.parse_args(argv)
    if args.report_only:
        with open(args.json, encoding="utf-8") as f:
            R.write_report(args.out, json.load(f), report_md)
        return 0
    if args.clicks < 1:
        parser.exit(2, f"{parser.prog}: error: --clicks must be >= 1, got {args.clicks}\n")
    lessons = tuple(s for s in args.lessons.split(",") if s)
    unknown = sorted(set(lessons) - set(LESSONS))
    if unknown:
        parser.exit(2, f"{parser.prog}: error: --lessons takes {', '.join(LESSONS)}; got {', '.join(unknown)}\n")
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)

    def save(data: dict) -> None:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
    data = measure(args.clicks, lessons, args.stages, save=save)
    R.write_report(args.out, data, report_md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
