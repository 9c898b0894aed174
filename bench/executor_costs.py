"""The executor's own time between actions, part by part (issue 45, item 2): at most 30 µs per action.

    .venv/bin/python -m bench.executor_costs [--rounds N] [--quick] [--baseline REVISION] [--no-floor] [--out FILE.md]

At the command line's defaults (engine/config.py COMMAND_LINE_DEFAULTS: mlp 16 x 512, 64 rows
per micro-batch, 5 steps) with m = 8, for 1F1B at p = 2 and ZB-H2 at p = 4 (built for its
profiled costs, as bench/overlap.py's command-line pair), each round runs the schedule twice:
once plain, whose Event.host_after over the measured steps is the figure the target judges
(the median over every action of every round), and once probed (bench/executor_probe.py: a
thread-time counter around each part, booked to the action it follows), which says where that
time goes: posting sends, recording events, the activation-memory accounting, the progress
report, taking a message that was in already (the ready check and the take), and the rest
(the loop, dispatching the action, the clock reads, and since 582ead3 the action's and a
send's event rows, built inline) as host_after less the parts. The activation
accounting is queued on CPU: what a rank counts while it would otherwise wait for a message is
timed apart, as "memory accounting in a wait", and is not in host_after (a wait it outlasts
books it there, as memory accounting). Each probed part also carries its counter's own cost, about a microsecond. Host
time is thread CPU time (engine/device.py HostStopwatch), so a rank waiting for a core does
not count, but its caches refilled after another process ran do (see docs/measuring.md).
``--baseline REV`` also runs the executor of git revision REV (the tree at REV, in a process of
its own) in every round, beside this one: before and after at the same load. Every round also
plays each run's floor (bench/executor_floor.py: the same ranks' actions with nothing between
them but the clocks, then the send's copy, then every message through the engine's own
transport), unless ``--no-floor``: how much of the figure any executor would pay on this host.
Writes bench/EXECUTOR.md and .json.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import tempfile

from bench import executor_floor
from bench import report as R
from bench.executor_probe import IN_WAITS, PARTS, PROBE_ENV, PROBE_SWITCH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = (("1f1b", 2), ("zb-h2", 4))
MICROBATCHES = 8
TARGET_S = 30e-6
REST = "the rest (loop, dispatch, clock reads)"
TINY = dict(model="mlp", layers=4, hidden=64, microbatch_size=4, steps=3)


def _start_probe_forkserver(folder: str) -> None:
    """Every later rank starts with the probe installed (switched by a file in ``folder``)."""
    import multiprocessing.forkserver as forkserver

    from pipelab.engine.runtime.rank_processes import mp_context
    os.environ[PROBE_ENV] = folder
    context = mp_context()
    preload = list(getattr(forkserver._forkserver, "_preload_modules", []))
    context.set_forkserver_preload(preload + ["bench.executor_probe"])


def _config(schedule: str, stages: int, quick: bool):
    from pipelab.engine.config import COMMAND_LINE_DEFAULTS, RunConfig
    from pipelab.engine.runtime.paired import profiled
    config = RunConfig(schedule=schedule, stages=stages, microbatches=MICROBATCHES,
                       **(TINY if quick else COMMAND_LINE_DEFAULTS))
    return profiled([config])[0] if schedule == "zb-h2" else config


def _plain_gaps(result) -> list[list]:
    """Each measured action's host_after, named by the action and the next one on its rank in its
    step (executor_floor.gap), as the floor names its gaps."""
    steps = set(result.measured_steps())
    by_rank_step: dict[tuple[int, int], list] = {}
    for e in result.timeline.events:
        if e.kind not in ("send", "recv") and e.step in steps:
            by_rank_step.setdefault((e.rank, e.step), []).append(e)
    out = []
    for events in by_rank_step.values():
        events.sort(key=lambda e: (e.start, e.end))  # the rank's own order: its device clock only moves on
        for e, after in zip(events, events[1:] + [None]):
            out.append([executor_floor.gap(f"{e.kind}{e.stage}", after and f"{after.kind}{after.stage}"),
                        e.host_after])
    return out


def _probed_rows(folder: str, steps: set[int]) -> list[dict]:
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("rank-"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                rows += [r for r in json.load(f) if r["step"] in steps]
            os.remove(os.path.join(folder, name))
    return rows


def _plain_steps(result) -> list[float]:
    """Each measured step's time on the device clock (Timeline.step_time), seconds."""
    return [result.timeline.of_step(k).step_time() for k in result.measured_steps()]


