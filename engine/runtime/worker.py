"""The body of one rank: build its stages, measure, run the steps, report.

Used both by the engine's own launcher (spawned ranks) and under torchrun (env://).
"""

from __future__ import annotations

import gc
import math
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

from pipelab.engine.config import RunConfig, usable_cores
from pipelab.engine.device import Device, wall_now
from pipelab.engine.model.partition import partition, profile_layer_times, split_without_profiling
from pipelab.engine.model.parts import UserModel, model_parts
from pipelab.engine.results.rank_record import RankPayload
from pipelab.engine.results.records import GradientCheck
from pipelab.engine.runtime.comm import channel_sizes
from pipelab.engine.runtime.executor import Executor, measure_link_cost
from pipelab.engine.runtime.gradient_reduce import GradientReduce
from pipelab.engine.runtime.memory import ActivationTracker
from pipelab.engine.runtime.placement import on_reference_cores, poll_seconds
from pipelab.engine.runtime.post_validation import Chain, StepCheck
from pipelab.engine.runtime.stage import Stage
from pipelab.engine.runtime.transport import DistTransport, PeerOffset, SharedMemoryTransport
from pipelab.engine.runtime.weight_grad import WeightGradStore, attach_grad_store
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.stream import make_stream


def loss_scale(schedule: Schedule) -> float:
    """1 / (micro-batches per weight update). Synchronous: the loss of each micro-batch is
    divided by m, so the accumulated gradient equals the mini-batch gradient (the pitfall of
    torchtitan #2972). PipeDream: every micro-batch updates alone. 2BW: p per update."""
    if not schedule.is_async:
        return 1.0 / schedule.num_microbatches
    last = schedule.num_stages - 1  # over every worker of a replicated last stage
    updates = sum(1 for r in schedule.workers_of(last) for a in schedule.actions[r]
                  if a.kind == "U" and a.stage == last)
    return updates / schedule.num_microbatches


def stage_ranges(config: RunConfig, layers: list[nn.Module], num_stages: int, sample: torch.Tensor) -> list[range]:
    if config.stage_layers:  # given: what a plan chose
        starts = [sum(config.stage_layers[:s]) for s in range(num_stages + 1)]
        return [range(starts[s], starts[s + 1]) for s in range(num_stages)]
    if config.partition != "time":
        return split_without_profiling(layers, num_stages, config.partition)
    # Profiled time: rank 0 measures, everyone uses its numbers (ranks must agree).
    times = [None]
    if dist.get_rank() == 0:
        times = [profile_layer_times(layers, sample)]
    dist.broadcast_object_list(times, 0)
    return partition(len(layers), num_stages, "time", times[0])


def boundary_shapes(layers: list[nn.Module], ranges: list[range], x: torch.Tensor) -> list[tuple]:
    """shape[s]: the activation entering stage s (one dry forward of micro-batch 0)."""
    shapes = [tuple(x.shape)]
    with torch.no_grad():
        for r in ranges:
            for i in r:
                x = layers[i](x)
            shapes.append(tuple(x.shape))
    return shapes


@dataclass
class RankPlay:
    """One schedule's side of one rank: its stages (its own copy of the model's initial
    weights, split its own way), its transport and its executor. A rank plays one of these
    (run_rank), or several whose steps take turns (engine/runtime/alternating.py)."""
    config: RunConfig
    schedule: Schedule
    ranges: list[range]
    shapes: list[tuple]
    executor: Executor
    stream: object | None
    link: float
    transport_name: str
    user_model: UserModel | None = None

    def play_step(self, step: int, hooks=None) -> None:
        """One step with a barrier around it, then the update, then garbage collected
        before the next step's all-reduce: outside every timed action."""
        if hooks is not None:
            hooks(self.executor.process, step)
        self.executor.run_step(step)
        self.executor.finish_step(step)
        gc.collect()

    def play_all(self, hooks=None) -> None:
        """Every step of the run: one stream where steps overlap, else step after step."""
        rank = self.executor.process
        if self.stream is not None:
            self.executor.run_stream(on_step=None if hooks is None else lambda step: hooks(rank, step))
            return
        for step in range(self.config.steps):
            self.play_step(step, hooks)


