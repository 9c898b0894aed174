"""One prepared check of the engine on a GPU, with the CPU engine beside it (issue 30).

    .venv/bin/python -m bench.gpu_check [--out DIR] [--quick] [--budget SECONDS]

On a machine with CUDA it runs every synchronous schedule of the registry at p=2 and p=4
with ``device="cuda"`` and the gradient check, all ranks on the one GPU (engine/device.py,
``Device.shared``: gloo between them, messages through shared memory), and reports per run
the bubble on the device clock (CUDA events) beside the simulator's and the formula's, and
each rank's peak from the CUDA allocator beside our own count, split into what held it
(engine/runtime/cuda_memory.py). Then torch's own runtime (``--runtime torch``) runs the
schedules its CSV takes on the GPU, with the same check. Then it runs the CPU engine
on the same machine at p=2 and p=4, where the wall clock and the device clock should agree
wherever every rank has a core of its own.

Without CUDA the GPU part is skipped, saying why, and the CPU part runs at the quick size:
CI keeps the script working. It writes report.md and report.json, and every run's result
JSON under runs/, into DIR (default bench/out/gpu_check/, git-ignored). Exit status 0 when
every run finished and passed its check, 1 otherwise, 2 for bad arguments. Nothing here
imports torch before the arguments are checked.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace

from bench import report as R
from bench.measure import log
from bench.plan import TARGETS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "bench", "out", "gpu_check")
STAGES = (2, 4)
DATA_PARALLEL = (2, 2, ("1f1b", "interleaved", "zb-v"))
"""(p, d, schedules): the data-parallel runs, d pipelines of p ranks, every stage's gradients
all-reduced through a process group of their own (engine/runtime/gradient_reduce.py); on one GPU
the 4 ranks share it through gloo, as the pipelines' p ranks do."""
BUDGET_S = 420.0
"""Runs not started within this many seconds are reported as not run: with start-up and the
report the whole command stays under 8 minutes, inside a lent machine's 15."""
RUN_TIMEOUT_S = 90.0
"""One run's own limit: a run that hangs (on a GPU, say) costs this much, not the budget."""
MIN_RUN_S = 10.0
"""A run is not started with less of the budget left than this."""
FAILURES_TO_STOP = 2
"""A section stops after this many failed runs in a row: a GPU path that breaks, breaks
every run alike, and each failure spends device time."""
CHECK_TOLERANCE = {"cpu": 1e-5, "cuda": 1e-4}
"""Largest relative difference from one process that passes. CPU runs agree to 1e-5
(tests/test_engine_run.py). A GPU sums in other orders than the CPU reference (cuBLAS's
blocking), so its float32 rounding differs more; TF32 stays off (torch's default for float32
matmuls). A wrong gradient (a lost micro-batch, a missing 1/m) is off by far more than 1e-2."""


@dataclass(frozen=True)
class Size:
    """The model and counts of every run of one check."""
    model: str
    layers: int
    hidden: int
    microbatch_size: int
    microbatches: int
    steps: int

    def config(self, schedule: str, stages: int, device: str, timeout_s: float, runtime: str = "engine",
               data_parallel: int = 1):
        from pipelab.engine.config import RunConfig, default_layers
        config = RunConfig(schedule=schedule, stages=stages, microbatches=self.microbatches, model=self.model,
                           layers=self.layers, hidden=self.hidden, microbatch_size=self.microbatch_size,
                           steps=self.steps, device=device, check=True, timeout_s=timeout_s, runtime=runtime,
                           data_parallel=data_parallel)
        # A schedule with more stages than layers (a future v = 3, say) gets one layer each.
        return config.with_(layers=max(self.layers, default_layers(config)[0]))

    def text(self) -> str:
        from pipelab.engine.results.windows import measured_steps
        warm = self.steps - len(measured_steps(self.steps))  # WARM_UP_STEPS, fewer in a short run
        return (f"{self.model}: {self.layers} x Linear({self.hidden}), micro-batch {self.microbatch_size}, "
                f"m={self.microbatches}, {self.steps} steps (the first {warm} warm-up, not measured)")


