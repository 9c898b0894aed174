"""The R action: one stage's gradients averaged over its data-parallel replicas.

torch.distributed does the collective (gloo on CPU, NCCL with a GPU per rank), in one group
per pipeline rank: the d processes that hold the same stages (engine/schedules/data_parallel.py
RankLayout). The stage's gradients go as one flat buffer, one all-reduce per stage and step,
as DDP's buckets and Megatron-LM's contiguous gradient buffer send them.

Device clock (docs/measuring.md): an all-reduce starts when the group's last member reaches
it (each member's clock goes to the group's latest) and lasts the collective's cost, measured
once per run at set-up, as the link cost of a message is: the fastest of a few rounds, the
group agreeing on its slowest member's. On the wall clock it lasts what it really took.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from pipelab.engine.device import Device
from pipelab.engine.schedules.data_parallel import RankLayout

TIMING_ROUNDS = 5
"""All-reduces timed per stage at set-up; the fastest is its cost (contention only adds)."""

_TIMED: dict[tuple, float] = {}
"""Costs this process has timed, by (group's processes, gradient size, device kind). A launch's
processes start fresh (engine/runtime/rank_processes.py), so it holds one launch's timings: the
plays of a launch whose steps take turns (engine/runtime/turns.py) reduce the same bytes over
the same processes, and each timing its own set a 2 x 2 layout's all-reduce at 3.6 ms in one
and 7.3 ms in the other, so their steps differed by the timings, not by where R sits (lesson 7)."""


@dataclass
class GradientReduce:
    """This process's side of its stages' all-reduces."""
    group: object
    """The process group of the d processes holding this pipeline rank's stages."""
    replicas: int
    pipeline: object | None
    """With the reduce at the flush: this replica's pipeline, to wait for its every stage."""
    device: Device
    cost_s: dict[int, float]
    """Per stage of this rank: its all-reduce's measured cost, seconds."""
    divisor: int = 0
    """What the summed gradients are divided by: d for d pipelines (each scaled its loss by
    1/m of its own m); 1 for a replicated stage, whose workers share one step's m micro-batches
    and already scaled each loss by 1/m. 0: the group's size."""

    @classmethod
    def set_up(cls, layout: RankLayout, pipeline_rank: int, stages: dict, device: Device, flush: bool
               ) -> "GradientReduce":
        """Every process of the run calls it, with the same layout: new_group is collective
        over the whole world, every group made by every process in the same order."""
        groups = [dist.new_group(list(layout.reduce_group(r)), backend=device.backend)
                  for r in range(layout.pipeline_ranks)]
        pipelines = ([dist.new_group(list(layout.pipeline(k)), backend=device.backend) for k in range(layout.replicas)]
                     if flush else [])
        pipeline = pipelines[layout.replica_of(dist.get_rank())] if flush else None
        reduce = cls(groups[pipeline_rank], layout.replicas, pipeline, device, {})
        members = tuple(layout.reduce_group(pipeline_rank))
        reduce.cost_s = {s: reduce._timed_cost(stage.module, members) for s, stage in sorted(stages.items())}
        return reduce

    @classmethod
    def for_replicated_stage(cls, schedule, rank: int, stages: dict, device: Device) -> "GradientReduce | None":
        """PipeDream's replicated stages: one group per stage with several workers, made by every
        process in stage order (new_group is collective over the world). None for a worker whose
        stage has one worker: it has nothing to reduce."""
        groups = {s: dist.new_group(list(schedule.workers_of(s)), backend=device.backend)
                  for s in range(schedule.num_stages) if len(schedule.workers_of(s)) > 1}
        (stage,) = schedule.stages_of(rank)
        if stage not in groups:
            return None
        # A synchronous step's losses were scaled for the whole step: the workers' gradients sum.
        # Asynchronous PipeDream's update takes a round, one micro-batch on each: they average.
        count = len(schedule.workers_of(stage))
        reduce = cls(groups[stage], count, None, device, {}, divisor=count if schedule.is_async else 1)
        reduce.cost_s = {stage: reduce._timed_cost(stages[stage].module, tuple(schedule.workers_of(stage)))}
        return reduce

    def _timed_cost(self, module: torch.nn.Module, members: tuple = ()) -> float:
        """The fastest of TIMING_ROUNDS all-reduces of this stage's gradient size, the group's
        slowest member's figure (every member must agree on what an R lasts); timed once per
        launch for one group and size (_TIMED), every member of ``members`` (the group's
        processes) asking in the same order, so all of them time it or none does."""
        if self.replicas == 1:
            return 0.0
        size = sum(p.numel() for p in module.parameters())
        key = (members, size, self.device.kind)
        if members and key in _TIMED:
            return _TIMED[key]
        buffer = torch.zeros(size, device=self.device.torch_device)
        best = float("inf")
        for _ in range(TIMING_ROUNDS):
            dist.barrier(group=self.group)
            started = time.perf_counter()
            dist.all_reduce(buffer, group=self.group)
            self._synchronize()
            best = min(best, time.perf_counter() - started)
        agreed = torch.tensor([best], dtype=torch.float64, device=self.device.torch_device)
        dist.all_reduce(agreed, op=dist.ReduceOp.MAX, group=self.group)
        if members:
            _TIMED[key] = float(agreed.item())
        return float(agreed.item())

    def _synchronize(self) -> None:
        if self.device.kind == "cuda":
            torch.cuda.synchronize()

    def latest(self, clock: float, pipeline: bool = False) -> float:
        """The latest device clock over the stage's group (or this replica's pipeline)."""
        group = self.pipeline if pipeline else self.group
        reading = torch.tensor([clock], dtype=torch.float64, device=self.device.torch_device)
        dist.all_reduce(reading, op=dist.ReduceOp.MAX, group=group)
        return float(reading.item())

    def average_named(self, grads: dict[str, torch.Tensor], like: dict[str, torch.Tensor]) -> None:
        """The same for a versioned stage (PipeDream's weight stash), whose gradients wait in
        ``grads`` (Stage.grad_accum) by the names of ``like`` (its weights): one flat buffer."""
        flat = torch.cat([grads.get(n, torch.zeros_like(w)).reshape(-1) for n, w in like.items()])
        dist.all_reduce(flat, group=self.group)
        if (self.divisor or self.replicas) != 1:
            flat.div_(self.divisor or self.replicas)
        offset = 0
        for n, w in like.items():
            grads[n] = flat[offset:offset + w.numel()].view_as(w)
            offset += w.numel()
        self._synchronize()

    def average(self, module: torch.nn.Module) -> None:
        """Replace each gradient of ``module`` by its mean over the replicas: one flat buffer,
        one all-reduce (sum), divided by d (by ``divisor``: a replicated stage's workers sum, as
        their losses were scaled for the whole step). A parameter without a gradient counts as zeros."""
        params = list(module.parameters())
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])
        dist.all_reduce(flat, group=self.group)
        if (self.divisor or self.replicas) != 1:
            flat.div_(self.divisor or self.replicas)
        offset = 0
        for p in params:
            n = p.numel()
            if p.grad is None:
                p.grad = torch.empty_like(p)
            p.grad.copy_(flat[offset:offset + n].view_as(p))
            offset += n
        self._synchronize()