@dataclass
class StageSplit:
    """The model as this rank holds it: its layers split into stages, on its device."""
    parts: object
    """pipelab.engine.model.parts: the layers, the data (batch(step, j)) and the loss."""
    ranges: list[range]
    """Per stage, its layers."""
    shapes: list[tuple]
    """shape[s]: the activation entering stage s."""
    modules: dict[int, nn.Module]
    """This rank's stages, each an nn.Sequential of its layers."""


def split_model(config: RunConfig, schedule: Schedule, rank: int, device: Device, user_model: UserModel | None = None,
                layer=None) -> StageSplit:
    """A fresh copy of the model (its seed gives every copy the same initial weights), split into
    ``schedule``'s stages as ``config.partition`` says, this rank's stages on its device. Both
    runtimes start from it (torch's passes ``layer``, each layer as its runtime takes it). Every
    rank calls it: a profiled partition has a collective."""
    parts = model_parts(config, user_model)
    layers = [layer(each) for each in parts.layers] if layer is not None else parts.layers
    sample = parts.batch(0, 0)[0]
    ranges = stage_ranges(config, layers, schedule.num_stages, sample)
    shapes = boundary_shapes(layers, ranges, sample)
    # Other ranks' layers are not ours to keep: only this rank's stages stay referenced.
    modules = {s: nn.Sequential(*[layers[i] for i in ranges[s]]).to(device.torch_device)
               for s in schedule.stages_of(rank)}
    return StageSplit(parts, ranges, shapes, modules)


def make_stages(config: RunConfig, schedule: Schedule, pipe: int, split: StageSplit) -> dict[int, Stage]:
    """Pipeline rank ``pipe``'s Stages from its modules in ``split``, sharing one activation
    tracker; a stage whose backward is split (I and W) has its layers record W's work."""
    modules = split.modules
    mine = schedule.stages_of(pipe)
    tracker = ActivationTracker([p for s in mine for p in modules[s].parameters()])
    stages = {}
    for s in mine:
        store = WeightGradStore()
        if schedule.has_split_backward(s):  # elsewhere the layers stay torch's own linear
            attach_grad_store(modules[s], store)
        stages[s] = Stage(s, modules[s], is_first=s == 0, is_last=s == schedule.num_stages - 1,
                          loss_fn=split.parts.loss, grad_store=store, tracker=tracker, lr=config.lr,
                          recompute=config.recompute, versioned=schedule.is_async, stash=config.stash)
    return stages


def set_up_rank(config: RunConfig, schedule: Schedule, rank: int, world: int, device: Device,
                progress=None, user_model: UserModel | None = None,
                shared_memory: tuple[str, dict] | None = None, wall_origin: float | None = None) -> RankPlay:
    """Build this process's side of ``schedule``: stages from a fresh copy of the model (the same
    seed gives every schedule of a launch the same initial weights), the transport, the link
    cost and the executor. ``rank`` is the process (one of d x p with data parallelism: it
    plays pipeline rank rank % p of replica rank // p, config.layout). Every process calls it:
    it has collectives. ``wall_origin``: the wall clock's zero of a launch's first play, so that
    all of its plays share one host clock."""
    layout = config.layout
    replica, pipe = layout.replica_of(rank), layout.pipeline_rank_of(rank)
    split = split_model(config, schedule, pipe, device, user_model)
    parts, ranges, shapes = split.parts, split.ranges, split.shapes
    tdev = device.torch_device
    stages = make_stages(config, schedule, pipe, split)
    stream = make_stream(schedule, config.steps) if config.overlapping(schedule) else None
    played = stream.program if stream is not None else schedule  # what the messages follow
    ping_shape = shapes[1] if len(shapes) > 2 else (1,)  # a stage-boundary message
    transport = make_transport(config, played, rank, device, shapes, math.prod(ping_shape), shared_memory)
    transport = PeerOffset(transport, layout.process(replica, 0)) if replica else transport
    # Replica 0's first two ranks time the link; every process takes their figure.
    link = measure_link_cost(pipe if replica == 0 else -1, schedule.num_ranks, ping_shape, tdev, transport)
    reduce = None
    if schedule.stage_replicas:
        reduce = GradientReduce.for_replicated_stage(schedule, rank, stages, device)
    elif schedule.reduces_gradients:
        reduce = GradientReduce.set_up(layout, pipe, stages, device, flush=schedule.reduce_at_flush)
    if wall_origin is None:
        wall_origin = shared_wall_origin(world, tdev)
    m = schedule.num_microbatches

    # Replica k trains micro-batches k*m .. k*m + m - 1 of the global batch.
    def make_input(step, j):
        return parts.batch(step, replica * m + j)[0].to(tdev)

    def make_target(step, j):
        return parts.batch(step, replica * m + j)[1].to(tdev)

    step_check = None
    if config.clip_grad_norm is not None:
        chain = None
        if stream is not None:  # its messages keep their own order: a gloo group of their own
            chain = Chain(rank, world, dist.new_group(backend="gloo"))
        step_check = StepCheck(config.clip_grad_norm, config.inject_nonfinite, chain)
    executor = Executor(pipe, schedule, stages, device, lambda s: shapes[s], make_input, make_target,
                        loss_scale(schedule), link, wall_origin, transport, progress, stream=stream,
                        capture_step=0 if config.check else None, step_check=step_check, reduce=reduce,
                        replica=replica)
    return RankPlay(config, schedule, ranges, shapes, executor, stream, link, transport.name, user_model)