# Wide enough that a GPU action is more than a few kernel launches, small enough that the CPU
# part (one thread per rank) takes about a minute and a half of the budget.
FULL = Size(model="mlp", layers=8, hidden=1024, microbatch_size=128, microbatches=8, steps=4)
QUICK = Size(model="mlp", layers=8, hidden=64, microbatch_size=4, microbatches=8, steps=3)


@dataclass(frozen=True)
class CheckRow:
    """The run's gradient check: largest relative differences from one process."""
    grad_max_rel_diff: float | None
    weight_max_rel_diff: float | None
    losses_max_rel_diff: float | None
    tolerance: float
    passed: bool
    replicas_identical: bool | None = None
    """With data parallelism: every replica's final weights equal replica 0's, bit for bit."""


@dataclass(frozen=True)
class MemoryRow:
    """One rank's peak memory on its device, in bytes."""
    rank: int
    counted_bytes: int
    """Our count: peak activations (engine/runtime/memory.py) + parameters + gradients + optimizer
    state + stashed weights. Shared-memory message slots are host memory: not counted."""
    allocator_peak_bytes: int | None
    """torch.cuda.max_memory_allocated of the rank's process; None on CPU."""
    breakdown: dict | None = None
    """What held the allocator's peak (records.CudaPeakBreakdown as a dict); our runtime on a GPU."""


@dataclass(frozen=True)
class RunRow:
    """One finished run: its figures, as its RunResult has them."""
    device: str
    schedule: str
    stages: int
    microbatches: int
    chunks: int
    transport: str
    bubble_device: float
    bubble_wall: float
    bubble_simulated: float
    """The simulator fed this run's per-stage mean costs."""
    bubble_simulated_own_steps: float | None
    """Each measured step played with its own costs: the device clock's own model."""
    bubble_formula: float | None
    step_time_s: float
    device_step_time_s: float
    check: CheckRow
    memory: tuple[MemoryRow, ...]
    result_file: str
    """The run's result JSON, relative to the report."""
    runtime: str = "engine"
    data_parallel: int = 1
    """d pipelines side by side; the check then also holds the replicas bit-identical."""

    @property
    def processes(self) -> int:
        return self.stages * self.data_parallel

    @property
    def layout(self) -> str:
        return layout_text(self.stages, self.data_parallel)

    @property
    def status(self) -> str:
        return "ran"

    @property
    def passed(self) -> bool:
        return self.check.passed


@dataclass(frozen=True)
class Unfinished:
    """A run that failed, or was not started."""
    device: str
    schedule: str
    stages: int
    failed: bool
    reason: str
    refused: bool = False
    """Not run because the runtime cannot run it (torch's CSV): no failure of the check."""
    data_parallel: int = 1

    @property
    def layout(self) -> str:
        return layout_text(self.stages, self.data_parallel)

    @property
    def status(self) -> str:
        return "failed" if self.failed else "not run"

    @property
    def passed(self) -> bool:
        return self.refused


Row = RunRow | Unfinished


def layout_text(stages: int, data_parallel: int) -> str:
    """The "p" column: "2", or "2, d = 2" for d pipelines side by side."""
    return str(stages) if data_parallel == 1 else f"{stages}, d = {data_parallel}"


@dataclass(frozen=True)
class Section:
    """One device's runs on one runtime, or why there are none."""
    device: str
    skipped: str | None
    rows: tuple[Row, ...] = ()
    runtime: str = "engine"

    @property
    def passed(self) -> bool:
        return self.skipped is not None or all(row.passed for row in self.rows)


@dataclass(frozen=True)
class GpuInfo:
    name: str
    memory_gib: float
    count: int
    cuda: str


@dataclass(frozen=True)
class Report:
    machine: dict
    cores: int
    gpu: GpuInfo | None
    size: Size
    size_note: str
    sections: tuple[Section, ...]
    seconds: float
    budget_s: float
    schedules: tuple[str, ...] = field(default=())
    complete: bool = True
    """False for the report written between the GPU part and the CPU part."""

    @property
    def passed(self) -> bool:
        return self.complete and all(section.passed for section in self.sections)


# ---- what runs -------------------------------------------------------------------------

def synchronous_schedules() -> tuple[str, ...]:
    """Every registered schedule that updates once per step (the ones --check can compare)."""
    from pipelab.engine.schedules import REGISTRY
    return tuple(name for name, info in REGISTRY.items() if info.synchronous)


