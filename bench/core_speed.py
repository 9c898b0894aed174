"""Do the cores run at one speed? The same stage's work on K physical cores at once, window after window.

    PYTHONPATH=. .venv/bin/python -m bench.core_speed [--windows 30] [--seconds 1.5] [--gap 5] [--cores K]

bench/PINNING.md found the p = 2 lessons' headlines (interleaved's bubble ratio, zero bubble's idle ratio)
spreading past 0.1 over 20 clicks, with theory at each click's own costs spreading as far: the stages'
relative speed changed from one launch to the next. This asks the host alone, with no engine in the way.
K processes (default: two, or four where the host has them), each pinned to a physical core of its own
(engine/runtime/placement.py physical_cores), run the same work for ``--seconds``: the command line's stage 0
at p = K (its mlp layers, 64 rows, a forward and a backward per iteration, one thread, as a rank computes),
and report their median iteration on the thread CPU clock. Windows start ``--gap`` seconds apart, about one
click. Reported: each window's times and its slowest ÷ fastest core; over the windows, each core's range and
core k ÷ core 0's. With two cores, also the p = 2 headlines the simulator gives when the two ranks run at the
speeds a window measured, at unit costs otherwise (F = 1, I = W = 1 per stage; a chunk 1/v of that): how far
the cores' speeds alone move each headline between clicks. Writes bench/CORE_SPEED.md and .json.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

from bench import report as R
from bench.clicks import SPREAD
from pipelab.engine.config import COMMAND_LINE_DEFAULTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADLINE_SPREAD = SPREAD["x"]  # a ratio headline's largest spread over the clicks (bench/clicks.py)
ROWS = COMMAND_LINE_DEFAULTS["microbatch_size"]
MICROBATCHES = 8  # the lessons' m (lessons/knobs.py)


def stage_work(cores: int):
    """The command line's stage 0 at p = ``cores``: its layers as one module, and a micro-batch."""
    import torch
    from torch import nn

    from pipelab.engine.config import RunConfig
    from pipelab.engine.model.builtin import build_layers
    from pipelab.engine.model.partition import partition
    from pipelab.engine.model.parts import model_config
    config = RunConfig(stages=cores, microbatches=MICROBATCHES, **COMMAND_LINE_DEFAULTS)
    layers = build_layers(model_config(config))
    first = partition(len(layers), cores)[0]
    return nn.Sequential(*(layers[i] for i in first)), torch.randn(ROWS, config.hidden)


def _iterate(module, x) -> None:
    module(x.requires_grad_()).sum().backward()


def _core(cpu: int, cores: int, seconds: float, together, out) -> None:
    """One pinned process: build and warm up its stage, wait for the others (``together``, a
    barrier), then time iterations for ``seconds``."""
    os.sched_setaffinity(0, {cpu})
    import torch
    torch.set_num_threads(1)  # as a rank computes (engine/device.py)
    module, x = stage_work(cores)
    for _ in range(5):
        _iterate(module, x)
    together.wait(timeout=60)  # a sibling that never got here: this one ends too (BrokenBarrierError)
    times, until = [], time.perf_counter() + seconds
    while time.perf_counter() < until:
        began = time.thread_time()
        _iterate(module, x)
        times.append(time.thread_time() - began)
    out.put((cpu, statistics.median(times)))


def window(cpus: list[int], seconds: float) -> dict[int, float]:
    """Each core's median iteration (seconds) over one window, all cores at once."""
    context = mp.get_context("fork")
    out, together = context.Queue(), context.Barrier(len(cpus))
    processes = [context.Process(target=_core, args=(cpu, len(cpus), seconds, together, out)) for cpu in cpus]
    for process in processes:
        process.start()
    try:
        found = dict(out.get(timeout=60 + seconds) for _ in processes)
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
    return {cpu: found[cpu] for cpu in cpus}


def headlines(speeds: tuple[float, float]) -> dict[str, float]:
    """The p = 2 lessons' headlines by the simulator when rank r's actions take ``speeds[r]`` times
    their unit cost: interleaved (v = 2) ÷ 1F1B bubble fraction, ZB-H1 ÷ 1F1B idle time per step
    (lessons/judging.py idle_ms: the mean over devices of the bubble fraction times the step)."""
    from pipelab.engine.schedules import build_schedule
    from pipelab.engine.theory.simulate import CostModel, simulate

    def played(name: str, chunks: int = 1):
        schedule = build_schedule(name, 2, MICROBATCHES, chunks if chunks > 1 else None)
        scale = [speeds[schedule.rank_of(s, 0)] / chunks for s in range(schedule.num_stages)]
        timeline = simulate(schedule, CostModel(forward=tuple(scale), backward_input=tuple(scale),
                                                backward_weight=tuple(scale)))
        bubble = statistics.fmean(timeline.bubble_fractions())
        return bubble, bubble * timeline.step_time()

    one_f_one_b, interleaved, zb_h1 = played("1f1b"), played("interleaved", 2), played("zb-h1")
    return {"interleaved ÷ 1F1B, bubble fraction": interleaved[0] / one_f_one_b[0],
            "ZB-H1 ÷ 1F1B, idle time per step": zb_h1[1] / one_f_one_b[1]}


