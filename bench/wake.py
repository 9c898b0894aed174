"""What a sleeping receiver costs, and what polling does to a run: a message's wake-up, three ways.

    PYTHONPATH=. .venv/bin/python -m bench.wake                  # 2000 pings, 5 runs and 10 clicks per mode
    PYTHONPATH=. .venv/bin/python -m bench.wake --pings 200 --runs 1 --clicks 1 --out /tmp/w.md

A pinned rank with a core to spare polls for its message before it sleeps (engine/runtime/placement.py,
PIPELAB_POLL; engine/runtime/transport.py SharedMemoryTransport.take). This measures why, and why
not without a core to spare, each sleeping and polling:

1. Ping-pong through the shared-memory transport itself: two processes, each pinned to a core of
   its own, one 128 KiB message (the command line's boundary tensor, 64 x 512 float32) each way.
   Before each ping the sender waits 300 µs, so that a sleeping receiver is asleep when it comes.
   Reported: the sender's thread CPU time in ``isend`` (the copy, and the wake-up where the
   receiver sleeps) and the round trip on the wall clock, medians over the pings.
2. The engine's runs: 1F1B at p = 2 and the command line's defaults (m = 8), ranks pinned
   (PIPELAB_PIN=ranks), PIPELAB_POLL=0 (they sleep) and 1 (they poll), taking turns. Reported
   per mode: the link cost each run measures by ping-pong (the minimum of 40), the step on both
   clocks, and how long a receive waited on the wall clock (the share of waits longer than
   POLL_S: those sleep even where the ranks poll).
3. The lessons' comparisons at p = 2 (naive, gpipe, interleaved: bench/clicks.py presses each as
   its page does), ranks pinned, sleeping and polling in ABBA order: each step ratio's spread over
   the clicks (issue 45's target: at most 0.05).

On a host with p + 1 cores or more, parts 2 and 3 pin as PIPELAB_PIN=ranks does all the same.
Writes bench/WAKE.md and .json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from bench import report as R

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = (64, 512)
SETTLE_S = 300e-6
MODES = (("sleeping", "0"), ("polling", "1"))  # (name, PIPELAB_POLL); ranks pinned (PIPELAB_PIN=ranks) in both
LESSONS = ("naive", "gpipe", "interleaved")
STEP_SPREAD = 0.05


def _busy(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def _echo(transport, pings: int, cpu: int | None) -> None:
    """Rank 1: every message straight back."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    for _ in range(pings):
        tensor, _ = transport.irecv(SHAPE, 0).wait()
        transport.isend(tensor, 0.0, 0)
    os._exit(0)


def ping_pong(pings: int, poll_s: float) -> dict:
    """Part 1, one mode: the sender's isend CPU time and the round trip, medians in µs."""
    import multiprocessing as mp

    import torch

    from pipelab.engine.runtime.transport import SharedMemoryTransport
    context = mp.get_context("fork")
    channels = [(0, 1), (1, 0)]
    from pipelab.engine.runtime.placement import allowed_cpus, physical_cores
    cores = physical_cores(allowed_cpus() or ())  # two physical cores, not one core's hyperthreads
    mine, theirs = (cores[0][0], cores[1][0]) if len(cores) >= 2 else (None, None)
    numel = SHAPE[0] * SHAPE[1]
    with tempfile.TemporaryDirectory(prefix="pipelab-wake-") as folder:
        semaphores = {c: context.Semaphore(0) for c in channels}
        ends = [SharedMemoryTransport(r, folder, semaphores, {c: 1 for c in channels}, {c: numel for c in channels},
                                      10.0, poll_s=poll_s) for r in (0, 1)]
        for end in ends:
            end.create_outgoing()
        for end in ends:
            end.open_incoming()
        echo = context.Process(target=_echo, args=(ends[1], pings, theirs))
        echo.start()
        before = os.sched_getaffinity(0)
        try:
            if mine is not None:
                os.sched_setaffinity(0, {mine})
            payload, sends, trips = torch.randn(SHAPE), [], []
            for _ in range(pings):
                _busy(SETTLE_S)
                began, wall = time.thread_time(), time.perf_counter()
                ends[0].isend(payload, 0.0, 1)
                sends.append(time.thread_time() - began)
                ends[0].irecv(SHAPE, 1).wait()
                trips.append(time.perf_counter() - wall)
        finally:
            os.sched_setaffinity(0, before)
            echo.join(30)
            if echo.is_alive():
                echo.kill()
    return {"send_us": statistics.median(sends) * 1e6, "round_trip_us": statistics.median(trips) * 1e6,
            "pings": pings, "own_cores": mine is not None}