def cuda_missing() -> str | None:
    """Why this machine cannot run the GPU part, or None when it can."""
    import torch
    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) is built without CUDA"
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return f"torch {torch.__version__} has CUDA {torch.version.cuda} but sees no GPU"
    return None


def gpu_info() -> GpuInfo | None:
    """The first GPU, or None. Read once a section's runs are over: reading it makes a CUDA
    context in this process, which should not sit on the GPU beside the ranks'."""
    import torch
    if cuda_missing() is not None:
        return None
    try:
        props = torch.cuda.get_device_properties(0)
    except RuntimeError:  # the report is still worth writing without the GPU's name
        return None
    return GpuInfo(props.name, props.total_memory / 2**30, torch.cuda.device_count(), str(torch.version.cuda))


class Budget:
    def __init__(self, seconds: float):
        self.total, self.deadline = seconds, time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def check_row(check, device: str) -> CheckRow:
    """A result's GradientCheck against the device's tolerance; a run without one fails."""
    tolerance = CHECK_TOLERANCE[device]
    if check is None:
        return CheckRow(None, None, None, tolerance, passed=False)
    diffs = (check.grad_max_rel_diff, check.weight_max_rel_diff, check.losses_max_rel_diff)
    identical = None if check.replica_weight_max_diff is None else check.replica_weight_max_diff == 0.0
    passed = all(d is not None and d <= tolerance for d in diffs) and identical is not False  # NaN fails too
    return CheckRow(*diffs, tolerance=tolerance, passed=passed, replicas_identical=identical)


def memory_rows(memory: dict) -> tuple[MemoryRow, ...]:
    return tuple(MemoryRow(rank, m.peak_activation_bytes + m.parameter_bytes + m.gradient_bytes + m.optimizer_bytes
                           + m.peak_stashed_weight_bytes, m.cuda_peak_bytes,
                           None if getattr(m, "cuda_breakdown", None) is None else asdict(m.cuda_breakdown))
                 for rank, m in sorted(memory.items()))


def row_from_result(result, result_file: str) -> RunRow:
    """The report's row of a finished run (an pipelab.engine.results.result.RunResult)."""
    m, config = result.metrics, result.config
    device = result.device or config.device
    return RunRow(device=device, schedule=config.schedule, stages=config.stages, microbatches=config.microbatches,
                  chunks=result.schedule.chunks, transport=result.transport or "unknown",
                  bubble_device=m.device_bubble_fraction, bubble_wall=m.wall_bubble_fraction,
                  bubble_simulated=m.simulated_bubble_fraction,
                  bubble_simulated_own_steps=m.simulated_bubble_fraction_per_step_costs,
                  bubble_formula=m.formula_bubble_fraction, step_time_s=m.wall_step_time_s,
                  device_step_time_s=m.device_step_time_s, check=check_row(result.check, device),
                  memory=memory_rows(result.memory), result_file=result_file, runtime=config.runtime,
                  data_parallel=config.data_parallel)


def run_one(size: Size, schedule: str, stages: int, device: str, budget: Budget, out: str,
            runtime: str = "engine", data_parallel: int = 1) -> Row:
    from pipelab.engine.runtime.launch import run
    left = budget.left()
    if left < MIN_RUN_S:
        return Unfinished(device, schedule, stages, failed=False,
                          reason=f"not started: the time budget ({budget.total:g} s) was spent",
                          data_parallel=data_parallel)
    tag = "" if runtime == "engine" else f"{runtime}-"
    replicas = "" if data_parallel == 1 else f"-d{data_parallel}"
    name = os.path.join("runs", f"{device}-{tag}{schedule}-p{stages}{replicas}.json")
    try:
        result = run(size.config(schedule, stages, device, min(RUN_TIMEOUT_S, left), runtime, data_parallel))
        result.write_json(os.path.join(out, name))
        return row_from_result(result, name)
    # A failed run (or a result this script misreads: the GPU's results are read here first)
    # is a row of the report, not the end of the whole check.
    except Exception as err:  # noqa: BLE001
        return Unfinished(device, schedule, stages, failed=True, reason=R.error_text(err), data_parallel=data_parallel)