def shared_wall_origin(world: int, tdev) -> float:
    """Wall-clock origin: one host shares CLOCK_MONOTONIC, so rank 0's reading serves all;
    across hosts each rank starts its own after a barrier (good to a barrier's skew)."""
    hosts = [None] * world
    dist.all_gather_object(hosts, socket.gethostname())
    origin = torch.tensor([wall_now()], dtype=torch.float64, device=tdev)
    dist.broadcast(origin, 0)
    dist.barrier()
    return float(origin.item()) if len(set(hosts)) == 1 else wall_now()


def gather_rank(play: RankPlay, world: int, progress=None, references: dict | None = None) -> RankPayload | None:
    """Send this rank's records (and, with the check, its gradients and weights) to rank 0;
    on rank 0, compare them with one process's run and return the payload, None elsewhere.
    ``references`` keeps one process's runs by their settings, for a launch whose schedules
    train the same model on the same data (engine/runtime/alternating.py)."""
    config, executor = play.config, play.executor
    record = executor.summarize()
    # With --check, each rank hands rank 0 step 0's gradients and its final weights: one
    # process computes the reference for all, with every core it has, instead of each rank
    # running the whole model at once on a shared host.
    tensors = _checked_tensors(executor) if config.check else None
    first = dist.get_rank() == 0  # the process: with data parallelism executor.rank is its pipeline rank
    gathered = [None] * world if first else None
    dist.gather_object((record, tensors), gathered, dst=0)
    if not first:
        return None
    records = [r for r, _ in gathered]
    if config.check:
        compare_with_reference(config, model_parts(config, play.user_model), play.schedule, play.ranges, records,
                               [t for _, t in gathered], progress, references)
    reduce_cost = {s: c for r in records for s, c in r.reduce_cost_s.items()}
    return RankPayload(tuple(records), play.link, tuple((r.start, r.stop) for r in play.ranges),
                       tuple(play.shapes), executor.device.kind, play.transport_name,
                       tuple(reduce_cost.get(s, 0.0) for s in range(play.schedule.num_stages)) if reduce_cost else ())


def run_rank(config: RunConfig, schedule: Schedule, rank: int, world: int, device: Device,
             progress=None, hooks=None, user_model: UserModel | None = None,
             shared_memory: tuple[str, dict] | None = None) -> RankPayload | None:
    """Run this rank on ``device`` (from pipelab.engine.device.choose_device); returns the gathered
    records on rank 0, None elsewhere. ``shared_memory=(directory, semaphores)`` (from
    pipelab.engine.runtime.launch, one host) moves CPU messages through shared memory instead of gloo."""
    play = set_up_rank(config, schedule, rank, world, device, progress, user_model, shared_memory)
    with collected_between_steps():
        play.play_all(hooks)
    return gather_rank(play, world, progress)