def _mode_env(poll: str) -> dict[str, str]:
    """A mode's environment: ranks pinned (PIPELAB_PIN=ranks), PIPELAB_POLL=``poll``."""
    return {"PIPELAB_PIN": "ranks", "PIPELAB_POLL": poll}


def engine_run(poll: str) -> dict:
    """Part 2, one run: its link cost, step on both clocks and receive waits (wall clock)."""
    from bench.clicks import environment
    from pipelab.engine.config import COMMAND_LINE_DEFAULTS, RunConfig
    from pipelab.engine.runtime.launch import run
    with environment(_mode_env(poll)):
        result = run(RunConfig(schedule="1f1b", stages=2, microbatches=8, **COMMAND_LINE_DEFAULTS))
    steps = set(result.measured_steps())
    waits = [e.wall_end - e.wall_start for e in result.timeline.events if e.kind == "recv" and e.step in steps]
    m = result.metrics
    return {"link_us": m.link_cost_s * 1e6, "wall_step_ms": statistics.median(m.wall_step_times_s) * 1e3,
            "device_step_ms": m.device_step_time_s * 1e3, "waits_s": waits,
            "polls": bool(m.placement and m.placement.polls)}


def clicks(count: int) -> dict:
    """Part 3: every comparing button of LESSONS at p = 2, ``count`` clicks per mode, ABBA."""
    from bench.clicks import buttons, compares, press_in_turn
    plan = [b for b in buttons(list(LESSONS)) if compares(b)]
    done: dict[str, list] = {name: [] for name, _ in MODES}

    def clicked(k, button, name, click) -> None:
        print(f"click {k + 1}/{count} {button.slug} {name}: {click.status} ({click.seconds:.1f} s)", flush=True)
    press_in_turn(plan, {name: _mode_env(poll) for name, poll in MODES}, count, 2, done, clicked)
    return done


def measure(pings: int, runs: int, count: int) -> dict:
    from pipelab.engine.runtime.placement import POLL_S
    data = {"pings": {}, "runs": {name: [] for name, _ in MODES}, "poll_s": POLL_S, "clicks": {}}
    for name, _ in MODES:
        data["pings"][name] = ping_pong(pings, POLL_S if name == "polling" else 0.0)
        print(name, data["pings"][name], flush=True)
    for k in range(runs):
        for name, poll in (MODES if k % 2 == 0 else MODES[::-1]):  # ABBA: a drifting host moves both alike
            data["runs"][name].append(engine_run(poll))
            print(name, {key: v for key, v in data["runs"][name][-1].items() if key != "waits_s"}, flush=True)
    data["clicks"] = clicks(count)
    return data


def step_spreads(done: dict) -> list[list]:
    """Part 3's table rows: per lesson, ratio and mode, min / median / max and spread (bench.clicks.summarize)."""
    from bench.clicks import Click, summarize
    rows = []
    for name, runs in done.items():
        made = [Click.from_dict(c) for c in runs]
        for row in summarize(made):
            for o in row["steps"]:
                rows.append([row["lesson"], o["quantity"].removeprefix("step time, "), name,
                             f"{R.num(o['min'])} / {R.num(o['median'])} / {R.num(o['max'])}", R.num(o["spread"]),
                             R.verdict(o["spread"], STEP_SPREAD), str(row["clicks"])])
    return sorted(rows, key=lambda r: (LESSONS.index(r[0]) if r[0] in LESSONS else 99, r[1], r[2]))