def torch_refusal(size: Size, schedule: str, stages: int) -> str | None:
    """Why torch's runtime cannot run this schedule (its CSV format), or None."""
    from pipelab.engine.actions import ScheduleError
    from pipelab.engine.config import ConfigError
    try:
        size.config(schedule, stages, "cuda", RUN_TIMEOUT_S, "torch").check_values()
    except (ConfigError, ScheduleError) as err:
        return str(err)
    return None


def layouts(schedules: tuple[str, ...], runtime: str) -> list[tuple[str, int, int]]:
    """(schedule, p, d) of every run of a section: every schedule at each of STAGES, and on our
    engine DATA_PARALLEL's runs right after the pipelines of their depth (torch's runtime runs one
    pipeline), so that a budget spent before the deeper pipelines still checks data parallelism."""
    dp_stages, replicas, chosen = DATA_PARALLEL
    runs = []
    for stages in STAGES:
        runs += [(schedule, stages, 1) for schedule in schedules]
        if runtime == "engine" and stages == dp_stages:
            runs += [(schedule, stages, replicas) for schedule in chosen if schedule in schedules]
    return runs


def run_section(device: str, size: Size, schedules: tuple[str, ...], budget: Budget, out: str,
                runtime: str = "engine") -> Section:
    rows: list[Row] = []
    failures = 0
    for schedule, stages, replicas in layouts(schedules, runtime):
        refused = torch_refusal(size, schedule, stages) if runtime == "torch" else None
        if refused is not None:
            rows.append(Unfinished(device, schedule, stages, failed=False, reason=refused, refused=True))
            continue
        if failures >= FAILURES_TO_STOP:
            rows.append(Unfinished(device, schedule, stages, failed=False,
                                   reason=f"not started: the {failures} runs before it failed",
                                   data_parallel=replicas))
            continue
        row = run_one(size, schedule, stages, device, budget, out, runtime, replicas)
        failures = failures + 1 if isinstance(row, Unfinished) and row.failed else 0
        log(f"{device} {runtime} {schedule} p={layout_text(stages, replicas)}: "
            + (row_text(row) if isinstance(row, RunRow) else row.reason))
        rows.append(row)
    return Section(device, None, tuple(rows), runtime)


def row_text(row: RunRow) -> str:
    return (f"bubble device {R.num(row.bubble_device)}, wall {R.num(row.bubble_wall)}, "
            f"simulator {R.num(row.bubble_simulated)}, formula {R.num(row.bubble_formula)}; "
            f"check {'passed' if row.check.passed else 'FAILED'}")


PARTS = ("all", "cuda", "torch", "cpu")
"""--part: every section, or one: our engine on the GPU, torch's runtime on the GPU, the CPU engine."""


def run_check(out: str, quick: bool, budget_s: float, part: str = "all") -> Report:
    """Both sections; the report is written once the GPU's is done too, so a command stopped
    from outside during the CPU part still leaves the GPU's figures in ``out``."""
    from bench.report import machine_description
    from pipelab.engine.config import usable_cores
    started = time.monotonic()
    budget = Budget(budget_s)
    schedules = synchronous_schedules()
    missing = cuda_missing()
    size = QUICK if quick or missing else FULL
    note = ("--quick" if quick else f"no GPU here ({missing}): the CPU part runs small") if size is QUICK else "full"
    log(f"schedules: {', '.join(schedules)}; size: {size.text()}")

    def report(gpu: Section, cpu: Section, torch_gpu: Section) -> Report:
        return Report(machine=machine_description(), cores=usable_cores(), gpu=gpu_info(), size=size,
                      size_note=note, sections=(gpu, cpu, torch_gpu), seconds=time.monotonic() - started,
                      budget_s=budget_s, schedules=schedules)

    unfinished = "not finished when this report was written"
    left_out = f"not asked for (--part {part})"

    def wanted(name: str) -> bool:
        return part in ("all", name)

    if missing:
        gpu = Section("cuda", f"no GPU: {missing}")
        torch_gpu = Section("cuda", f"no GPU: {missing}", runtime="torch")
    else:
        gpu = run_section("cuda", size, schedules, budget, out) if wanted("cuda") else Section("cuda", left_out)
        write_report(replace(report(gpu, Section("cpu", unfinished), Section("cuda", unfinished, runtime="torch")),
                             complete=False), out)
        torch_gpu = (run_section("cuda", size, schedules, budget, out, runtime="torch") if wanted("torch")
                     else Section("cuda", left_out, runtime="torch"))
        write_report(replace(report(gpu, Section("cpu", unfinished), torch_gpu), complete=False), out)
    cpu = run_section("cpu", size, schedules, budget, out) if wanted("cpu") else Section("cpu", left_out)
    return report(gpu, cpu, torch_gpu)