def summarize(plain: list[float], rows: list[dict], steps: list[float] | None = None,
              round_medians: list[float] | None = None, gaps: list | None = None) -> dict:
    """Median and mean host_after per action (plain runs), and per part of the probed runs: its
    mean per action and its median over the actions it happens after (µs); with ``steps`` (the
    plain runs' measured steps on the device clock), their median and mean (ms): a lighter
    executor must not buy its figure with a longer step; with ``round_medians`` (each round's
    own median host_after), their range: how far the figure moves from one launch to the next; with
    ``gaps`` (``_plain_gaps``), each named gap's median (µs) and how many there were."""
    parts = {}
    for part in list(PARTS) + [REST] + list(IN_WAITS):
        if part == REST:
            values = [r["host_after"] - sum(r.get(p, 0.0) for p in PARTS) for r in rows]
        else:
            values = [r.get(p, 0.0) for r in rows for p in [part]]
        happened = [v for v, r in zip(values, rows) if part == REST or part in r]
        parts[part] = {"mean_us": statistics.fmean(values) * 1e6 if values else None,
                       "median_where_us": statistics.median(happened) * 1e6 if happened else None,
                       "share_of_actions": len(happened) / len(rows) if rows else None}
    probed = [r["host_after"] for r in rows]
    by_action: dict[str, list[dict]] = {}
    for r in rows:
        by_action.setdefault(f"{r['kind']} of stage {r['stage']}", []).append(r)
    medians = {action: {part: statistics.median(r.get(part, 0.0) for r in group) * 1e6
                        for part in ["host_after", *PARTS, *IN_WAITS]} for action, group in sorted(by_action.items())}
    return {"median_us": statistics.median(plain) * 1e6, "mean_us": statistics.fmean(plain) * 1e6,
            "actions": len(plain), "probed_median_us": statistics.median(probed) * 1e6 if probed else None,
            "probed_mean_us": statistics.fmean(probed) * 1e6 if probed else None, "parts": parts,
            "by_action_us": medians,
            **({"step_ms_median": statistics.median(steps) * 1e3, "step_ms_mean": statistics.fmean(steps) * 1e3,
                "steps": len(steps)} if steps else {}),
            **({"round_median_min_us": min(round_medians) * 1e6, "round_median_max_us": max(round_medians) * 1e6}
               if round_medians else {}),
            **({"by_gap_us": _by_gap(gaps)} if gaps else {})}


def _by_gap(gaps: list) -> dict:
    """Each named gap's median (µs) and how many there were."""
    from collections import Counter
    counts = Counter(name for name, _ in gaps)
    return {name: {"median_us": median, "count": counts[name]}
            for name, median in executor_floor.median_by_gap_us(gaps).items()}


def _configs(quick: bool) -> dict:
    """Each run's label and config (ZB-H2's built for costs profiled now: one profile launch)."""
    return {f"{schedule}, p={stages}": _config(schedule, stages, quick) for schedule, stages in RUNS}


def measure_raw(rounds: int, quick: bool, folder: str, configs: dict | None = None) -> dict:
    """{run: {"plain": host_after of every measured action, "rows": the probed runs' rows}};
    ``configs`` (``_configs``), made here where not given."""
    from pipelab.engine.runtime.launch import run
    switch = os.path.join(folder, PROBE_SWITCH)
    out = {}
    for label, config in (configs or _configs(quick)).items():
        plain, rows, steps, gaps = [], [], [], []
        for _ in range(rounds):
            result = run(config)
            named = _plain_gaps(result)
            plain += [seconds for _, seconds in named]
            steps += _plain_steps(result)
            gaps += named
            open(switch, "w").close()
            try:
                result = run(config)
            finally:
                os.remove(switch)
            rows += _probed_rows(folder, set(result.measured_steps()))
        out[label] = {"plain": plain, "rows": rows, "steps": steps, "gaps": gaps}
    return out


