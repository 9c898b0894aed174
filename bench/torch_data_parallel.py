"""Pipelines side by side (PP x DP): torch.distributed.pipelining with DDP against our engine.

    PYTHONPATH=. .venv/bin/python bench/torch_data_parallel.py [--rounds 8] [--steps 8] [--quick] [--out FILE]

Issue 43, item 5. The same model at the same (p, d, m) on both runtimes, d x p processes each,
all started from the engine's forkserver:

- torch's: the composition torch documents for PP x DP. Every process calls
  ``init_device_mesh("cpu", (d, p), mesh_dim_names=("dp", "pp"))`` (torch's recipe "Getting
  Started with DeviceMesh"), wraps its stage's layers in ``DistributedDataParallel`` over the
  mesh's "dp" dimension (torch's DDP docs: ``device_mesh`` takes a 1-D mesh), and builds its
  ``PipelineStage`` on the "pp" dimension's group (torch's "Pipeline Parallelism" docs). Process
  g = dp * p + pp: the same layout as our RankLayout (replica g // p, pipeline rank g % p).
  Each schedule's first run (untimed, DDP's all-reduces counted) tries DDP as documented, then
  the next closest ways (COMPOSITIONS); on torch 2.13 GPipe needs find_unused_parameters=True.
- ours: ``RunConfig(data_parallel=d)``, each stage's gradients averaged by an R action.

Both train the engine's own model, split as the engine splits it, with its DeferrableLinear
layers turned back into nn.Linear on torch's side (bench/torch_pipelining.py plain_layers).
Replica k trains micro-batches k m .. k m + m - 1 of each step's global batch, on both sides.

Step time: wall clock (CLOCK_MONOTONIC, one clock for every process of a host), from the
step's start to its last process's end, median over every step after the warm-up ones
(pipelab.engine.results.windows.WARM_UP_STEPS) of every round. The optimizer's update follows
the step on both sides, outside the timed span, as the engine's step_time_s leaves it out.
Rounds alternate the runtimes (ours, torch's; then torch's, ours) so host drift hits both.

Gradients: step 0's, after each side's data-parallel average, against one process running the
whole global batch (pipelab.engine.runtime.reference.reference_run over d x m micro-batches,
loss / (d x m)): the largest difference relative to each tensor's largest entry, over every
process of both replicas. Ours is its own check (RunConfig.check); torch's is computed here
from every torch process's gradients.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import timedelta

if __package__ in (None, ""):  # run as a script: make "bench" and "pipelab" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import report as R  # noqa: E402
from bench.measure import log, model_text  # noqa: E402
from bench.plan import MLP_SPEED, TARGETS, TINY  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "bench", "TORCH_DATA_PARALLEL.md")
SCHEDULES = {"1f1b": "Schedule1F1B", "gpipe": "ScheduleGPipe"}
"""Our schedule -> torch's class of the same order."""
SIDES = ("ours", "torch")
RUNTIME_NAMES = {"ours": "PipeLab's engine", "torch": "torch.distributed.pipelining + DDP"}
TARGET = TARGETS["speed_ratio"]
"""ours / torch's step time, at most (issue 43's target, the speed figure's)."""
GRAD_TOLERANCE = 1e-4
"""Step 0's gradients against one process: the largest relative difference that still matches."""
COMPOSITIONS = {
    "ddp": "DDP inside the stage, as documented",
    "ddp_unused": "DDP inside the stage with find_unused_parameters=True (no bucket rebuild)",
    "all_reduce": "no DDP: each gradient all-reduced over the \"dp\" group after step()",
}
"""How torch's side averages over the replicas, closest to torch's documented way first: a
schedule's first (untimed) probe run tries them in this order and keeps the first that runs."""


@dataclass(frozen=True)
class Settings:
    stages: int = 2
    replicas: int = 2
    microbatches: int = 4
    steps: int = 8
    rounds: int = 8
    """Even, so each runtime goes first as often as the other."""
    model: dict = field(default_factory=lambda: dict(MLP_SPEED))
    schedules: tuple[str, ...] = tuple(SCHEDULES)
    timeout_s: float = 180.0

    @property
    def world(self) -> int:
        return self.stages * self.replicas


QUICK = Settings(steps=3, rounds=1, model=dict(TINY))
"""The test's size: tiny layers, one round of each schedule, one step after the warm-up."""