# ---- the report ------------------------------------------------------------------------

def row_dict(row: Row) -> dict:
    return {"status": row.status, **asdict(row)}


def report_dict(report: Report) -> dict:
    """report.json: every row with its status, the machine, the size, and whether it passed."""
    return {"passed": report.passed, "complete": report.complete, "machine": report.machine, "cores": report.cores,
            "gpu": None if report.gpu is None else asdict(report.gpu), "size": asdict(report.size),
            "size_note": report.size_note, "schedules": list(report.schedules), "seconds": report.seconds,
            "budget_s": report.budget_s,
            "sections": [{"device": s.device, "runtime": s.runtime, "skipped": s.skipped, "passed": s.passed,
                          "rows": [row_dict(r) for r in s.rows]} for s in report.sections]}


def check_text(check: CheckRow) -> str:
    worst = max((d for d in (check.grad_max_rel_diff, check.weight_max_rel_diff, check.losses_max_rel_diff)
                 if d is not None), default=None)
    shown = "none" if worst is None else f"{worst:.1e}"
    replicas = {None: "", True: "; replicas bit-identical", False: "; replicas DIFFER"}[check.replicas_identical]
    if check.passed:
        return f"passed ({shown} <= {check.tolerance:.0e}{replicas})"
    return f"FAILED ({shown}, allowed {check.tolerance:.0e}{replicas})"


def unfinished_cells(row: Unfinished, width: int) -> list:
    return [row.schedule, row.layout, row.status, *[""] * (width - 4), row.reason]


def gpu_md(section: Section, gpu: GpuInfo | None) -> str:
    if section.skipped is not None:
        return f"Skipped: {section.skipped}."
    ran = [r for r in section.rows if isinstance(r, RunRow)]
    transports = ", ".join(sorted({r.transport for r in ran})) or "none (no run finished)"
    where = "the GPU" if gpu is None else f"one {gpu.name} ({gpu.memory_gib:.0f} GiB)"
    lines = [f"All p ranks of a run on {where}, sharing it (engine/device.py, `Device.shared`): NCCL refuses two "
             "ranks of one group on one GPU, so the ranks join through gloo and their messages moved through: "
             f"**{transports}** (a send copies the tensor into host memory, a receive copies it onto the GPU). "
             "Device clock: each action timed by CUDA events. The ranks' processes take turns on the GPU, so an "
             "action's CUDA-event time can include another rank's kernels.", ""]
    headers = ["schedule", "p", "transport", "bubble, device clock", "wall clock", "simulator (per-stage means)",
               "simulator (each step's costs)", "formula", "gradient check"]
    lines.append(R.table(headers, [
        [r.schedule, r.layout, r.transport, R.num(r.bubble_device), R.num(r.bubble_wall), R.num(r.bubble_simulated),
         R.num(r.bubble_simulated_own_steps), R.num(r.bubble_formula), check_text(r.check)]
        if isinstance(r, RunRow) else unfinished_cells(r, len(headers)) for r in section.rows]))
    lines += ["", "Peak memory per rank: the CUDA allocator's (`torch.cuda.max_memory_allocated` of the rank's "
              "process: everything it allocated on the GPU, inputs and temporaries inside an action included) beside "
              "our count (peak activations + parameters + gradients + optimizer state + stashed weights).", ""]
    lines.append(R.table(["schedule", "p", "rank", "CUDA allocator", "our count", "allocator / ours"], [
        [r.schedule, r.layout, m.rank, R.mib(m.allocator_peak_bytes), R.mib(m.counted_bytes),
         ratio(m.allocator_peak_bytes, m.counted_bytes)] for r in ran for m in r.memory]))
    split = [(r, m) for r in ran for m in r.memory if m.breakdown is not None]
    if split:
        lines += ["", breakdown_md(split)]
    return "\n".join(lines)


