"""One rank of a run on torch's own runtime (``pipelab run --runtime torch``).

The same layers as our engine (engine/model/parts.py, split by engine/model/partition.py through
pipelab.engine.runtime.worker.stage_ranges) become torch ``PipelineStage``s; the schedule goes in as the CSV
``pipelab export`` writes, loaded by ``_PipelineScheduleRuntime._load_csv``, and
torch runs it: its own sends and receives, its own I/W split, its own loss scaling. We only
watch: each stage's forward_one_chunk / backward_one_chunk / backward_weight_one_chunk is
timed on its rank (engine/torch_bridge/clock.py says which clocks: thread CPU time on CPU, CUDA
events on a GPU, as our executor's Stopwatch), and after each step the rank
applies the engine's optimizer (pipelab.engine.runtime.stage.momentum_sgd), as torch leaves that to its caller.

Loss scaling: torch's runtime back-propagates each micro-batch's unscaled loss and divides
the accumulated gradients by m once, at its REDUCE_GRAD action (``scale_grads=True``, the
default). Ours divides each micro-batch's loss by m before its backward. Both give the
mini-batch mean's gradient, which is what ``--check`` compares with one process.

On a GPU the stages live on the rank's device; ranks sharing one GPU move torch's messages
through host memory (engine/torch_bridge/host_staging.py), as gloo takes host memory only.
"""

from __future__ import annotations

import gc
import time

import torch
import torch.distributed as dist
from torch import nn

from pipelab.engine.config import RunConfig
from pipelab.engine.device import Device, Stopwatch, wall_now
from pipelab.engine.model.parts import model_parts
from pipelab.engine.results.rank_record import RankPayload, RankRecord
from pipelab.engine.runtime.memory import storage_key
from pipelab.engine.runtime.placement import allowed_cpus
from pipelab.engine.runtime.weight_grad import DeferrableLinear
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.torch_bridge.clock import MeasuredAction, device_clock_events, memory_samples
from pipelab.engine.torch_bridge.host_staging import route_through_host


def plain_linear(module: nn.Module) -> nn.Module:
    """Our DeferrableLinear layers as torch's own nn.Linear (the same parameters): torch's I/W
    split (stage_backward_input / stage_backward_weight) walks an ordinary autograd graph,
    and DeferrableLinear adds no state, only its deferring forward."""
    for sub in module.modules():
        if isinstance(sub, DeferrableLinear):
            sub.__class__ = nn.Linear
    return module


CPU_DEVICE = Device("cpu")


class ActionTimer:
    """Times every action torch's runtime runs on this rank's stages, on both clocks, and
    counts the activation bytes each forward saves for its backward."""

    def __init__(self, rank: int, params, wall_origin: float, progress=None, total: int = 1,
                 device: Device = CPU_DEVICE):
        self.rank, self.wall_origin, self.progress, self.total = rank, wall_origin, progress, total
        self.stopwatch, self.loss_stopwatch = Stopwatch(device), Stopwatch(device)
        self.step = 0
        self.done = 0
        self.actions: list[MeasuredAction] = []
        self._params = {storage_key(p)[0] for p in params}
        self._held: dict[tuple[int, int], int] = {}  # (stage, micro-batch) -> saved bytes
        self.activation_bytes: dict[int, int] = {}  # stage -> bytes of micro-batch 0's forward

    def wrap(self, stage) -> None:
        forward, backward, weight = stage.forward_one_chunk, stage.backward_one_chunk, stage.backward_weight_one_chunk
        s = stage.stage_index

        def forward_one_chunk(j, *args, **kwargs):
            saved: dict[int, int] = {}

            def note(t):
                ptr, nbytes = storage_key(t)
                if ptr not in self._params:
                    saved[ptr] = nbytes
                return t
            with torch.autograd.graph.saved_tensors_hooks(note, lambda t: t):
                out = self._timed(s, "F", j, forward, j, *args, **kwargs, held=saved)
            return out

        def backward_one_chunk(j, *args, full_backward=True, **kwargs):
            return self._timed(s, "B" if full_backward else "I", j, backward, j, *args,
                               full_backward=full_backward, **kwargs)

        def backward_weight_one_chunk(j, *args, **kwargs):
            return self._timed(s, "W", j, weight, j, *args, **kwargs)
        stage.forward_one_chunk = forward_one_chunk
        stage.backward_one_chunk = backward_one_chunk
        stage.backward_weight_one_chunk = backward_weight_one_chunk

    def wrap_loss(self, schedule) -> None:
        """The last stage's loss runs right after its F (torch's _maybe_compute_loss): its
        time joins that F, as our engine's last-stage F includes the loss."""
        compute = schedule._compute_loss

        def timed_loss(*args, **kwargs):
            self.loss_stopwatch.start()
            loss = compute(*args, **kwargs)
            took = self.loss_stopwatch.stop()
            last = self.actions[-1]
            self.actions[-1] = MeasuredAction(last.rank, last.stage, last.kind, last.microbatch, last.step,
                                              last.cpu_s + took, last.wall_start,
                                              wall_now() - self.wall_origin, last.live_bytes)
            return loss
        schedule._compute_loss = timed_loss

    def _timed(self, s: int, kind: str, j: int, fn, *args, held=None, **kwargs):
        w0 = wall_now()
        self.stopwatch.start()
        out = fn(*args, **kwargs)
        cpu, w1 = self.stopwatch.stop(), wall_now()
        if kind == "F":
            nbytes = sum(held.values())
            self._held[(s, j)] = nbytes
            self.activation_bytes.setdefault(s, nbytes)
        elif kind in ("B", "W"):
            self._held.pop((s, j), None)  # held from F until its backward is complete
        self.actions.append(MeasuredAction(self.rank, s, kind, j, self.step, cpu, w0 - self.wall_origin,
                                           w1 - self.wall_origin, sum(self._held.values())))
        self.done += 1
        if self.progress is not None:
            self.progress(self.step, self.done, self.total)
        return out

    def start_step(self, step: int) -> None:
        self.step, self.done = step, 0


