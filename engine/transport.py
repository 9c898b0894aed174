"""How a message's bytes get from one rank to another: torch.distributed, or shared memory.

The Mailbox (engine/comm.py) decides *which* message to send or receive and in what order;
a transport only moves one packed buffer and says when it has arrived. Two transports:

- ``DistTransport``: ``dist.isend`` / ``dist.irecv`` (gloo on CPU, NCCL on GPU). Used under
  torchrun, across hosts, and on GPUs.
- ``SharedMemoryTransport``: the CPU ranks of one run started by ``engine.launch.run``, all
  on one host. Each channel (src -> dst) is a file in the run's private temp dir, mapped by
  both ranks, with one slot per message of a step, and a counting semaphore (made by the
  launcher) that src raises once per message written. A message is then one copy in, one
  copy out and at most one futex wake-up. Through gloo the same message is a TCP round
  trip with a rendezvous between two helper threads; on 4 ranks sharing 2 cores that was
  about a third of all CPU time of a step (bench/RESULTS.md, section 3).

Slots are never overwritten while still unread: a channel has as many slots as messages
per step, every message of a step is read within that step, and the next step's first
send comes after the all-reduce that starts it (engine/executor.py).
"""

from __future__ import annotations

import mmap
import os

import torch
import torch.distributed as dist

Channel = tuple[int, int]  # (source rank, destination rank)


class DistTransport:
    """torch.distributed point-to-point; returns torch's own work objects."""

    def __init__(self, backend: str, receives_ahead: int = 0):
        self.name = backend
        self.receives_ahead = receives_ahead

    def isend(self, buf: torch.Tensor, dst: int):
        return dist.isend(buf, dst)

    def irecv(self, buf: torch.Tensor, src: int):
        return dist.irecv(buf, src)


class _Sent:
    """A shared-memory send is complete once written."""

    def wait(self) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


class _Receive:
    def __init__(self, transport: SharedMemoryTransport, src: int, slot: int, buf: torch.Tensor):
        self.transport, self.src, self.slot, self.buf = transport, src, slot, buf
        self.arrived = False  # holds the semaphore's token once taken
        self.done = False

    def is_completed(self) -> bool:
        if not self.arrived:
            self.arrived = self.transport.arrived[self.src].acquire(block=False)
        return self.arrived

    def wait(self) -> bool:
        if self.done:
            return True
        if not self.arrived:
            if not self.transport.arrived[self.src].acquire(timeout=self.transport.timeout_s):
                raise RuntimeError(f"rank {self.transport.rank}: no message from rank {self.src} "
                                   f"within {self.transport.timeout_s:g} s")
            self.arrived = True
        self.buf.copy_(self.transport.incoming[self.src][self.slot][: self.buf.numel()])
        self.done = True
        return True


class SharedMemoryTransport:
    name = "shared memory"
    receives_ahead = 0  # posting a receive is free here; it is taken when needed

    def __init__(self, rank: int, directory: str, semaphores: dict[Channel, object],
                 slots: dict[Channel, int], slot_numel: dict[Channel, int], timeout_s: float):
        """``semaphores``, ``slots`` and ``slot_numel`` are given for every channel of the run.
        Call ``create_outgoing()`` on every rank, then a barrier, then ``open_incoming()``."""
        self.rank = rank
        self.directory = directory
        self.slots, self.slot_numel = slots, slot_numel
        self.timeout_s = timeout_s
        self.raise_arrived = {dst: sem for (src, dst), sem in semaphores.items() if src == rank}
        self.arrived = {src: sem for (src, dst), sem in semaphores.items() if dst == rank}
        self.outgoing: dict[int, torch.Tensor] = {}  # dst -> (slots, slot_numel) float32 view
        self.incoming: dict[int, torch.Tensor] = {}
        self.sent = {dst: 0 for dst in self.raise_arrived}  # messages so far, per channel
        self.posted = {src: 0 for src in self.arrived}
        self._maps: list[mmap.mmap] = []  # kept open for the life of the rank

    def _path(self, src: int, dst: int) -> str:
        return os.path.join(self.directory, f"channel-{src}-{dst}")

    def _map(self, channel: Channel, create: bool) -> torch.Tensor:
        n_slots, numel = self.slots[channel], self.slot_numel[channel]
        nbytes = n_slots * numel * 4
        path = self._path(*channel)
        fd = os.open(path, (os.O_RDWR | os.O_CREAT | os.O_EXCL) if create else os.O_RDWR, 0o600)
        try:
            if create:
                os.ftruncate(fd, nbytes)
            mapped = mmap.mmap(fd, nbytes)
        finally:
            os.close(fd)
        self._maps.append(mapped)
        return torch.frombuffer(mapped, dtype=torch.float32).view(n_slots, numel)

    def create_outgoing(self) -> None:
        for dst in self.raise_arrived:
            self.outgoing[dst] = self._map((self.rank, dst), create=True)

    def open_incoming(self) -> None:
        for src in self.arrived:
            self.incoming[src] = self._map((src, self.rank), create=False)

    def isend(self, buf: torch.Tensor, dst: int) -> _Sent:
        slot = self.sent[dst] % self.slots[(self.rank, dst)]
        self.outgoing[dst][slot][: buf.numel()].copy_(buf)
        self.sent[dst] += 1
        self.raise_arrived[dst].release()  # sem_post orders the copy before the reader's wait
        return _Sent()

    def irecv(self, buf: torch.Tensor, src: int) -> _Receive:
        slot = self.posted[src] % self.slots[(src, self.rank)]
        self.posted[src] += 1
        return _Receive(self, src, slot, buf)