BREAKDOWN_PARTS = (("parameters", "parameters"), ("gradients", "gradients"), ("optimizer_state", "optimizer"),
                   ("check_reference", "check's copy"), ("messages_and_inputs", "messages, inputs"),
                   ("stage_outputs", "stage outputs"), ("library_workspace", "cuBLAS workspace"),
                   ("setup_other", "other set-up"), ("temporaries", "temporaries"))
ACTIVATION_AGREEMENT = 0.10
"""The allocator's activation share and our saved-tensor count agree within this fraction."""


def activations_agree(b: dict) -> bool:
    ours, theirs = b["activations_counted"], b["activations"]
    return abs(theirs - ours) <= ACTIVATION_AGREEMENT * max(ours, 1)


def breakdown_md(split) -> str:
    """Per rank, what held the allocator's peak (engine/runtime/cuda_memory.py)."""
    agree = sum(activations_agree(m.breakdown) for _, m in split)
    head = ("What held the allocator's peak, per rank (engine/runtime/cuda_memory.py): the allocator's counter "
            "and peak are read after every action; the tensors the engine holds are found by identity, cuBLAS's "
            "workspaces and the rest of set-up are measured on the allocator at set-up, the activation share is "
            "the allocator's counter beyond all of those around the peak's action (beside our saved-tensor count "
            "then), and temporaries are what that action allocated and freed again. The parts add up to the peak. "
            f"Activation share and our count agree within {ACTIVATION_AGREEMENT:.0%} on {agree} of {len(split)} "
            "ranks.")
    headers = (["schedule", "p", "rank", "peak", *[label for _, label in BREAKDOWN_PARTS[:-1]],
                "activations: allocator / ours", "agree", "temporaries", "peak in"])
    rows = []
    for r, m in split:
        b = m.breakdown
        rows.append([r.schedule, r.stages, m.rank, R.mib(b["peak"]),
                     *[R.mib(b[key]) for key, _ in BREAKDOWN_PARTS[:-1]],
                     f"{R.mib(b['activations'])} / {R.mib(b['activations_counted'])}",
                     "yes" if activations_agree(b) else "NO", R.mib(b["temporaries"]), b["at"]])
    return head + "\n\n" + R.table(headers, rows)


def torch_md(section: Section) -> str:
    if section.skipped is not None:
        return f"Skipped: {section.skipped}."
    ran = [r for r in section.rows if isinstance(r, RunRow)]
    transports = ", ".join(sorted({r.transport for r in ran})) or "none (no run finished)"
    lines = ["torch's own runtime (`--runtime torch`, engine/torch_bridge/) on the same GPU, every schedule its CSV "
             f"takes, with the same gradient check. Messages: **{transports}**. Device clock: each action timed by "
             "CUDA events, the step played along the schedule with those costs (engine/torch_bridge/clock.py).", ""]
    headers = ["schedule", "p", "bubble, device clock", "wall clock", "step time", "gradient check",
               "CUDA allocator, per rank", "our count, per rank"]
    lines.append(R.table(headers, [
        [r.schedule, r.stages, R.num(r.bubble_device), R.num(r.bubble_wall), f"{r.step_time_s * 1e3:.1f} ms",
         check_text(r.check), ", ".join(R.mib(m.allocator_peak_bytes) for m in r.memory),
         ", ".join(R.mib(m.counted_bytes) for m in r.memory)]
        if isinstance(r, RunRow) else unfinished_cells(r, len(headers)) for r in section.rows]))
    return "\n".join(lines)


def ratio(a: int | None, b: int) -> str:
    return "—" if a is None or not b else f"{a / b:.2f}"


def cores_text(stages: int, cores: int) -> str:
    return f"{stages} ranks, {cores} cores: " + ("a core each" if stages <= cores else "taking turns")


def wall_verdict(row: RunRow, cores: int) -> str:
    """Wall and device clock should agree (within the benchmark's fidelity target) only where
    every rank has a core; where ranks take turns the wall clock shows the turns."""
    if row.processes > cores:
        return "not expected to agree"
    return R.verdict(abs(row.bubble_device - row.bubble_wall), TARGETS["fidelity_wall"])