@dataclass(frozen=True)
class CheckedTensors:
    """What one rank hands rank 0 for the check, on the CPU, named "stage.layer-in-stage.name":
    the rank's side of pipelab.engine.runtime.reference.ReferenceRun."""
    step0_grads: dict[str, torch.Tensor]
    final_weights: dict[str, torch.Tensor]


def _checked_tensors(executor: Executor) -> CheckedTensors:
    return CheckedTensors({n: g.cpu() for n, g in executor.captured_grads.items()},
                          {n: w.cpu() for n, w in executor.parameters().items()})


def compare_with_reference(config: RunConfig, parts, schedule, ranges, records, tensors, progress=None,
                           references: dict | None = None) -> None:
    """On rank 0: set each rank's ``record.grads`` to its largest relative differences from
    one process running the same steps (pipelab.engine.runtime.reference.reference_run: loss / m, the same
    clipping and skipping): step 0's gradients, the weights after the last step, and (on the
    rank of the last stage) every step's loss. Both runtimes' ranks end with it. ``references``
    keeps one process's runs by their settings: schedules of one launch share the model and
    data, so those of the same m, steps, learning rate and clipping share one reference.

    With data parallelism (d replicas of m micro-batches) the one process trains the whole
    global batch, d x m micro-batches with its loss divided by d x m, and every replica must
    match it: each replica's loss / m, averaged over the replicas by R, is that gradient. A
    step's loss is compared as the mean over the replicas, and the replicas' final weights
    with each other (GradientCheck.replica_weight_max_diff)."""
    from pipelab.engine.runtime.reference import reference_run
    last = schedule.num_stages - 1
    inject = None if config.inject_nonfinite is None else (config.inject_nonfinite, ranges[last][0])
    # The reference has no action of its own to report: without a tick per micro-batch, a
    # loaded host took a long check for a hung run (engine/runtime/rank_processes.py's stall clock). Each tick
    # reads as the last step done and then some, so the bar stays full.
    last_step = config.steps - 1
    tick = None if progress is None else (lambda k: progress(last_step, 1 + k, 1))
    microbatches = schedule.num_microbatches * config.data_parallel
    key = (microbatches, config.steps, config.lr, config.clip_grad_norm, inject)
    ref = None if references is None else references.get(key)
    if ref is None:
        # A pinned rank 0 moves to its launch's reference cores first: torch's threads follow its affinity.
        with on_reference_cores(), torch_threads(usable_cores()):
            ref = reference_run(parts, microbatches, config.steps, config.lr, config.clip_grad_norm,
                                inject, on_microbatch=tick)
        if references is not None:
            references[key] = ref
    last_records = [r for r in records if last in schedule.stages_of(r.rank) and r.losses]
    # A step's loss is the mean over every micro-batch of the global batch, wherever it ran:
    # on each replica's last stage (d pipelines) or on one worker of a replicated last stage.
    mine_l = [sum(sum(r.microbatch_losses[k]) for r in last_records)
              / sum(len(r.microbatch_losses[k]) for r in last_records)
              for k in range(min(len(r.microbatch_losses) for r in last_records))]
    # Every copy of a stage must end with the same weights: each replica's (d pipelines), or
    # each worker's of a replicated stage, against the first that holds it.
    firsts = {(r.rank, r.replica): got for r, got in zip(records, tensors)}

    def first_copy(record):
        if schedule.is_replicated:
            return firsts[(schedule.stage_to_rank[schedule.stages_of(record.rank)[0]], 0)]
        return firsts[(record.rank, 0)]
    for record, got in zip(records, tensors):
        mine = schedule.stages_of(record.rank)
        losses = {}
        if any(record is r for r in last_records):
            ref_l = ref.losses
            losses = dict(loss=mine_l[0], reference_loss=ref_l[0],
                          loss_rel_diff=abs(mine_l[0] - ref_l[0]) / max(abs(ref_l[0]), 1e-12),
                          losses=tuple(mine_l), reference_losses=tuple(ref_l),
                          losses_max_rel_diff=(max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(mine_l, ref_l))
                                               if len(mine_l) == len(ref_l) else float("inf")))
        replicas = None
        if config.data_parallel > 1 or schedule.is_replicated:
            first = first_copy(record).final_weights
            replicas = max((abs(w - first[name]).max().item() for name, w in got.final_weights.items()),
                           default=0.0)
        record.grads = GradientCheck(grad_max_rel_diff=_worst(ref.step0_grads, got.step0_grads, ranges, mine),
                                     weight_max_rel_diff=_worst(ref.final_weights, got.final_weights, ranges, mine),
                                     **losses, replica_weight_max_diff=replicas)