def engine_config(settings: Settings, schedule: str):
    """Our run: d pipelines of p ranks, m micro-batches each, checked against one process."""
    from pipelab.engine.config import RunConfig
    return RunConfig(schedule=schedule, stages=settings.stages, data_parallel=settings.replicas,
                     microbatches=settings.microbatches, steps=settings.steps, check=True,
                     timeout_s=settings.timeout_s, **settings.model)


def measured(times) -> list[float]:
    """The steps after the warm-up ones, as the engine's figures keep them."""
    from pipelab.engine.results.windows import WARM_UP_STEPS
    return list(times[WARM_UP_STEPS:])


# ---- our side ------------------------------------------------------------------------------

def run_ours(settings: Settings, schedule: str) -> dict:
    from pipelab.engine.runtime.launch import run
    result = run(engine_config(settings, schedule))
    return {"steps": list(result.metrics.wall_step_times_s),  # already without the warm-up steps
            "device": result.metrics.device_step_time_s,
            "grad": result.check.grad_max_rel_diff,
            "replicas": result.check.replica_weight_max_diff,
            "reduce_at": result.data_parallel.reduce_at if result.data_parallel else None}


# ---- torch's side: one process ---------------------------------------------------------------

def replica_batch(model_cfg, step: int, replica: int, microbatches: int):
    """Replica ``replica``'s m micro-batches of a step, concatenated along dim 0 (torch's step()
    splits them again): micro-batches replica * m .. replica * m + m - 1, as our replicas train."""
    import torch

    from pipelab.engine.model.builtin import make_microbatch
    pairs = [make_microbatch(model_cfg, step, replica * microbatches + j) for j in range(microbatches)]
    return torch.cat([x for x, _ in pairs]), torch.cat([y for _, y in pairs])


def build_stage(spec: dict, mesh, layers, ranges, reduces: list):
    """This process's PipelineStage on the mesh's "pp" group, its layers wrapped in DDP over the
    "dp" group (or left plain for the all_reduce fallback). Returns (stage, plain module). With
    spec["count"], each DDP bucket all-reduce appends to ``reduces`` (a probe run's, untimed)."""
    import torch
    from torch import nn
    from torch.distributed import pipelining
    from torch.nn.parallel import DistributedDataParallel
    pp = mesh.get_local_rank("pp")
    module = nn.Sequential(*[layers[i] for i in ranges[pp]])
    # DDP's docs: device_mesh takes a 1-D mesh, here the replicas holding this stage.
    if spec["compose"] == "all_reduce":
        wrapped = module
    else:
        wrapped = DistributedDataParallel(module, device_mesh=mesh["dp"],
                                          find_unused_parameters=spec["compose"] == "ddp_unused")
        if spec["count"]:
            count_bucket_reduces(wrapped, mesh, reduces)
    stage = pipelining.PipelineStage(wrapped, pp, spec["stages"], torch.device("cpu"), group=mesh["pp"].get_group())
    return stage, module


def count_bucket_reduces(ddp, mesh, reduces: list) -> None:
    """A DDP communication hook (torch's "DDP Communication Hooks" docs) that notes each bucket
    and runs DDP's own all-reduce: how many all-reduces a step really makes."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    def hook(group, bucket):
        reduces.append(bucket.index())
        return allreduce_hook(group, bucket)
    ddp.register_comm_hook(mesh["dp"].get_group(), hook)


def average_over_replicas(module, mesh) -> None:
    """The fallback's data-parallel average: each gradient all-reduced over the "dp" group and
    divided by d (what DDP's reducer does, one tensor at a time)."""
    import torch.distributed as dist
    group, d = mesh["dp"].get_group(), mesh["dp"].size()
    for p in module.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)
            p.grad.div_(d)


def step_grads(module, ranges, pp: int) -> dict:
    """This stage's gradients as numpy arrays keyed (global layer, name in layer): plain data for
    the queue (a torch tensor would travel as a shared-memory handle that dies with this process)."""
    out = {}
    for name, p in module.named_parameters():
        k, rest = name.split(".", 1)
        if p.grad is not None:
            out[(ranges[pp][int(k)], rest)] = p.grad.detach().numpy().copy()
    return out