def cpu_md(section: Section, cores: int) -> str:
    if section.skipped is not None:
        return f"Skipped: {section.skipped}."
    headers = ["schedule", "p", "ranks and cores", "transport", "bubble, device clock", "wall clock", "difference",
               f"agree within {TARGETS['fidelity_wall']:g}", "gradient check"]
    rows = [[r.schedule, r.layout, cores_text(r.processes, cores), r.transport, R.num(r.bubble_device),
             R.num(r.bubble_wall), R.num(abs(r.bubble_device - r.bubble_wall)), wall_verdict(r, cores),
             check_text(r.check)] if isinstance(r, RunRow) else unfinished_cells(r, len(headers))
            for r in section.rows]
    return ("Device clock: each action's own thread CPU time (one torch thread per rank); wall clock: this host's "
            "monotonic clock. They should agree where every rank has a core of its own.\n\n" + R.table(headers, rows))


def report_md(report: Report) -> str:
    mach = report.machine
    gpu = "none" if report.gpu is None else (f"{report.gpu.count} x {report.gpu.name}, "
                                             f"{report.gpu.memory_gib:.0f} GiB, CUDA {report.gpu.cuda}")
    gpu_section, cpu_section, *more = report.sections
    torch_section = more[0] if more else Section("cuda", "not part of this report", runtime="torch")
    verdict = ("every run finished and passed its gradient check" if report.passed else
               "NOT all runs passed" if report.complete else "an interim report: the CPU part had not finished")
    return "\n".join([
        "# The engine on a GPU: one prepared check", "",
        f"Written by `python -m bench.gpu_check` on {mach.get('date', '?')} in {report.seconds:.0f} s "
        f"(budget {report.budget_s:g} s): {verdict}.", "",
        R.table(["", ""], [["CPU", mach.get("cpu", "?")], ["usable cores", report.cores], ["RAM", mach.get("ram", "?")],
                           ["GPU", gpu], ["torch", mach.get("torch", "?")], ["load", mach.get("load", "?")]]), "",
        f"Every synchronous schedule of the registry ({', '.join(report.schedules)}) at p = "
        f"{' and '.join(map(str, STAGES))}, and {', '.join(DATA_PARALLEL[2])} as d = {DATA_PARALLEL[1]} pipelines of "
        f"p = {DATA_PARALLEL[0]} (each stage's gradients all-reduced in its data-parallel group), with the gradient "
        f"check. Size: {report.size.text()} ({report.size_note}).",
        "", "## 1. On the GPU", "", gpu_md(gpu_section, report.gpu), "",
        "## 2. torch's runtime on the GPU", "", torch_md(torch_section), "",
        "## 3. The CPU engine on this machine: wall clock against device clock", "", cpu_md(cpu_section, report.cores),
        ""])


def write_report(report: Report, out: str) -> tuple[str, str]:
    md, js = os.path.join(out, "report.md"), os.path.join(out, "report.json")
    with open(md, "w", encoding="utf-8") as f:
        f.write(report_md(report))
    with open(js, "w", encoding="utf-8") as f:
        json.dump(report_dict(report), f, indent=1, allow_nan=True)
    return md, js


# ---- command line ----------------------------------------------------------------------

def parse_args(argv):
    from pipelab.engine.cli.main import OneLineParser
    parser = OneLineParser(prog="python -m bench.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder for report.md, report.json and runs/")
    parser.add_argument("--quick", action="store_true", help="the small size (always so without CUDA)")
    parser.add_argument("--part", choices=PARTS, default="all",
                        help="one section only: cuda (our engine), torch (torch's runtime), cpu")
    parser.add_argument("--budget", type=float, default=BUDGET_S,
                        help="seconds after which no further run starts (default %(default)g)")
    args = parser.parse_args(argv)
    if not (args.budget > 0 and math.isfinite(args.budget)):
        parser.error(f"--budget must be a positive number of seconds, got {args.budget:g}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out {args.out} is a file, not a folder")
    try:  # before any run: a folder we cannot write would lose the whole check at its end
        os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    except OSError as err:
        parser.error(f"--out {args.out}: {err.strerror}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    report = run_check(args.out, args.quick, args.budget, args.part)
    md, js = write_report(report, args.out)
    print(f"{'passed' if report.passed else 'NOT passed'}: {md}, {js}")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
