"""The one place that decides where tensors live and which clock times an action.

cpu: gloo, CPU tensors, one compute thread per rank; an action's device time is its own
thread CPU time (time.thread_time), so ranks sharing cores do not inflate each other's
durations by waiting (docs/measuring.md).
cuda: NCCL, one GPU per rank (cuda:LOCAL_RANK); device time comes from CUDA events. With
fewer GPUs than ranks on a host, ranks share them (Device.shared): NCCL refuses two ranks of
one group on one GPU, so those ranks join through gloo and their messages move through host
memory (engine/runtime/worker.py's make_transport).
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Device:
    kind: str
    """"cpu" or "cuda"."""
    index: int = 0
    shared: bool = False
    """cuda only: other ranks of this host compute on the same GPU (fewer GPUs than ranks)."""

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.kind, self.index) if self.kind == "cuda" else torch.device("cpu")

    @property
    def backend(self) -> str:
        """NCCL for ranks with a GPU each; gloo on CPU and for ranks sharing a GPU, which NCCL
        refuses (a communicator may hold one rank per GPU). gloo all-reduces and broadcasts
        CUDA tensors itself; its point-to-point messages take host memory (engine/runtime/transport.py)."""
        return "nccl" if self.kind == "cuda" and not self.shared else "gloo"

    @property
    def messages_through_host(self) -> bool:
        """Whether stage-boundary messages move through host memory: CPU ranks, and ranks
        sharing a GPU (no NCCL between them)."""
        return self.backend == "gloo"

    @property
    def receives_ahead(self) -> int:
        """Receives a rank keeps posted ahead of need on each channel.

        gloo's send is a rendezvous: the bytes move only once the receiver has posted its
        buffer. Posting the next receive early lets gloo's own thread move them while this
        rank computes, instead of adding a round trip between two processes (each waiting
        for a core) to every wait. NCCL queues a pair's sends and receives on one stream, so
        an early receive there would hold back this rank's sends to the same peer: 0.
        """
        return 0 if self.backend == "nccl" else 2


def choose_device(requested: str, local_rank: int, world_size: int) -> Device:
    """cpu, cuda, or auto (cuda when at least one GPU per local rank is visible).

    cuda with fewer GPUs than local ranks puts rank r on GPU r mod (GPUs), shared with the
    other ranks there: one GPU can then run a whole pipeline (bench/gpu_check.py does).
    auto never shares: it picks cuda only where each rank would have a GPU of its own."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "auto":
        requested = "cuda" if gpus >= world_size else "cpu"
    if requested == "cuda":
        if gpus == 0:
            raise RuntimeError("--device cuda needs a GPU, found none")
        index = local_rank % gpus
        torch.cuda.set_device(index)
        return Device("cuda", index, shared=gpus < world_size)
    # One thread per rank: ranks share cores, and thread CPU time must cover all the work.
    torch.set_num_threads(1)
    _batch_scheduling()
    keep_freed_memory()
    return Device("cpu")


def _batch_scheduling() -> None:
    """Mark this CPU rank as a batch job (Linux SCHED_BATCH): a rank woken by a message then
    waits for the running one's time slice instead of preempting it. With 4 ranks on 2 cores
    that cut involuntary context switches (getrusage's ru_nivcsw) several-fold, and each
    switch costs a refill of the caches. It also keeps ranks from preempting the web server
    on a classroom machine."""
    if hasattr(os, "sched_setscheduler"):
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        except OSError:
            pass  # not permitted here: the default policy works, only a little slower


# glibc's mallopt(3) parameters and the values a CPU rank sets.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest: blocks below this come from the heap
TRIM_THRESHOLD_BYTES = 1 << 30  # free memory at the heap's top is kept up to this


def keep_freed_memory() -> bool:
    """Let this process's C allocator keep the memory that freed tensors give back.

    torch's CPU tensors come straight from malloc. glibc maps blocks over a moving threshold
    with mmap and gives the heap's free top back to the kernel past another, so a
    micro-batch's activations (0.25-1 MiB each in the default gpt) keep coming back as
    fresh pages: a page fault and a zeroed page for every 4 KiB, on every micro-batch.
    tests/test_device.py measures it on a GPipe stage of two gpt blocks: with these settings
    it takes less than half the page faults. A rank's heap then stays at its peak, which a
    pipeline reaches every step anyway. (PyTorch's performance tuning guide, "Switch Memory
    allocator", recommends jemalloc or TCMalloc for deep learning on CPU for the same reason:
    they reuse memory.) Returns False where the C library has no mallopt (not glibc);
    nothing else changes there."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return (bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
            and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)))


class Stopwatch:
    """Times one action on the device clock: start() ... stop() -> seconds of device work."""

    def __init__(self, device: Device):
        self.cuda = device.kind == "cuda"
        self.stopped_at: float | None = None  # the CPU's last stop() reading
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._stop = torch.cuda.Event(enable_timing=True)

    def start(self, at: float | None = None) -> None:
        """On CPU, from ``at`` where given (a thread-time reading just taken,
        HostStopwatch.taken_at: one clock read fewer between two actions)."""
        if self.cuda:
            self._start.record()
        else:
            self._t0 = time.thread_time() if at is None else at

    def stop(self) -> float:
        if self.cuda:
            self._stop.record()
            self._stop.synchronize()
            return self._start.elapsed_time(self._stop) / 1000.0
        self.stopped_at = time.thread_time()  # HostStopwatch.start(at=...) reuses this reading
        return self.stopped_at - self._t0


class HostStopwatch:
    """The executor's own CPU time between actions: posting sends, bookkeeping, taking a message
    that is in already.

    On CPU the device is this processor, so that time passes on the device clock too; left
    out, a device-clock timeline is shorter than the wall clock's even with a core per rank.
    On a GPU the host does this work while the kernels run: it is not device time, and
    ``take`` returns 0.
    """

    def __init__(self, device: Device):
        self.counts = device.kind == "cpu"
        self.since: float | None = None
        """The thread-time reading it counts from; None while stopped. The executor reads and
        sets it itself around an action (Executor._act): a method call there is the
        executor's own time, each one microseconds with the action's data through the caches."""
        self.taken_at: float | None = None
        """The thread-time reading of the last take() (None when it read none): where the next
        action's Stopwatch may start."""

    def start(self, at: float | None = None) -> None:
        """Start counting now, or from ``at`` (a thread-time reading just taken, e.g.
        Stopwatch.stopped_at: one clock read fewer between two actions)."""
        if self.counts:
            self.since = time.thread_time() if at is None else at

    def take(self) -> float:
        """Seconds since start() (0 if not started), and stop."""
        if self.since is None:
            self.taken_at = None
            return 0.0
        self.taken_at = now = time.thread_time()
        elapsed, self.since = now - self.since, None
        return elapsed


wall_now = time.monotonic
"""Wall clock shared by all processes of one host (CLOCK_MONOTONIC on Linux): time.monotonic
itself, no Python frame around it, as the executor reads it up to four times between two actions."""