def _rank_main(rank: int, init_file: str, spec: dict, results) -> None:
    try:
        import torch
        import torch.distributed as dist
        from torch.distributed import pipelining
        from torch.distributed.device_mesh import init_device_mesh

        from bench.torch_pipelining import plain_layers
        from pipelab.engine.config import RunConfig
        from pipelab.engine.model.builtin import loss_fn
        from pipelab.engine.model.partition import split_without_profiling
        from pipelab.engine.runtime.stage import momentum_sgd
        torch.set_num_threads(1)  # as the engine's ranks: one compute thread per process
        d, p, m = spec["replicas"], spec["stages"], spec["microbatches"]
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=d * p,
                                timeout=timedelta(seconds=spec["timeout_s"]))
        mesh = init_device_mesh("cpu", (d, p), mesh_dim_names=("dp", "pp"))
        dp, pp = mesh.get_local_rank("dp"), mesh.get_local_rank("pp")
        model_cfg = spec["model_cfg"]
        layers = plain_layers(model_cfg)
        ranges = split_without_profiling(layers, p, RunConfig().partition)  # as ours: the default split
        reduces: list[int] = []
        stage, module = build_stage(spec, mesh, layers, ranges, reduces)
        # scale_grads (the default) divides the summed micro-batch gradients by m after the last
        # backward; DDP's average divides by d: the global batch's mean, as our loss / m and R.
        sched = getattr(pipelining, spec["schedule"])(stage, n_microbatches=m, loss_fn=loss_fn(model_cfg))
        optimizer = momentum_sgd(list(module.parameters()), RunConfig().lr)
        starts, ends, grads, per_step = [], [], None, []
        for step in range(spec["steps"]):
            x, y = replica_batch(model_cfg, step, dp, m)
            args = (x,) if pp == 0 else ()
            kwargs = {"target": y, "losses": []} if pp == p - 1 else {}
            optimizer.zero_grad(set_to_none=True)
            dist.barrier()
            starts.append(time.monotonic())
            sched.step(*args, **kwargs)
            if spec["compose"] == "all_reduce":
                average_over_replicas(module, mesh)
            ends.append(time.monotonic())
            per_step.append(len(reduces) - sum(per_step))
            if step == 0:
                grads = step_grads(module, ranges, pp)
            optimizer.step()  # outside the span, as the engine's update is outside step_time_s
        gathered = [None] * (d * p)
        dist.all_gather_object(gathered, (starts, ends))
        results.put(("grads", rank, (grads, per_step if spec["count"] else None)))
        if rank == 0:
            spans = [max(g[1][k] for g in gathered) - min(g[0][k] for g in gathered) for k in range(spec["steps"])]
            results.put(("ok", rank, spans))
        dist.barrier()
        dist.destroy_process_group()
    except BaseException as err:  # noqa: BLE001 - report, the parent raises
        results.put(("error", rank, f"rank {rank}: {type(err).__name__}: {err}\n{traceback.format_exc()}"))
        # put() hands the message to the queue's feeder thread; os._exit would kill it unsent.
        results.close()
        results.join_thread()
        os._exit(1)


# ---- torch's side: the launcher ----------------------------------------------------------------

def run_torch(ctx, settings: Settings, schedule: str, compose: str = "ddp", count: bool = False) -> dict:
    """One run of torch's side: every step's wall time after the warm-up, every process's step-0
    gradients, and with ``count`` every process's DDP all-reduces per step."""
    from bench.measure import model_config
    tmp = tempfile.mkdtemp(prefix="pipelab-bench-dp-")
    results = ctx.Queue()
    spec = dict(schedule=SCHEDULES[schedule], model_cfg=model_config(settings.model), stages=settings.stages,
                replicas=settings.replicas, microbatches=settings.microbatches, steps=settings.steps,
                timeout_s=settings.timeout_s, compose=compose, count=count)
    procs = [ctx.Process(target=_rank_main, args=(r, os.path.join(tmp, "rdv"), spec, results), daemon=True)
             for r in range(settings.world)]
    try:
        for proc in procs:
            proc.start()
        got = collect(results, procs, settings.world, settings.timeout_s, schedule)
        for proc in procs:
            proc.join(10)
        return got
    finally:
        stop(procs)
        results.close()
        shutil.rmtree(tmp, ignore_errors=True)


