"""The same training step on torch.distributed.pipelining (CPU, gloo), for comparison.

Each rank is its own process (from the same forkserver as the engine's ranks), builds only
its own stage(s) with ``PipelineStage(submodule, stage_index, num_stages, device)`` and runs
``schedule.step(x, target=y, losses=[])``. The model is the engine's own (same layers, same
seed, same split into stages as the engine's default), with its ``DeferrableLinear`` layers turned back into plain
``nn.Linear`` so torch's zero-bubble I/W split sees an ordinary autograd graph.

A step is timed like the engine's ``step_time_s``: every rank notes ``time.monotonic()``
(one clock for all processes of a host) right after a barrier and right after ``step()``;
the step time is the latest end minus the earliest start. Each rank also notes its process's
CPU time (``time.process_time()``, all threads) over ``step()``, like the engine's
``cpu_times_s``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import traceback
from datetime import timedelta

# name in the report -> (torch class name, our schedule, model chunks per rank, stage layout)
SCHEDULES = {
    "ScheduleGPipe": ("gpipe", 1, "loop"),
    "Schedule1F1B": ("1f1b", 1, "loop"),
    "ScheduleInterleaved1F1B": ("interleaved", 2, "loop"),
    "ScheduleInterleavedZeroBubble": ("zb-h1", 2, "loop"),
    "ScheduleZBVZeroBubble": ("zb-v", 2, "v"),
}


def stage_indices(rank: int, world: int, chunks: int, layout: str) -> list[int]:
    """Stages this rank holds: loop style r, r+p, ...; V style r and 2p-1-r (torch's mapping)."""
    if chunks == 1:
        return [rank]
    if layout == "v":
        return [rank, 2 * world - 1 - rank]
    return [rank + k * world for k in range(chunks)]


def plain_layers(model_cfg):
    """The engine's layers with DeferrableLinear swapped back to nn.Linear (same weights)."""
    from torch import nn

    from pipelab.engine.model.builtin import build_layers
    from pipelab.engine.runtime.weight_grad import DeferrableLinear
    layers = build_layers(model_cfg)
    for layer in layers:
        for sub in layer.modules():
            if isinstance(sub, DeferrableLinear):
                sub.__class__ = nn.Linear  # DeferrableLinear adds no state, only its forward
    return layers


def whole_batch(model_cfg, step: int, microbatches: int):
    """The m micro-batches of a step concatenated along dim 0: torch's step() splits them again."""
    import torch

    from pipelab.engine.model.builtin import make_microbatch
    pairs = [make_microbatch(model_cfg, step, j) for j in range(microbatches)]
    return torch.cat([x for x, _ in pairs]), torch.cat([y for _, y in pairs])


def _rank_main(rank, world, init_file, spec, results):
    try:
        import torch
        import torch.distributed as dist
        from torch import nn
        from torch.distributed import pipelining

        from pipelab.engine.config import RunConfig
        from pipelab.engine.model.builtin import loss_fn
        from pipelab.engine.model.partition import split_without_profiling
        torch.set_num_threads(1)  # as the engine's ranks: one compute thread per process
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=spec["timeout_s"]))
        model_cfg, m = spec["model_cfg"], spec["microbatches"]
        _, chunks, layout = SCHEDULES[spec["schedule"]]
        num_stages = world * chunks
        layers = plain_layers(model_cfg)
        ranges = split_without_profiling(layers, num_stages, RunConfig().partition)  # as ours: the default
        mine = stage_indices(rank, world, chunks, layout)
        device = torch.device("cpu")
        stages = [pipelining.PipelineStage(nn.Sequential(*[layers[i] for i in ranges[s]]), s, num_stages, device)
                  for s in mine]
        cls = getattr(pipelining, spec["schedule"])
        first, last = 0 in mine, num_stages - 1 in mine
        sched = cls(stages[0] if chunks == 1 else stages, n_microbatches=m, loss_fn=loss_fn(model_cfg))
        starts, ends, cpus = [], [], []
        for step in range(spec["steps"]):
            x, y = whole_batch(model_cfg, step, m)
            args = (x,) if first else ()
            kwargs = {"target": y, "losses": []} if last else {}
            for st in stages:
                st.submod.zero_grad(set_to_none=True)
            dist.barrier()
            t0, c0 = time.monotonic(), time.process_time()
            sched.step(*args, **kwargs)
            ends.append(time.monotonic())
            cpus.append(time.process_time() - c0)
            starts.append(t0)
        gathered = [None] * world
        dist.all_gather_object(gathered, (starts, ends, cpus))
        if rank == 0:
            steps = range(spec["steps"])
            spans = [max(g[1][k] for g in gathered) - min(g[0][k] for g in gathered) for k in steps]
            results.put(("ok", spans, [sum(g[2][k] for g in gathered) for k in steps]))
        dist.barrier()
        dist.destroy_process_group()
    except BaseException as err:  # noqa: BLE001 - report, the parent raises
        results.put(("error", f"rank {rank}: {type(err).__name__}: {err}", traceback.format_exc()))
        os._exit(1)