def run_torch_rank(config: RunConfig, schedule: Schedule, csv_path: str, rank: int, world: int, device: Device,
                   progress=None) -> RankPayload | None:
    """Run this rank on torch's runtime; rank 0 returns every rank's records, the others None."""
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    from pipelab.engine.runtime.executor import measure_link_cost
    from pipelab.engine.runtime.stage import momentum_sgd
    from pipelab.engine.runtime.transport import DistTransport
    from pipelab.engine.runtime.worker import shared_wall_origin, split_model
    split = split_model(config, schedule, rank, device, layer=plain_linear)  # the same split as our runtime's
    parts, ranges, shapes, modules = split.parts, split.ranges, split.shapes, split.modules
    tdev = device.torch_device
    route_through_host(device)  # for this rank's process: it ends with the run
    mine = schedule.stages_of(rank)
    params = [p for s in mine for p in modules[s].parameters()]
    stages = [PipelineStage(modules[s], s, schedule.num_stages, tdev) for s in mine]
    runtime = _PipelineScheduleRuntime(stages, n_microbatches=schedule.num_microbatches, loss_fn=parts.loss)
    runtime._load_csv(csv_path)  # torch validates the CSV and adds its own sends and receives
    sends = sum(1 for a in runtime.pipeline_order_with_comms[rank] if "SEND" in a.computation_type.value)
    ping_shape = shapes[1] if len(shapes) > 2 else (1,)
    link = measure_link_cost(rank, world, ping_shape, tdev, DistTransport(device.backend, tdev, 0))
    timer = ActionTimer(rank, params, shared_wall_origin(world, tdev), progress, len(schedule.actions[rank]), device)
    for stage in stages:
        timer.wrap(stage)
    timer.wrap_loss(runtime)
    optimizer = momentum_sgd(params, config.lr)
    first, last = 0 in mine, schedule.num_stages - 1 in mine
    m = schedule.num_microbatches
    record = RankRecord(rank, parameter_bytes=sum(p.numel() * p.element_size() for p in params),
                        cpus=allowed_cpus())  # where the OS holds this rank for its steps
    step0_grads: dict[str, torch.Tensor] = {}
    for step in range(config.steps):
        pairs = [parts.batch(step, j) for j in range(m)]  # torch's step() splits the batch again
        args = (torch.cat([x for x, _ in pairs]).to(tdev),) if first else ()
        losses: list = []
        kwargs = {"target": torch.cat([y for _, y in pairs]).to(tdev), "losses": losses} if last else {}
        timer.start_step(step)
        dist.barrier()
        c0 = time.process_time()
        runtime.step(*args, **kwargs)
        record.cpu_seconds.append(time.process_time() - c0)
        if last:
            record.microbatch_losses.append([float(x.detach()) for x in losses])
            record.losses.append(sum(record.microbatch_losses[-1]) / m)
        if step == 0 and config.check:
            step0_grads = {f"{s}.{n}": p.grad.detach().cpu().clone() for s in mine
                           for n, p in modules[s].named_parameters() if p.grad is not None}
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        gc.collect()
    record.gradient_bytes = record.parameter_bytes
    record.optimizer_bytes = record.parameter_bytes  # momentum: one buffer per parameter
    record.activation_bytes = dict(timer.activation_bytes)
    record.peak_activation_bytes = max((a.live_bytes for a in timer.actions), default=0)
    record.messages_sent = sends * config.steps
    if device.kind == "cuda":
        record.cuda_peak_bytes = torch.cuda.max_memory_allocated(tdev)
    tensors = None
    if config.check:
        from pipelab.engine.runtime.worker import CheckedTensors
        tensors = CheckedTensors(step0_grads, {f"{s}.{n}": p.detach().cpu().clone() for s in mine
                                               for n, p in modules[s].named_parameters()})
    gathered = [None] * world if rank == 0 else None
    dist.gather_object((record, timer.actions, tensors), gathered, dst=0)
    if rank != 0:
        return None
    records = [r for r, _, _ in gathered]
    measured = [a for _, actions, _ in gathered for a in actions]
    events = device_clock_events(schedule, measured, link)
    for r in records:
        r.events = [e for e in events if e.rank == r.rank]
        r.memory = memory_samples(events, measured, r.rank)
    if config.check:
        from pipelab.engine.runtime.worker import compare_with_reference
        compare_with_reference(config, model_parts(config), schedule, ranges, records, [t for _, _, t in gathered],
                               progress)
    return RankPayload(tuple(records), link, tuple((r.start, r.stop) for r in ranges), tuple(shapes), device.kind,
                       transport_text(device))


TRANSPORT = "torch.distributed.pipelining, gloo"
"""What a torch-runtime result says moved its messages (RunResult.transport)."""


def transport_text(device: Device) -> str:
    if device.kind == "cuda" and device.backend == "gloo":
        return TRANSPORT + " (through host memory: ranks share a GPU)"
    return f"torch.distributed.pipelining, {device.backend}"