def collect(results, procs, world: int, timeout_s: float, schedule: str) -> dict:
    """Every process's gradients and rank 0's step times; the first error raised with its traceback."""
    grads, counts, spans = {}, {}, None
    deadline = time.monotonic() + timeout_s
    while spans is None or len(grads) < world:
        try:
            kind, rank, payload = results.get(timeout=0.5)
        except Exception:  # queue.Empty: see whether a process died without a word
            dead = [i for i, proc in enumerate(procs) if proc.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"torch {schedule}: process(es) {dead or 'all'} failed or timed out") from None
            continue
        if kind == "error":
            raise RuntimeError(f"torch {schedule} failed: {payload}")
        if kind == "grads":
            grads[rank], counts[rank] = payload
        else:
            spans = payload
    return {"steps": measured(spans), "grads": grads, "counts": counts}


def stop(procs) -> None:
    """Our own processes only, each by its handle: terminate, then kill what is left."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join(3)
        if proc.is_alive():
            proc.kill()
            proc.join(1)


# ---- gradients against one process ---------------------------------------------------------------

def reference_grads(settings: Settings, schedule: str):
    """Step 0's gradients of one process over the whole global batch (d x m micro-batches, loss /
    (d x m)): the engine's own reference, the one its check uses."""
    from pipelab.engine.model.parts import model_parts
    from pipelab.engine.runtime.reference import reference_run
    config = engine_config(settings, schedule)
    return reference_run(model_parts(config), config.global_microbatches, 1, config.lr).step0_grads


def max_rel_diff(reference, per_process: dict) -> float:
    """Largest difference relative to each tensor's largest entry (as the engine's check), over
    every process's gradients; inf where a process lacks a tensor of its stage."""
    import torch
    worst = 0.0
    for grads in per_process.values():
        layers = {layer for layer, _ in grads}
        for layer in layers:
            for name, ref in reference[layer].items():
                got = grads.get((layer, name))
                if got is None:
                    return float("inf")
                scale = ref.abs().max().item() or 1.0
                worst = max(worst, (torch.from_numpy(got) - ref).abs().max().item() / scale)
    return worst


def replicas_agree(per_process: dict, stages: int) -> float:
    """Largest absolute difference between the replicas' step-0 gradients of the same stage:
    0.0 when the average left every replica the same gradient."""
    import numpy as np
    worst = 0.0
    for rank, grads in per_process.items():
        first = per_process[rank % stages]  # replica 0's process of the same stage
        for key, g in grads.items():
            worst = max(worst, float(np.abs(g - first[key]).max()))
    return worst


# ---- the rounds ------------------------------------------------------------------------------------

def mp_context():
    """The engine's forkserver (both sides start their processes from it), also preloading what
    torch's side imports, so neither side pays imports inside its runs. The engine's frozen heap
    stays last: what it freezes is then everything both sides imported."""
    from pipelab.engine.runtime.rank_processes import mp_context as engine_context
    ctx = engine_context()
    ctx.set_forkserver_preload(["torch", "torch.distributed", "torch._dynamo", "pipelab.engine.runtime.worker",
                                "torch.distributed.pipelining", "torch.distributed.device_mesh",
                                "torch.nn.parallel", "bench.torch_pipelining", "bench.torch_data_parallel",
                                "pipelab.engine.runtime.frozen_heap"])
    return ctx


def empty_row() -> dict:
    return {"ours": [], "torch": [], "ours_rounds": [], "torch_rounds": [], "ours_device": [],
            "ours_grad": None, "ours_replicas": None, "torch_grad": None, "torch_replicas": None,
            "compose": None, "failed": [], "counts": None}


def measure(settings: Settings) -> dict:
    """Every schedule: a probe run that finds torch's composition, then the rounds, the runtimes
    alternating; the figures each table row needs."""
    ctx = mp_context()
    rows = {}
    for schedule in settings.schedules:
        rows[schedule] = row = empty_row()
        try:
            reference = reference_grads(settings, schedule)
            probe(ctx, settings, schedule, row, reference)
            for rnd in range(settings.rounds):
                for side in (SIDES if rnd % 2 == 0 else SIDES[::-1]):
                    one_run(ctx, settings, schedule, side, row, reference)
                log(f"{schedule} round {rnd}: ours {R.ms(R.median(row['ours_rounds'][-1]))}, "
                    f"torch {R.ms(R.median(row['torch_rounds'][-1]))}")
        except Exception as err:  # noqa: BLE001 - one failure must not lose the other rows
            row["error"] = R.error_text(err)
            log(f"{schedule} failed: {row['error']}")
    return {"rows": rows}


