"""What one call costs between two actions, against the same call with warm caches (docs/measuring.md).

    .venv/bin/python -m bench.cold_calls [--rounds N] [--quick] [--out FILE.md]

The executor's own time between actions is mostly first touches: each frame, object and
library routine it reaches right after an action whose matmuls ran through the caches
(bench/EXECUTOR.md). Here each call a shared-memory receive made per message is timed
alone (time.perf_counter_ns around it, median of 300 per round), once straight after the
last call ("warm") and once straight after a stage's forward and backward at the command
line's defaults (8 Linear layers of 512 with GELU, 64 rows: "after an action"), one thread
as a rank runs. Beside each, what the transport does instead since it makes a slot's tensor
once (engine/runtime/transport.py SharedMemoryTransport.message_in). Writes
bench/COLD_CALLS.md and .json.
"""

from __future__ import annotations

import statistics

from bench import report as R

REPEATS = 300


def _calls(quick: bool):
    """(name, the call, the stage's action to run before it) for every call measured."""
    import mmap
    import tempfile

    import numpy as np
    import torch

    torch.set_num_threads(1)  # as a rank computes (engine/device.py)
    width, rows, layers = (64, 4, 2) if quick else (512, 64, 8)
    stage = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(width, width), torch.nn.GELU())])
    x = torch.randn(rows, width)

    def action():
        stage(x).sum().backward()

    numel, shape = rows * width, (rows, width)
    with tempfile.TemporaryFile() as f:
        f.truncate(8 * numel + 4096)
        mapped = mmap.mmap(f.fileno(), 8 * numel + 4096)
    with tempfile.TemporaryFile() as f:
        f.truncate(4 * numel)
        slot = torch.frombuffer(mmap.mmap(f.fileno(), 4 * numel), dtype=torch.float32).view(shape)
    slot.zero_()  # its pages mapped, as the transport maps a channel's at set-up (transport.fault_in)
    stamps, words = np.frombuffer(mapped, dtype=np.float64), memoryview(mapped).cast("d")
    made = torch.frombuffer(mapped, dtype=torch.float32, count=numel).view(shape)
    cached = {(0, 0, shape): made}
    device = torch.device("cpu")
    calls = [
        ("torch.frombuffer(...).view(shape): the slot's tensor, made per message",
         lambda: torch.frombuffer(mapped, dtype=torch.float32, count=numel).view(shape)),
        ("the slot's tensor, made once: a dict look-up", lambda: cached.get((0, 0, shape))),
        ("float(numpy_stamps[slot]): the stamp through numpy", lambda: float(stamps[3])),
        ("words[index]: the stamp through a memoryview", lambda: words[3]),
        ("torch.device.type: is the receiver on a GPU?", lambda: device.type),
        ("tensor.numel() * tensor.element_size(): the RECV event's bytes", lambda: made.numel() * made.element_size()),
        (f"slot.copy_(message): a send's copy into its slot ({4 * numel // 1024} KiB), for scale",
         lambda: slot.copy_(x)),
    ]
    return calls, action


def _timed(call, before) -> float:
    from time import perf_counter_ns
    out = []
    for _ in range(REPEATS):
        before()
        t = perf_counter_ns()
        call()
        out.append(perf_counter_ns() - t)
    return statistics.median(out) / 1e3


def measure(rounds: int, quick: bool) -> dict:
    calls, action = _calls(quick)
    rows = {name: {"warm": [], "after an action": []} for name, _ in calls}
    for r in range(rounds):
        for name, call in calls:
            rows[name]["warm"].append(_timed(call, lambda: None))
            rows[name]["after an action"].append(_timed(call, action))
        print(f"round {r + 1} of {rounds} done", flush=True)
    return {"rounds": rounds, "quick": quick, "repeats": REPEATS, "us": rows}


def report_md(data: dict, machine: dict) -> str:
    rows = []
    for name, sides in data["us"].items():
        warm, cold = sides["warm"], sides["after an action"]
        rows.append([name, f"{statistics.median(warm):.2f}", f"{statistics.median(cold):.2f}",
                     f"{min(cold):.2f}-{max(cold):.2f}"])
    size = "a tiny stage (--quick: checks the script, measures nothing)" if data["quick"] else \
        "8 Linear layers of 512 with GELU, 64 rows: a stage of the command line's defaults at p = 2"
    return "\n".join([
        "# One call between two actions, warm and after an action",
        "",
        f"Written by `python -m bench.cold_calls --rounds {data['rounds']}` ({machine['date']}, {machine['cores']} "
        f"cores, load {machine['load']}, torch {machine['torch']}).",
        "",
        f"Each figure: the median of {data['repeats']} timings of the call alone (perf_counter_ns), the "
        f"median over rounds; \"after an action\" times it straight after a stage's forward and backward "
        f"({size}), one thread, as a rank runs. The rows in pairs: what a shared-memory receive did per "
        "message, then what it does instead.",
        "",
        R.table(["call", "warm (µs)", "after an action (µs)", "after an action, rounds' min-max (µs)"], rows),
        "",
    ])


def main(argv=None) -> None:
    args = R.rounds_args("python -m bench.cold_calls", __doc__, "bench/COLD_CALLS.md", argv)
    R.write_report(args.out, measure(args.rounds, args.quick), report_md)


if __name__ == "__main__":
    main()