def run_torch(ctx, schedule: str, model_cfg, stages: int, microbatches: int, steps: int,
              timeout_s: float = 120.0) -> tuple[list[float], list[float]]:
    """Wall step times and CPU per step summed over ranks (s), for all ``steps`` (the caller
    drops the warm-up ones). Its ranks are pinned as our engine's are, where the host has a
    core for each (engine/runtime/placement.py), so a side-by-side bench compares like with like."""
    from pipelab.engine.runtime.placement import launch_placement
    with launch_placement(stages) as placement:
        return _run_torch_ranks(ctx, placement, schedule, model_cfg, stages, microbatches, steps, timeout_s)


def _run_torch_ranks(ctx, placement, schedule, model_cfg, stages, microbatches, steps, timeout_s):
    from pipelab.engine.runtime.placement import run_pinned
    tmp = tempfile.mkdtemp(prefix="pipelab-bench-")
    results = ctx.Queue()
    spec = dict(schedule=schedule, model_cfg=model_cfg, microbatches=microbatches, steps=steps, timeout_s=timeout_s)
    procs = [ctx.Process(target=run_pinned, daemon=True,
                         args=(_rank_star, placement.cpus_of(r), placement.reference_cpus,
                               (r, stages, os.path.join(tmp, "rdv"), spec, results)))
             for r in range(stages)]
    try:
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                msg = results.get(timeout=0.5)
                break
            except Exception:  # queue.Empty
                dead = [i for i, p in enumerate(procs) if p.exitcode not in (None, 0)]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"torch pipelining {schedule}: rank(s) {dead or 'all'} "
                                       "failed or timed out") from None
        if msg[0] != "ok":
            raise RuntimeError(f"torch pipelining {schedule} failed: {msg[1]}\n{msg[2]}")
        for p in procs:
            p.join(10)
        return msg[1], msg[2]
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(3)
            if p.is_alive():
                p.kill()
                p.join(1)
        results.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _rank_star(args: tuple) -> None:
    """_rank_main with its arguments as one tuple (engine/runtime/placement.py's run_pinned passes one)."""
    _rank_main(*args)


def single_process_step_times(model_cfg, microbatches: int, steps: int) -> list[float]:
    """The same step in one process and one thread: F and B of every micro-batch through the
    whole model, loss / m, gradients accumulated (no pipeline, no messages, no optimizer)."""
    import torch
    from torch import nn

    from pipelab.engine.model.builtin import loss_fn, make_microbatch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = nn.Sequential(*plain_layers(model_cfg))
        loss = loss_fn(model_cfg)
        times = []
        for step in range(steps):
            batches = [make_microbatch(model_cfg, step, j) for j in range(microbatches)]
            model.zero_grad(set_to_none=True)
            t0 = time.monotonic()
            for x, y in batches:
                (loss(model(x), y) / microbatches).backward()
            times.append(time.monotonic() - t0)
        return times
    finally:
        torch.set_num_threads(threads)