def probe(ctx, settings: Settings, schedule: str, row: dict, reference) -> None:
    """torch's side once, untimed, with DDP's all-reduces counted: the first composition of
    COMPOSITIONS that runs is the one the rounds use; each that failed is kept for the report."""
    for compose in COMPOSITIONS:
        try:
            got = run_torch(ctx, settings, schedule, compose, count=True)
        except RuntimeError as err:
            row["failed"].append((compose, error_summary(str(err))))
            log(f"{schedule}: torch's side with {compose} failed: {row['failed'][-1][1]}")
            continue
        row["compose"] = compose
        row["counts"] = got["counts"] if compose != "all_reduce" else None
        note_torch_grads(row, reference, got, settings.stages)
        return
    raise RuntimeError(f"torch {schedule}: every composition failed")


def one_run(ctx, settings: Settings, schedule: str, side: str, row: dict, reference) -> None:
    if side == "ours":
        got = run_ours(settings, schedule)
        row["ours_device"].append(got["device"])
        row["ours_grad"] = max(row["ours_grad"] or 0.0, got["grad"])
        row["ours_replicas"] = max(row["ours_replicas"] or 0.0, got["replicas"] or 0.0)
    else:
        got = run_torch(ctx, settings, schedule, row["compose"])
        note_torch_grads(row, reference, got, settings.stages)
    row[side] += got["steps"]
    row[side + "_rounds"].append(got["steps"])


def note_torch_grads(row: dict, reference, got: dict, stages: int) -> None:
    """The worst over every torch run so far: against one process, and replica against replica."""
    row["torch_grad"] = max(row["torch_grad"] or 0.0, max_rel_diff(reference, got["grads"]))
    row["torch_replicas"] = max(row["torch_replicas"] or 0.0, replicas_agree(got["grads"], stages))


def error_summary(text: str, most: int = 4) -> str:
    """A failure's telling lines: each "SomeError: message" with a message, and torch's
    "[Stage k] failed to ..." lines, without repeats."""
    keep = []
    for line in text.splitlines():
        line = line.strip()
        telling = re.match(r"^(rank \d+: )?[\w.]*(Error|Exception): \S", line) or re.match(r"^\[Stage \d+\]", line)
        if telling and line not in keep:
            keep.append(line)
    return " / ".join(keep[:most]) or (text.strip().splitlines() or ["?"])[0]


# ---- the report ------------------------------------------------------------------------------------

def summarize(row: dict) -> dict:
    """Medians over all kept steps, the ratio, and its spread round by round."""
    ours, theirs = R.median(row["ours"]), R.median(row["torch"])
    per_round = [statistics.median(o) / statistics.median(t)
                 for o, t in zip(row["ours_rounds"], row["torch_rounds"]) if o and t]
    return {"ours": ours, "torch": theirs, "ratio": ours / theirs if ours and theirs else None,
            "spread": (f"{statistics.median(per_round):.2f} ({min(per_round):.2f}-{max(per_round):.2f})"
                       if per_round else "—"),
            "device": R.median(row["ours_device"])}


def grad_cell(value: float | None) -> str:
    if value is None:
        return R.NOT_MEASURED
    return f"{value:.1e} ({'matches' if value <= GRAD_TOLERANCE else 'DIFFERS'})"


def reduces_cell(counts: dict | None, stages: int) -> str:
    """DDP's bucket all-reduces per step, per stage (the most over its replicas): step 0 (the
    warm-up) apart from the steps after it."""
    if not counts:
        return "—"
    steps = len(next(iter(counts.values())))

    def per_stage(k: int) -> str:
        return "/".join(str(max(c[k] for r, c in counts.items() if r % stages == s)) for s in range(stages))
    later = sorted({per_stage(k) for k in range(1, steps)})
    return f"step 0: {per_stage(0)}; then: {', '.join(later) or '—'}"