@contextmanager
def torch_threads(n: int):
    """torch's intra-op threads set to ``n`` inside, restored after: a CPU rank computes with
    one (pipelab.engine.device), but the reference runs after every rank has finished its steps."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _worst(reference: Sequence[Mapping], mine_now: dict, ranges, mine) -> float:
    """Largest difference, relative to each tensor's largest entry, between the reference's
    per-layer tensors and this rank's ("stage.layer-in-stage.name"); inf for one missing."""
    worst = 0.0
    for s in mine:
        for k, i in enumerate(ranges[s]):
            for name, ref in reference[i].items():
                got = mine_now.get(f"{s}.{k}.{name}")
                if got is None:
                    worst = float("inf")
                    continue
                scale = ref.abs().max().item() or 1.0
                worst = max(worst, (got.cpu() - ref).abs().max().item() / scale)
    return worst


@contextmanager
def collected_between_steps():
    """Python's cyclic garbage collector only between steps, as Megatron-LM's --manual-gc.

    Left automatic, it runs whenever allocations pass a threshold, often inside an action,
    whose thread time then includes it: one step's action ran long, the next's did not, and
    the device clock drifted from the simulator fed the same run's costs (the device-vs-
    simulator test in tests/test_engine_run.py failed now and then in pytest-launched runs,
    whose ranks have a larger heap to walk). What set-up made lives all run: frozen, no
    collection walks it again.
    """
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


def make_transport(config: RunConfig, schedule: Schedule, rank: int, device: Device, shapes: list[tuple],
                   ping_numel: int, shared_memory: tuple[str, dict] | None):
    """Shared memory for CPU ranks, or ranks sharing a GPU, that pipelab.engine.runtime.launch started on one
    host; torch.distributed otherwise (a GPU per rank, torchrun, or config.transport="torch").
    Every rank calls it: the shared memory set-up has a barrier."""
    if shared_memory is None or not device.messages_through_host or config.transport == "torch":
        return DistTransport(device.backend, device.torch_device, device.receives_ahead)
    directory, semaphores = shared_memory
    sizes = channel_sizes(schedule, lambda s: shapes[s], ping_numel)
    # Channels between processes: every replica's pipeline has the same ones, offset (RankLayout).
    offset = config.layout.process(config.layout.replica_of(rank), 0)
    sizes = {(src + offset, dst + offset): size for (src, dst), size in sizes.items()}
    transport = SharedMemoryTransport(rank, directory, semaphores, {c: n for c, (n, _) in sizes.items()},
                                      {c: numel for c, (_, numel) in sizes.items()}, config.timeout_s,
                                      device.torch_device, poll_seconds())
    transport.create_outgoing()
    dist.barrier()  # every channel file exists before anyone maps its incoming ones
    transport.open_incoming()
    return transport


def start_parent_watch(parent_pid: int, run_dir: str | None = None) -> None:
    """End this rank if the process that launched it disappears (no orphans), removing the
    run's temp folder first: a launcher killed outright (SIGKILL) never ran its own cleanup."""
    def watch():
        import shutil
        import time
        while _alive(parent_pid):
            time.sleep(0.5)
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)  # every rank tries; one suffices
        os._exit(3)
    threading.Thread(target=watch, daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs. A killed process stays a zombie until its own parent reaps it, and
    signal 0 still reaches a zombie: a parent that waits for our output pipes before reaping
    would wait for ever. So on Linux read its state."""
    if not os.path.isdir("/proc/self"):  # no /proc here: signal 0 is the portable check
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def init_distributed(backend: str, init_method: str, rank: int, world: int, timeout_s: float) -> None:
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))