def report_md(data: dict, machine: dict) -> str:
    poll_ms = data["poll_s"] * 1e3
    lines = [
        "# A message's wake-up: sleeping receivers and polling ones",
        "",
        f"Written by `python -m bench.wake` on {machine['date']} ({machine['cpu']}, {machine['cores']} cores, "
        f"load {machine['load']}, torch {machine['torch']}). A polling rank polls for its message for up to "
        f"{poll_ms:g} ms before it sleeps (engine/runtime/transport.py, SharedMemoryTransport.take); a sleeping "
        "one is woken by its sender's sem_post. By default only a pinned rank with a core to spare on the host "
        "polls (engine/runtime/placement.py); here both modes are forced (PIPELAB_POLL=0 and 1).",
        "",
        "## 1. Ping-pong through the shared-memory transport (two processes, a core each)",
        "",
        f"One 64 x 512 float32 message (128 KiB) each way, {SETTLE_S * 1e6:.0f} µs between pings so that a "
        "sleeping receiver is asleep; medians over the pings.",
        "",
        "| receiver | sender's isend, thread CPU (µs) | round trip, wall (µs) | pings |",
        "|---|---|---|---|",
    ]
    for name, row in data["pings"].items():
        lines.append(f"| {name} | {row['send_us']:.1f} | {row['round_trip_us']:.1f} | {row['pings']} |")
    lines += [
        "",
        "## 2. The engine: 1F1B, p = 2, the command line's defaults, m = 8",
        "",
        "Ranks pinned (PIPELAB_PIN=ranks), PIPELAB_POLL=0 (they sleep) and 1 (they poll), taking turns. "
        "The link cost is each run's own ping-pong minimum (what the device clock and the simulator add per "
        "message); steps are medians of each run's measured steps, then the median over runs; waits are every "
        "receive of every run's measured steps on the wall clock.",
        "",
        f"| ranks | link cost (µs), min / median / max | step, wall (ms) | step, device (ms) | receive wait, "
        f"median (µs) | 90th percentile (µs) | waits over {poll_ms:g} ms | runs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, runs in data["runs"].items():
        if not runs:
            continue
        links = sorted(r["link_us"] for r in runs)
        waits = sorted(w for r in runs for w in r["waits_s"])
        over = sum(w > data["poll_s"] for w in waits) / len(waits) if waits else 0.0
        p90 = waits[int(0.9 * (len(waits) - 1))] * 1e6 if waits else 0.0
        lines.append(
            f"| {name} | {links[0]:.1f} / {statistics.median(links):.1f} / {links[-1]:.1f} | "
            f"{statistics.median(r['wall_step_ms'] for r in runs):.1f} | "
            f"{statistics.median(r['device_step_ms'] for r in runs):.1f} | "
            f"{statistics.median(waits) * 1e6 if waits else 0.0:.0f} | {p90:.0f} | {R.pct(over)} | {len(runs)} |")
    if any(data["clicks"].values()):
        lines += ["", "## 3. The lessons' comparisons at p = 2: step ratios over the clicks, ranks pinned", "",
                  "Each comparing button of " + ", ".join(LESSONS) + " at its lesson's defaults but p = 2, pressed "
                  "as its page does (bench/clicks.py), sleeping and polling in ABBA order; device clock. Target "
                  f"(issue 45): every step ratio spreads at most {STEP_SPREAD} over the clicks.", "",
                  R.table(["lesson", "ratio", "ranks", "min / median / max", "spread", f"<= {STEP_SPREAD}", "clicks"],
                          step_spreads(data["clicks"]))]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.wake", description=__doc__.splitlines()[0])
    parser.add_argument("--pings", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5, help="engine runs per mode (default 5)")
    parser.add_argument("--clicks", type=int, default=10, help="clicks per button and mode (default 10)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "WAKE.md"))
    args = parser.parse_args(argv)
    if min(args.pings, args.runs, args.clicks) < 1:
        parser.exit(2, f"{parser.prog}: error: --pings, --runs and --clicks must be >= 1\n")
    R.write_report(args.out, measure(args.pings, args.runs, args.clicks), report_md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