def table_md(rows: dict, stages: int) -> str:
    headers = ["schedule", "ours: step (wall)", "torch's: step (wall)", "ours / torch's", f"<= {TARGET}",
               "ratio round by round: median (min-max)", "ours: step (device clock)", "ours: grads vs one process",
               "torch's: grads vs one process", "replicas differ by (ours: weights / torch's: grads)",
               "torch's data parallelism", "DDP bucket all-reduces per step, stage 0/1/..."]
    out = []
    for schedule, row in rows.items():
        if "error" in row:
            out.append([schedule] + ["—"] * (len(headers) - 2) + [R.NOT_MEASURED + ": " + row["error"]])
            continue
        s = summarize(row)
        out.append([schedule, R.ms(s["ours"]), R.ms(s["torch"]), R.num(s["ratio"], 2),
                    R.verdict(s["ratio"], TARGET), s["spread"], R.ms(s["device"]), grad_cell(row["ours_grad"]),
                    grad_cell(row["torch_grad"]), f"{_num(row['ours_replicas'])} / {_num(row['torch_replicas'])}",
                    row["compose"], reduces_cell(row["counts"], stages)])
    return R.table(headers, out)


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.1e}" if x else "0"


def composition_notes(rows: dict) -> list[str]:
    """What each name in the table's composition column means, and every composition that failed."""
    lines = ["**torch's data parallelism** (the table's column), closest to torch's documented way first; each "
             "schedule's first run, untimed and with DDP's all-reduces counted by a communication hook, tries "
             "them in this order and the rounds use the first that runs:", ""]
    lines += [f"- `{name}`: {text}" for name, text in COMPOSITIONS.items()]
    failed = [(schedule, compose, why) for schedule, row in rows.items() for compose, why in row["failed"]]
    if failed:
        lines += ["", "What failed on this torch, exactly:", ""]
        lines += [f"- {schedule} with `{compose}`: `{why}`" for schedule, compose, why in failed]
    return lines


HOW_DDP_SYNCS = (
    "**How DDP reduces inside torch's pipeline.** The DDP module is what `PipelineStage` runs, and we call "
    "no `no_sync()` ourselves: torch's stage does (`PipelineStage.forward_maybe_with_nosync` and "
    "`backward_maybe_with_nosync`): every forward and every micro-batch's backward but the last run under "
    "DDP's `no_sync()`, gradients accumulating locally; the last backward first prepares DDP's reducer, so "
    "DDP all-reduces each stage's accumulated gradient once per step, during that stage's last backward: one "
    "all-reduce per DDP gradient bucket, as each bucket's gradients are ready (the table's last column counts "
    "them, per stage, with a communication hook). "
    "The schedule then divides by m (`scale_grads=True`, its default, for a loss_fn that averages) and DDP's "
    "all-reduce has averaged over d. Ours does the same arithmetic (each replica's loss / m, R averaging over "
    "d) and puts each stage's R right after its last backward (`reduce_at=\"backward\"`, torch's and "
    "Megatron-LM's place).")
EXTRA_FIRST_REDUCE = (
    "The counted all-reduces show one exception, in step 0 only (the warm-up, not timed): a stage all-reduces "
    "more. Our reading of torch's source: the first step's metadata inference runs the DDP module's forward "
    "outside `no_sync()` with gradients enabled, which arms DDP's reducer, so the stage's first backward "
    "all-reduces too. The gradients stay right (an average of averages is the average; the gradient columns "
    "say so).")
REBUILD_ASSERT = (
    "That extra backward is also what breaks GPipe with plain DDP: DDP records the parameters of the backward "
    "passes it all-reduces for its one-time bucket rebuild, done at the next forward. 1F1B runs a forward "
    "between the stage's first and last backward, and DDP rebuilds there; GPipe runs every forward first, so "
    "DDP records the stage's parameters twice and its rebuild asserts at step 1's first forward. "
    "`find_unused_parameters=True` turns the rebuild off (DDP then also walks the autograd graph from the "
    "outputs at each synchronised backward: a small cost for a few Linear layers).")


def how_ddp_syncs(rows: dict) -> str:
    """The DDP paragraph, with the step-0 exception and the rebuild failure only where this run saw them."""
    text = HOW_DDP_SYNCS
    if any(first_step_extra(row["counts"]) for row in rows.values()):
        text += " " + EXTRA_FIRST_REDUCE
    if any("rebuilt parameter indices" in why for row in rows.values() for _, why in row["failed"]):
        text += " " + REBUILD_ASSERT
    return text


def first_step_extra(counts: dict | None) -> bool:
    """Whether some process all-reduced more in step 0 than in any later step."""
    return bool(counts) and any(c[0] > max(c[1:], default=c[0]) for c in counts.values())