BASELINE_COPIES = ("executor_costs.py", "executor_probe.py", "executor_floor.py")
"""This bench's files, put into a baseline's tree: every bench module it imports but report.py,
which a baseline's --raw round does not call."""


def _baseline_tree(revision: str) -> str:
    """The repository at ``revision`` in a temp folder, with this bench's files in its bench/."""
    import shutil
    import subprocess
    folder = tempfile.mkdtemp(prefix="pipelab-executor-baseline-")
    archive = subprocess.run(["git", "-C", ROOT, "archive", revision], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    for name in BASELINE_COPIES:
        shutil.copy(os.path.join(ROOT, "bench", name), os.path.join(folder, "bench", name))
    return folder


def _baseline_round(tree: str, quick: bool) -> dict:
    """One round of measure_raw with the baseline's code, in a process of its own."""
    import subprocess
    import sys
    out = os.path.join(tree, "raw.json")
    subprocess.run([sys.executable, "-m", "bench.executor_costs", "--raw", out, "--rounds", "1"]
                   + (["--quick"] if quick else []), cwd=tree, env={**os.environ, "PYTHONPATH": tree}, check=True)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def measure(rounds: int, quick: bool, baseline: str | None = None, floor: bool = True) -> dict:
    """Every run's summary; with ``baseline`` (a git revision) its runs' too, each round running
    both one after the other (the baseline first in even rounds, last in odd ones), so that both
    see the same load on a shared host; with ``floor``, the floor under each run's figure
    (bench/executor_floor.py) in every round too."""
    import shutil
    folder = tempfile.mkdtemp(prefix="pipelab-executor-costs-")
    _start_probe_forkserver(folder)
    tree = _baseline_tree(baseline) if baseline else None
    ours: dict = {}
    theirs: dict = {}
    floors: dict = {}
    try:
        configs = _configs(quick)  # ours and the floor play the same schedules in every round
        for k in range(rounds):
            sides = [("ours", None), ("baseline", tree)] if tree else [("ours", None)]
            for side, path in (sides if k % 2 else sides[::-1]):
                raw = _baseline_round(path, quick) if path else measure_raw(1, quick, folder, configs)
                into = ours if side == "ours" else theirs
                for label, got in raw.items():
                    into.setdefault(label, {"plain": [], "rows": [], "steps": [], "round_medians": [], "gaps": []})
                    into[label]["plain"] += got["plain"]
                    into[label]["round_medians"].append(statistics.median(got["plain"]))
                    into[label]["rows"] += got["rows"]
                    into[label]["steps"] += got.get("steps", [])
                    into[label]["gaps"] += got.get("gaps", [])
            for label, config in (configs.items() if floor else ()):  # the floor under the figure, same rounds
                for variant in executor_floor.VARIANTS:
                    floors.setdefault(label, {}).setdefault(variant, []).extend(executor_floor.measure(config, variant))
            print(f"round {k + 1} of {rounds} done", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if tree:
            shutil.rmtree(tree, ignore_errors=True)
    data = {"rounds": rounds, "quick": quick,
            "runs": {label: summarize(v["plain"], v["rows"], v["steps"], v["round_medians"], v["gaps"])
                     for label, v in ours.items()},
            "floor_us": {label: {variant: executor_floor.median_us(gaps) for variant, gaps in by.items()}
                         for label, by in floors.items()},
            "floor_by_gap_us": {label: executor_floor.median_by_gap_us(by[executor_floor.VARIANTS[-1]])
                                for label, by in floors.items()}}
    if baseline:
        data["baseline"] = {"revision": baseline,
                            "runs": {label: summarize(v["plain"], v["rows"], v["steps"], v["round_medians"], v["gaps"])
                                     for label, v in theirs.items()}}
    for label, v in data["runs"].items():
        was = data.get("baseline", {}).get("runs", {}).get(label)
        print(f"{label}: host_after median {v['median_us']:.1f} µs per action"
              + (f" (baseline {was['median_us']:.1f})" if was else ""), flush=True)
    return data


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _was_now(was: dict | None, now: dict, key: str) -> str:
    """``now[key]`` (µs, or the unit its key says), after ``was[key]`` and an arrow when there is a before."""
    return _us(now[key]) if not was else f"{_us(was.get(key))} -> {_us(now[key])}"


def _range(v: dict | None) -> str:
    """A run's round medians as "min-max" (µs); "-" where it has none (an older report's)."""
    if not v or "round_median_min_us" not in v:
        return "-"
    return f"{_us(v['round_median_min_us'])}-{_us(v['round_median_max_us'])}"


def _was_now_range(was: dict | None, now: dict) -> str:
    return _range(now) if not was else f"{_range(was)} -> {_range(now)}"


def message_of(name: str, last: int) -> str:
    """The message a gap ("F0 -> B0", executor_floor.gap) holds, ``last`` the run's last stage: the
    send of the action before it, the take of the one after, both, or "-"."""
    (before_kind, before_stage), *after = re.findall(r"([A-Z])(\d+)", name)
    held = ["send"] if executor_floor.sent_across(before_kind, int(before_stage), last) is not None else []
    if after and executor_floor.received_from(after[0][0], int(after[0][1]), last) is not None:
        held.append("take")
    return ", ".join(held) or "-"


def _gaps_md(data: dict, old: dict) -> list[str]:
    """The section "What the median is made of": each named gap of ours beside the floor's."""
    runs = {label: now for label, now in data["runs"].items() if now.get("by_gap_us")}
    if not runs:
        return []
    lines = ["## What the median is made of (plain runs, and the floor with the transport)\n",
             "Each gap between two actions on a rank, named by the action it follows and the one it precedes "
             "(end: the rank's step ends there; U is a stage's optimizer step), with how many a step has over "
             "all ranks, its median in ours and in the same rounds' floor with the transport, and the message "
             "it holds: the send of the action before it, the take of the one after. Sorted, a step's gaps put "
             "the median at the mean of the middle two, so the figure is set by the gaps about the middle, "
             "whatever the fastest and the slowest do.\n"]
    for label, now in runs.items():
        floor = data.get("floor_by_gap_us", {}).get(label, {})
        was = old.get(label, {}).get("by_gap_us", {})
        steps = now.get("steps") or 1
        last = max(int(stage) for name in now["by_gap_us"] for _, stage in re.findall(r"([A-Z])(\d+)", name))
        rows = [[name, f"{v['count'] / steps:.0f}", _was_now(was.get(name), v, "median_us"), _us(floor.get(name)),
                 message_of(name, last)]
                for name, v in sorted(now["by_gap_us"].items(), key=lambda item: item[1]["median_us"])]
        lines += [f"### {label}\n", R.table(["gap", "per step", "ours, median (µs)",
                                             "floor with the transport, median (µs)", "message"], rows), ""]
    return lines


def report_md(data: dict, machine: dict) -> str:
    m = machine
    before = data.get("baseline")
    command = f"python -m bench.executor_costs --rounds {data['rounds']}" + (
        f" --baseline {before['revision']}" if before else "")
    lines = ["# The executor's time between actions\n",
             f"Written by `{command}` ({m['date']}, {m['cores']} cores, load {m['load']}, torch {m['torch']}).\n",
             __doc__.split("\n\n", 2)[2].strip().replace("\n", " ") + "\n"]
    old = (before or {}).get("runs", {})
    if before is not None:
        lines.append(f"Each figure reads before -> after: before, the executor at {before['revision']}; after, "
                     "this tree's; both in every round, one after the other.\n")
    rows = [[label, _was_now(old.get(label), now, "median_us"), _was_now(old.get(label), now, "mean_us"),
             _was_now_range(old.get(label), now), R.verdict(now["median_us"] * 1e-6, TARGET_S)]
            for label, now in data["runs"].items()]
    lines += ["## Per action (plain runs)\n",
              "Each round is a launch of its own; its own median shows how far the figure moves from one launch "
              "to the next on this host.\n",
              R.table(["run", "host_after per action, median (µs)", "mean (µs)", "one round's median, min-max (µs)",
                       "target <= 30 µs"], rows), ""]
    floors = data.get("floor_us", {})
    if floors:
        # The whole floor is the last variant's: every message through the transport, as a run sends it.
        whole = executor_floor.VARIANTS[-1]
        rows = [[label, *(_us(floors[label].get(variant)) for variant in executor_floor.VARIANTS),
                 _us(now["median_us"]), _us(now["median_us"] - floors[label][whole]) if whole in floors[label] else "-",
                 R.verdict(floors[label][whole] * 1e-6, TARGET_S) if whole in floors[label] else "-"]
                for label, now in data["runs"].items() if label in floors]
        lines += ["## The floor under it (bench/executor_floor.py, the same rounds)\n",
                  R.prose(executor_floor.__doc__.split("\n\n", 1)[1]) + "\n",
                  R.table(["run", *(f"{variant}, median (µs)" for variant in executor_floor.VARIANTS),
                           "ours, median (µs)", f"ours above {whole} (µs)", f"{whole} <= 30 µs"], rows), ""]
    lines += _gaps_md(data, old)
    stepped = {label: now for label, now in data["runs"].items() if "step_ms_median" in now}
    if stepped:
        rows = [[label, _was_now(old.get(label), now, "step_ms_median"),
                 _was_now(old.get(label), now, "step_ms_mean"), str(now["steps"])] for label, now in stepped.items()]
        lines += ["## The step on the device clock (the same plain runs, ms)\n",
                  R.table(["run", "step, median (ms)", "mean (ms)", "steps"], rows), ""]
    lines += ["## Where it goes (probed runs, µs per action)\n"]
    for label, now in data["runs"].items():
        was = old.get(label, {})
        rows = [[part, _was_now(was.get("parts", {}).get(part), v, "mean_us"),
                 _was_now(was.get("parts", {}).get(part), v, "median_where_us"), R.pct(v["share_of_actions"], 0)]
                for part, v in now["parts"].items()]
        lines += [f"### {label} (probed host_after median {_was_now(was, now, 'probed_median_us')})\n",
                  R.table(["part", "mean per action", "median where it happens", "actions it follows"], rows), ""]
        by_was = was.get("by_action_us", {})
        shown = ["host_after", *PARTS, *IN_WAITS]
        rows = [[action, *(_was_now(by_was.get(action), v, part) for part in shown)]
                for action, v in now.get("by_action_us", {}).items()
                if v["host_after"] > 0 or any(v.get(p) for p in IN_WAITS)]
        lines += [f"Medians by action ({label}; an optimizer step U ends its rank's step: nothing follows it)\n",
                  R.table(["action", *shown], rows), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m bench.executor_costs", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a tiny model: checks the script, measures nothing")
    parser.add_argument("--baseline", metavar="REVISION", help="a git revision whose executor runs beside this one")
    parser.add_argument("--no-floor", action="store_true",
                        help="leave out the floor under the figure (bench/executor_floor.py): a round is half as long")
    parser.add_argument("--raw", metavar="FILE", help=argparse.SUPPRESS)  # a baseline round's figures (_baseline_round)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "EXECUTOR.md"))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.raw:
        import shutil
        folder = tempfile.mkdtemp(prefix="pipelab-executor-costs-")
        _start_probe_forkserver(folder)
        try:
            raw = measure_raw(args.rounds, args.quick, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        with open(args.raw, "w", encoding="utf-8") as f:
            json.dump(raw, f)
        return 0
    if args.baseline:
        import subprocess
        known = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", args.baseline + "^{commit}"],
                               capture_output=True)
        if known.returncode:
            parser.error(f"--baseline must name a commit of this repository, got {args.baseline!r}")
    R.write_report(args.out, measure(args.rounds, args.quick, args.baseline, floor=not args.no_floor), report_md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