def measure(windows: int, seconds: float, gap: float, cores: int, log=print) -> dict:
    from pipelab.engine.runtime.placement import allowed_cpus, physical_cores
    physical = physical_cores(allowed_cpus() or tuple(range(os.cpu_count() or 1)))
    if len(physical) < cores:
        raise SystemExit(f"core_speed: {cores} cores asked, the host has {len(physical)} physical cores")
    cpus = [core[0] for core in physical[:cores]]
    rows = []
    for k in range(windows):
        began = time.monotonic()
        times = window(cpus, seconds)
        rows.append({"at": time.strftime("%H:%M:%S"), "ms": [times[c] * 1e3 for c in cpus]})
        log(f"window {k + 1}/{windows}: " + ", ".join(f"cpu {c} {times[c] * 1e3:.3f} ms" for c in cpus))
        if k + 1 < windows:
            time.sleep(max(0.0, gap - (time.monotonic() - began)))
    data = {"cpus": cpus, "seconds": seconds, "gap": gap, "windows": rows}
    if cores == 2:
        for row in rows:
            base = row["ms"][0]
            row["headlines"] = headlines((1.0, row["ms"][1] / base))
    return data


def _range(values: list[float], digits: int = 3) -> str:
    return f"{min(values):.{digits}f} - {max(values):.{digits}f}"


def report_md(data: dict, machine: dict) -> str:
    cpus, rows = data["cpus"], data["windows"]
    lines = [
        "# Do the cores run at one speed?", "",
        f"Written by `python -m bench.core_speed --windows {len(rows)} --seconds {data['seconds']:g} "
        f"--gap {data['gap']:g} --cores {len(cpus)}` ({machine['date']}, {machine['cores']} cores, load "
        f"{machine['load']}, torch {machine['torch']}).", "",
        f"{len(cpus)} processes, each pinned to a physical core of its own (cpus {', '.join(map(str, cpus))}), run "
        f"the same work at once for {data['seconds']:g} s: the command line's stage 0 at p = {len(cpus)} (its mlp "
        f"layers, {ROWS} rows, a forward and a backward per iteration, one thread, as a rank computes). Each reports "
        f"its median iteration on its thread CPU clock; windows start {data['gap']:g} s apart, about one click. "
        "No engine, no messages: what this shows is the host's. A pipeline runs at its slowest stage's pace, so a "
        "core that is slower in one launch than in the next moves every figure that depends on the stages' "
        "balance (the bubble breakdown's row \"+ each stage's own costs\").", "",
        "## Over the windows", "",
        "| core | median iteration, min - max (ms) | median (ms) | ÷ core " + str(cpus[0]) + ", min - max | spread |",
        "|---|---|---|---|---|",
    ]
    for i, cpu in enumerate(cpus):
        own = [row["ms"][i] for row in rows]
        ratio = [row["ms"][i] / row["ms"][0] for row in rows]
        spread = f"{max(ratio) - min(ratio):.3f}" if i else "-"
        lines.append(f"| cpu {cpu} | {_range(own)} | {statistics.median(own):.3f} | "
                     f"{_range(ratio) if i else '-'} | {spread} |")
    imbalance = [max(row["ms"]) / min(row["ms"]) for row in rows]
    lines += ["", f"Slowest ÷ fastest core in a window: {_range(imbalance)}, median "
                  f"{statistics.median(imbalance):.3f}."]
    if rows and "headlines" in rows[0]:
        lines += ["", "## The p = 2 headlines at these speeds (simulator, unit costs otherwise)", "",
                  "| headline | min - max over the windows | spread | bench/clicks.py spread |", "|---|---|---|---|"]
        for name in rows[0]["headlines"]:
            values = [row["headlines"][name] for row in rows]
            lines.append(f"| {name} | {_range(values)} | {max(values) - min(values):.3f} | {HEADLINE_SPREAD:g} |")
        lines += ["", f"Each headline at p = 2, m = {MICROBATCHES} (v = 2 for interleaved), rank r's actions at "
                  "core r's time in the window over core 0's. At unit costs a p = 2 step idles only "
                  "(p-1)/(m+p-1) = 1/9, the case most sensitive to the stages' balance: a measured run idles more "
                  "(its messages, the engine's time between actions), so the same speeds move its headlines less."]
    lines += ["", "## Each window", "", "| at | " + " | ".join(f"cpu {c} (ms)" for c in cpus)
              + " | slowest ÷ fastest |", "|---|" + "---|" * (len(cpus) + 1)]
    for row, ratio in zip(rows, imbalance):
        lines.append(f"| {row['at']} | " + " | ".join(f"{ms:.3f}" for ms in row["ms"]) + f" | {ratio:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from pipelab.engine.runtime.placement import allowed_cpus, physical_cores
    parser = argparse.ArgumentParser(prog="python -m bench.core_speed", description=__doc__.split("\n")[0])
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=1.5, help="each window's length (default 1.5)")
    parser.add_argument("--gap", type=float, default=5.0,
                        help="seconds from one window's start to the next (default 5)")
    parser.add_argument("--cores", type=int, default=None, help="physical cores (default: 4, or 2 where fewer)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "CORE_SPEED.md"))
    args = parser.parse_args(argv)
    physical = len(physical_cores(allowed_cpus() or tuple(range(os.cpu_count() or 1))))
    cores = args.cores if args.cores is not None else (4 if physical >= 4 else 2)
    if args.windows < 1 or args.seconds <= 0 or args.gap < 0:
        parser.exit(2, f"{parser.prog}: error: --windows must be >= 1, --seconds > 0 and --gap >= 0\n")
    if not 2 <= cores <= physical:
        parser.exit(2, f"{parser.prog}: error: --cores must be 2 to {physical} (this host's physical cores)\n")
    data = measure(args.windows, args.seconds, args.gap, cores, log=lambda s: print(s, file=sys.stderr, flush=True))
    R.write_report(args.out, data, report_md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
