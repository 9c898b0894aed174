"""Point-to-point messages between pipeline ranks: non-blocking, stamped, in channel order.

Every message is a stage-boundary tensor (an activation going forward, or its gradient going
back) with the sender's device-clock time appended: one float64 in the last 8 bytes of the
same buffer, so a message is one isend/irecv (two ops per message cost ~20% of a step). Sends
are posted with isend and never waited on until the end of the step, so no order of actions
can deadlock on a send (design.md: blocking send/recv deadlocked 1F1B with gloo).

Receives follow the *sender's* order on each (src, dst) channel: gloo and NCCL both match
messages in posting order, so the receiver takes them in that order and buffers the ones
it needs later. Works without tags, so the same code serves NCCL.
"""

from __future__ import annotations

import math
from collections import deque

import torch
import torch.distributed as dist

from engine.actions import FORWARD, INPUT_GRAD_KINDS
from engine.schedules.base import Schedule

Key = tuple[str, int, int]  # ("act" | "grad", destination stage, micro-batch)


def channel_plan(schedule: Schedule) -> dict[tuple[int, int], list[Key]]:
    """For every (src, dst) rank pair, the messages src sends, in src's program order."""
    plan: dict[tuple[int, int], list[Key]] = {}
    last = schedule.num_stages - 1
    for src, program in enumerate(schedule.actions):
        for a in program:
            if a.kind == FORWARD and a.stage < last:
                dst, key = schedule.stage_to_rank[a.stage + 1], ("act", a.stage + 1, a.microbatch)
            elif a.kind in INPUT_GRAD_KINDS and a.stage > 0:
                dst, key = schedule.stage_to_rank[a.stage - 1], ("grad", a.stage - 1, a.microbatch)
            else:
                continue
            if dst != src:
                plan.setdefault((src, dst), []).append(key)
    return plan


class Mailbox:
    """One rank's side of all channels for one step."""

    def __init__(self, rank: int, schedule: Schedule, shape_of, device: torch.device):
        self.rank = rank
        self.device = device
        self.dtype = torch.float32  # stage boundaries are fp32; the stamp takes two slots
        self.shape_of = shape_of  # stage -> shape of that stage's input activation
        plan = channel_plan(schedule)
        self.incoming = {src: deque(keys) for (src, dst), keys in plan.items() if dst == rank}
        self.buffered: dict[Key, tuple[torch.Tensor, float]] = {}
        self.pending_sends: list = []
        self.local: dict[Key, tuple[torch.Tensor, float]] = {}
        self.sent = self.received = 0
        self.bytes_sent = 0

    def send(self, key: Key, tensor: torch.Tensor, stamp: float, dst: int) -> None:
        if dst == self.rank:  # next stage on this rank: hand over in memory
            self.local[key] = (tensor, stamp)
            return
        numel = tensor.numel()
        buf = torch.empty(_packed_len(numel), dtype=self.dtype, device=self.device)
        buf[:numel].copy_(tensor.detach().reshape(-1))
        _stamp_view(buf)[0] = stamp
        self.pending_sends.append((dist.isend(buf, dst), buf))  # keep the buffer until waited
        self.sent += 1
        self.bytes_sent += numel * buf.element_size()

    def receive(self, key: Key, src: int) -> tuple[torch.Tensor, float]:
        """The tensor for ``key`` and its sender's stamp, receiving earlier messages first."""
        if src == self.rank:
            return self.local.pop(key)
        while key not in self.buffered:
            queue = self.incoming.get(src)
            if not queue:
                raise RuntimeError(f"rank {self.rank} expects {key} from rank {src}, but its schedule sends no such message")
            next_key = queue.popleft()
            # An activation entering stage s has stage s's input shape; the gradient sent
            # back to stage s is the gradient of its output, i.e. stage s+1's input shape.
            kind, stage, _ = next_key
            shape = self.shape_of(stage if kind == "act" else stage + 1)
            numel = math.prod(shape)
            buf = torch.empty(_packed_len(numel), dtype=self.dtype, device=self.device)
            dist.irecv(buf, src).wait()
            self.buffered[next_key] = (buf[:numel].view(shape), float(_stamp_view(buf)[0]))
            self.received += 1
        return self.buffered.pop(key)

    def finish(self) -> None:
        """Wait for every send of the step (their buffers may then be freed)."""
        for work, _ in self.pending_sends:
            work.wait()
        self.pending_sends.clear()


def _packed_len(numel: int) -> int:
    """float32 slots for the payload, padding to 8-byte alignment, and one float64 stamp."""
    return numel + numel % 2 + 2


def _stamp_view(buf: torch.Tensor) -> torch.Tensor:
    return buf[-2:].view(torch.float64)