def report_md(data: dict, settings: Settings, machine: dict, command: str) -> str:
    m = settings.model
    lines = [
        "# Pipelines side by side (PP x DP): our engine against torch.distributed.pipelining + DDP", "",
        f"Written by `{command}` on {machine.get('date', '?')} ({machine.get('cpu', '?')}, "
        f"{machine.get('cores', os.cpu_count())} cores, load {machine.get('load', '?')}; torch "
        f"{machine.get('torch', '?')}).", "",
        f"The same model ({model_text(m)}; {m['layers']} layers) at p = {settings.stages}, d = {settings.replicas}, "
        f"m = {settings.microbatches} micro-batches per replica: {settings.world} processes on each side, from one "
        f"forkserver, on CPU with gloo. {RUNTIME_NAMES['ours']} (`RunConfig(data_parallel={settings.replicas})`) "
        f"against {RUNTIME_NAMES['torch']}: every process calls `init_device_mesh(\"cpu\", "
        f"({settings.replicas}, {settings.stages}), mesh_dim_names=(\"dp\", \"pp\"))` (torch's recipe "
        "\"Getting Started with DeviceMesh\"), wraps its stage's layers in `DistributedDataParallel(..., "
        "device_mesh=mesh[\"dp\"])` and builds its `PipelineStage` on `mesh[\"pp\"]`'s group. "
        f"{settings.steps} steps per run, {settings.rounds} round(s), the runtimes alternating round by round "
        "(ours first, then torch's first). Step time: wall clock, from the step's start to its last process's "
        "end, median over every step after the warm-up of every round; the update after it is outside on both "
        "sides. Beside the ratio of those medians, each round's own ratio (its two runs side by side, so under "
        "the same host load): their median and range show how much the host moved it. Target (issue 43): ours "
        f"/ torch's <= {TARGET}.", "",
        table_md(data["rows"], settings.stages), "",
        f"Gradients: step 0's, after the data-parallel average, against one process running the whole global "
        f"batch ({settings.replicas} x {settings.microbatches} micro-batches, loss / "
        f"{settings.replicas * settings.microbatches}): the largest difference relative to each tensor's "
        f"largest entry, over every process; they match within {GRAD_TOLERANCE:g}. Ours is the engine's own "
        "check (`RunConfig.check`). Replicas: for ours, the largest difference between the replicas' weights "
        "after the last step; for torch's, between the replicas' step-0 gradients of the same stage (0: bit "
        "for bit the same).", "",
        *composition_notes(data["rows"]), "",
        how_ddp_syncs(data["rows"]), "",
        "**What differs beside the runtimes.** Our stage-to-stage messages go through shared memory (the "
        "engine's default between ranks on one host); torch's through gloo. Both sides' all-reduces are gloo's. "
        "Our step time is replica 0's processes' span (the other replica's processes end with them: the "
        "all-reduce waits for both); torch's is the span over all processes. On a host with fewer cores than "
        "processes both runtimes share the cores alike; the ratio is theirs under the same load.", ""]
    return "\n".join(lines)


GRAD_PATTERN = re.compile(r"(\d\.\de[-+]\d+) \((matches|DIFFERS)\)")
"""How a gradient cell reads (grad_cell): what the test parses the report with."""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=Settings.rounds)
    parser.add_argument("--steps", type=int, default=Settings.steps,
                        help="per run; the warm-up steps (engine.results.windows.WARM_UP_STEPS) are not measured")
    parser.add_argument("--schedules", nargs="*", choices=tuple(SCHEDULES), default=list(SCHEDULES))
    parser.add_argument("--quick", action="store_true", help="tiny layers, one round: the test's size")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    from pipelab.engine.results.windows import WARM_UP_STEPS
    if args.steps <= WARM_UP_STEPS or args.rounds < 1:
        parser.error(f"--steps must be above {WARM_UP_STEPS} (the warm-up) and --rounds at least 1")
    settings = QUICK if args.quick else Settings(steps=args.steps, rounds=args.rounds, schedules=tuple(args.schedules))
    data = measure(settings)
    command = "bench/torch_data_parallel.py " + ("--quick" if args.quick else
                                                  f"--rounds {settings.rounds} --steps {settings.steps}")
    text = report_md(data, settings, R.machine_description(), command)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0 if all("error" not in row for row in data["rows"].values()) else 1


if __name__ == "__main__":
    # Through the module's own name, so the processes' target pickles as
    # bench.torch_data_parallel._rank_main (preloaded in the forkserver), not as __main__'s.
    from bench import torch_data_parallel
    sys.exit(torch_data_parallel.main())
