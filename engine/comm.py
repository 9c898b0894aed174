"""Point-to-point messages between pipeline ranks: non-blocking, stamped, in channel order.

Every message is a stage-boundary tensor (an activation going forward, or its gradient going
back) plus a one-number header: the sender's device-clock time when it was produced. Sends
are posted with isend and never waited on until the end of the step, so no order of actions
can deadlock on a send (design.md: blocking send/recv deadlocked 1F1B with gloo).

Receives follow the *sender's* order on each (src, dst) channel: gloo and NCCL both match
messages in posting order, so the receiver takes them in that order and buffers the ones
it needs later. Works without tags, so the same code serves NCCL.
"""

from __future__ import annotations

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

    def __init__(self, rank: int, schedule: Schedule, shape_of, device: torch.device,
                 dtype: torch.dtype = torch.float32):
        self.rank = rank
        self.device = device
        self.dtype = dtype
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
        header = torch.tensor([stamp], dtype=torch.float64, device=self.device)
        payload = tensor.detach().contiguous()
        ops = [dist.P2POp(dist.isend, header, dst), dist.P2POp(dist.isend, payload, dst)]
        self.pending_sends.extend(dist.batch_isend_irecv(ops))
        self.pending_sends.append((header, payload))  # keep buffers alive until waited
        self.sent += 1
        self.bytes_sent += payload.numel() * payload.element_size()

    def receive(self, key: Key, src: int) -> tuple[torch.Tensor, float]:
        """The tensor for ``key`` and its sender's stamp, receiving earlier messages first."""
        if src == self.rank:
            return self.local.pop(key)
        while key not in self.buffered:
            queue = self.incoming.get(src)
            if not queue:
                raise RuntimeError(f"rank {self.rank} expects {key} from rank {src}, but its schedule sends no such message")
            next_key = queue.popleft()
            header = torch.empty(1, dtype=torch.float64, device=self.device)
            # An activation entering stage s has stage s's input shape; the gradient sent
            # back to stage s is the gradient of its output, i.e. stage s+1's input shape.
            kind, stage, _ = next_key
            shape = self.shape_of(stage if kind == "act" else stage + 1)
            payload = torch.empty(shape, dtype=self.dtype, device=self.device)
            ops = [dist.P2POp(dist.irecv, header, src), dist.P2POp(dist.irecv, payload, src)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            self.buffered[next_key] = (payload, float(header.item()))
            self.received += 1
        return self.buffered.pop(key)

    def finish(self) -> None:
        """Wait for every send of the step (their buffers may then be freed)."""
        for work in self.pending_sends:
            if hasattr(work, "wait"):
                work.wait()
        self.pending_sends.clear()
