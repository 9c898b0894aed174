"""How a message's bytes get from one rank to another: torch.distributed, or shared memory.

The Mailbox (engine/runtime/comm.py) decides *which* message to send or receive and in what order;
a transport moves one message (a float32 tensor and its sender's device-clock stamp) and
says when it has arrived. Two transports:

- ``DistTransport``: ``dist.isend`` / ``dist.irecv`` (gloo on CPU, NCCL on GPU). Used under
  torchrun, across hosts, and on GPUs. Tensor and stamp travel in one buffer, so a message
  is one operation (two per message cost ~20% of a step). gloo sends only CPU tensors, so
  ranks sharing a GPU (pipelab.engine.device.Device.shared) stage their messages in host memory.
- ``SharedMemoryTransport``: the CPU ranks of one run started by ``pipelab.engine.runtime.launch.run``, all
  on one host. Each channel (src -> dst) is a file in the run's private temp dir, mapped by
  both ranks, with one slot per message of a step, and a counting semaphore (made by the
  launcher) that src raises once per message written. A message is then one copy in (the
  receiver computes on the slot in place) and at most one futex wake-up. Through gloo the
  same message is a TCP round trip with a rendezvous between two helper threads, which on
  4 ranks sharing 2 cores took a large share of all CPU time of a step (compare "ours" and
  "ours through gloo" in bench/RESULTS.md, section 1). Ranks of one run sharing a GPU use
  it too: a send copies the tensor off the GPU into its slot, a receive copies the slot
  onto the GPU.

Where the launch pinned its ranks with a core to spare, a receive polls its semaphore for up to
POLL_S (engine/runtime/placement.py) before it sleeps on it (``SharedMemoryTransport.take``): no
futex wake-up for the sender to pay, no wake-up latency for the receiver.

Slots are never overwritten while still in use. Within a step, a channel has as many slots
as messages can be in use at once, which the schedule's own order guarantees
(engine/runtime/slots.py): p-s for 1F1B's stage s at any m, m for GPipe. Across steps with
barriers, every message of a step is used within that step (a valid schedule runs F, the
backward and W of every micro-batch in the step: engine/theory/validate.py), and the next step's
first send comes after the all-reduce that starts it (engine/runtime/executor.py). Where steps
overlap, the run is one schedule (engine/schedules/stream.py) and the same count covers it
whole. The channel files live in the run's temp dir (removed with it), not /dev/shm, whose
64 MiB default in Docker a large run would overflow.
"""

from __future__ import annotations

import math
import mmap
import os
import time

import numpy as np
import torch
import torch.distributed as dist

Channel = tuple[int, int]  # (source rank, destination rank)
CPU = torch.device("cpu")


def packed_len(numel: int) -> int:
    """float32 slots for a payload, padding to 8-byte alignment, and one float64 stamp."""
    return numel + numel % 2 + 2


def _stamp_view(buf: torch.Tensor) -> torch.Tensor:
    return buf[-2:].view(torch.float64)


def fault_in(mapped: mmap.mmap, write: bool) -> None:
    """Map every page of a channel into this process now, at set-up.

    A page touched first during the run costs a page fault per 4 KiB: the file system finds
    or allocates the page (and zeroes it) and maps it. A slot is written first by its
    message, so a step's first messages paid that inside the run, and so did the link-cost
    ping-pong whenever a channel has more slots than it has pings (each ping then went to
    a fresh slot: GPipe's m slots at m = 16 measured a link cost several times m = 8's).
    The sender writes its outgoing channels (zeros, which a new file holds anyway); the
    receiver, which only reads its incoming ones, reads a byte of every page."""
    pages = np.frombuffer(mapped, dtype=np.uint8)
    if write:
        pages[:] = 0
    else:
        int(pages[:: mmap.PAGESIZE].max(initial=0))


class DistTransport:
    """torch.distributed point-to-point, stamp packed behind the payload."""

    def __init__(self, backend: str, device: torch.device, receives_ahead: int = 0):
        self.name = backend
        self.device = device
        # Where the bytes travel from and to: gloo's send and receive take CPU tensors only.
        self.wire = CPU if backend == "gloo" else device
        self.receives_ahead = receives_ahead

    def isend(self, tensor: torch.Tensor, stamp: float, dst: int) -> _DistSend:
        numel = tensor.numel()
        buf = torch.empty(packed_len(numel), dtype=torch.float32, device=self.wire)
        buf[:numel].copy_(tensor.reshape(-1))
        _stamp_view(buf)[0] = stamp
        return _DistSend(dist.isend(buf, dst), buf)

    def irecv(self, shape: tuple, src: int) -> _DistReceive:
        buf = torch.empty(packed_len(math.prod(shape)), dtype=torch.float32, device=self.wire)
        return _DistReceive(dist.irecv(buf, src), buf, shape, self.device)


class _DistSend:
    def __init__(self, work, buf: torch.Tensor):
        self.work, self.buf = work, buf  # the buffer must live until the send completes

    def is_completed(self) -> bool:
        return self.work.is_completed()

    def wait(self) -> None:
        self.work.wait()


class _DistReceive:
    def __init__(self, work, buf: torch.Tensor, shape: tuple, device: torch.device):
        self.work, self.buf, self.shape, self.device = work, buf, shape, device

    def is_completed(self) -> bool:
        return self.work.is_completed()

    def wait(self) -> tuple[torch.Tensor, float]:
        self.work.wait()
        tensor = self.buf[: math.prod(self.shape)].view(self.shape).to(self.device)  # no copy when already there
        return tensor, float(_stamp_view(self.buf)[0])


class _Sent:
    """A shared-memory send is complete once written."""

    def is_completed(self) -> bool:
        return True

    def wait(self) -> None:
        pass


SENT = _Sent()  # every shared-memory send: one object, nothing to keep per send


class _SharedMemoryReceive:
    __slots__ = ("transport", "src", "slot", "shape", "arrived")

    def __init__(self, transport: SharedMemoryTransport, src: int, slot: int, shape: tuple):
        self.transport, self.src, self.slot, self.shape = transport, src, slot, shape
        self.arrived = False  # holds the semaphore's token once taken

    def is_completed(self) -> bool:
        if not self.arrived:
            self.arrived = self.transport.arrived[self.src].acquire(block=False)
        return self.arrived

    def wait(self) -> tuple[torch.Tensor, float]:
        t = self.transport
        if not self.arrived:
            t.take_or_fail(self.src)
        self.arrived = True
        return t.message_in(self.src, self.slot, self.shape)


class SharedMemoryTransport:
    name = "shared memory"
    receives_ahead = 0  # posting a receive is free here; it is taken when needed
    takes_in_order = True  # comm.Mailbox takes each channel's messages with has_message / take_next
    sends_complete = True  # a send has completed once isend returns (comm.Mailbox holds nothing)

    def __init__(self, rank: int, directory: str, semaphores: dict[Channel, object],
                 slots: dict[Channel, int], slot_numel: dict[Channel, int], timeout_s: float,
                 device: torch.device = CPU, poll_s: float = 0.0):
        """``semaphores``, ``slots`` (messages per step) and ``slot_numel`` (elements of the
        largest message) are given for every channel of the run; received tensors are put
        on ``device`` (a GPU that ranks share). ``poll_s``: how long a receive polls for its
        message before it sleeps (``take``; 0: sleeps at once). Call ``create_outgoing()`` on
        every rank, then a barrier, then ``open_incoming()``."""
        self.rank = rank
        self.poll_s = poll_s
        self.device = device
        # Where a received tensor is copied to; None on CPU. Read once: torch.device.type took
        # 20 µs per receive with the action's data just through the caches.
        self._onto = None if device.type == "cpu" else device
        self.directory = directory
        self.slots, self.slot_numel = slots, slot_numel
        self.timeout_s = timeout_s
        self.raise_arrived = {dst: sem for (src, dst), sem in semaphores.items() if src == rank}
        self.arrived = {src: sem for (src, dst), sem in semaphores.items() if dst == rank}
        # peer -> (the mapping, slot width in float32s, the channel as float64 words)
        self.incoming: dict[int, tuple[mmap.mmap, int, memoryview]] = {}
        self._received: dict[tuple, torch.Tensor] = {}  # (peer, slot, shape) -> the slot as a tensor
        self.sent = {dst: 0 for dst in self.raise_arrived}  # messages so far, per channel
        self.posted = {src: 0 for src in self.arrived}
        self._slots_from = {src: slots[(src, rank)] for src in self.arrived}
        self._held = {src: False for src in self.arrived}  # the next message's token, taken by has_message
        self._maps: list[mmap.mmap] = []  # kept open for the life of the rank
        self._slot_views: dict[tuple[int, int, torch.Size], torch.Tensor] = {}
        # peer -> (its slots, payload, the channel as float64 words, slot width in them, semaphore):
        # what a send needs, in one look-up
        self._send_to: dict[int, tuple[int, torch.Tensor, memoryview, int, object]] = {}
        self._posters: dict[int, object] = {}  # peer -> poster(dst)

    def _map(self, channel: Channel, create: bool) -> tuple[mmap.mmap, int, memoryview]:
        """The channel mapped, its slot width in float32s and the channel as float64 words. A slot is
        the payload (float32) then padding to 8 bytes, then the float64 stamp (``packed_len``)."""
        n_slots, width = self.slots[channel], packed_len(self.slot_numel[channel])
        nbytes = n_slots * width * 4
        path = os.path.join(self.directory, f"channel-{channel[0]}-{channel[1]}")
        fd = os.open(path, (os.O_RDWR | os.O_CREAT | os.O_EXCL) if create else os.O_RDWR, 0o600)
        try:
            if create:
                os.ftruncate(fd, nbytes)
            mapped = mmap.mmap(fd, nbytes)
        finally:
            os.close(fd)
        self._maps.append(mapped)
        fault_in(mapped, write=create)
        # Stamps are read and written through the words: numpy's item access ran far more code.
        return mapped, width, memoryview(mapped).cast("d")

    @property
    def buffer_bytes(self) -> int:
        """Bytes of every channel slot this rank has mapped, outgoing and incoming."""
        return sum(len(mapped) for mapped in self._maps)

    def create_outgoing(self) -> None:
        for dst in self.raise_arrived:
            mapped, width, words = self._map((self.rank, dst), create=True)
            slots = self.slots[(self.rank, dst)]
            payload = torch.frombuffer(mapped, dtype=torch.float32).view(slots, width)
            self._send_to[dst] = (slots, payload, words, width // 2, self.raise_arrived[dst])

    def open_incoming(self) -> None:
        for src in self.arrived:
            self.incoming[src] = self._map((src, self.rank), create=False)

    def isend(self, tensor: torch.Tensor, stamp: float, dst: int) -> _Sent:
        """Write the message into its slot and raise the channel's semaphore (``poster``)."""
        self.poster(dst)(tensor, stamp)
        return SENT

    def poster(self, dst: int):
        """A send to ``dst`` as one function with everything it reads bound once (returns
        nothing: a shared-memory send is complete once written). The executor's own time
        between two actions is mostly each frame's and object's first touch after the action
        (bench/EXECUTOR.md), so the executor calls this directly (comm.Mailbox.send), not
        ``isend``. Made once per peer."""
        known = self._posters.get(dst)
        if known is not None:
            return known
        slots, payload, words, half_width, arrived = self._send_to[dst]
        release, sent, views = arrived.release, self.sent, self._slot_views

        def post(tensor: torch.Tensor, stamp: float) -> None:
            count = sent[dst]
            slot = count % slots
            # The slot viewed in the message's shape, made once per slot and shape: indexing and
            # reshaping in every send took longer than copying a lesson-size message.
            view_key = (dst, slot, tensor.shape)
            target = views.get(view_key)
            if target is None:
                target = views[view_key] = payload[slot, : tensor.numel()].view(tensor.shape)
            target.copy_(tensor)
            words[(slot + 1) * half_width - 1] = stamp  # the slot's last float64: its stamp (packed_len)
            sent[dst] = count + 1
            release()  # sem_post orders the writes before the reader's wait
        self._posters[dst] = post
        return post

    def take(self, src: int) -> bool:
        """Wait for the next message from ``src`` (take its semaphore's token); False after
        ``timeout_s`` without one. With ``poll_s``, poll first: a receiver asleep in the
        semaphore's futex must be woken by its sender's sem_post (a system call; in a virtual
        machine, an interrupt to the sleeper's core), where a polling one sees the message at
        once and its sender's sem_post is one atomic add. bench/WAKE.md: a 128 KiB ping-pong
        cost the sender 13 µs of CPU and the round trip 66 µs sleeping, 5 µs and 13 µs polling.
        Only a pinned rank with a core to spare polls (engine/runtime/placement.py
        poll_seconds): on shared cores a poll takes the core from the rank it waits for."""
        semaphore = self.arrived[src]
        if self.poll_s:
            acquire, deadline = semaphore.acquire, time.perf_counter() + self.poll_s
            while time.perf_counter() < deadline:
                if acquire(False):
                    return True
        return semaphore.acquire(timeout=self.timeout_s)

    def take_or_fail(self, src: int) -> None:
        """``take``, or a RuntimeError naming the sender after ``timeout_s`` without its message."""
        if not self.take(src):
            raise RuntimeError(f"rank {self.rank}: no message from rank {src} within {self.timeout_s:g} s")

    def message_in(self, src: int, slot: int, shape: tuple) -> tuple[torch.Tensor, float]:
        """The message in slot ``slot`` of the channel from ``src``, and its stamp.

        The tensor is the slot itself, not a copy: nothing writes the slot again before the
        receiver's last use of it (see the module docstring). A storage of its own (exactly its
        bytes) keeps the memory accounting what a copy would have made it, without the copy.
        It is made once per slot and shape and handed out again for each later message there,
        as a send's view of its slot is (``poster``): made per message, torch.frombuffer and
        numpy's read of the stamp took about 60 µs of the rank's time per receive, the action's
        data just through the caches (docs/measuring.md)."""
        mapped, width, words = self.incoming[src]
        key = (src, slot, shape)
        tensor = self._received.get(key)
        if tensor is None:
            tensor = self._received[key] = torch.frombuffer(mapped, dtype=torch.float32, count=math.prod(shape),
                                                            offset=slot * width * 4).view(shape)
        if self._onto is not None:  # ranks sharing a GPU: a blocking copy, done before the slot is reused
            tensor = tensor.to(self._onto)
        return tensor, words[(slot + 1) * (width // 2) - 1]  # the slot's last float64: its stamp (packed_len)

    def has_message(self, src: int) -> bool:
        """Whether the next message from ``src`` is in (its token, once seen, is held for
        ``take_next``). With ``take_next``, the mailbox's way of receiving: no receive object
        per message, four calls fewer between two actions than ``irecv`` and ``wait``, each
        microseconds there (bench/EXECUTOR.md). Not for a channel with an ``irecv`` outstanding."""
        if self._held[src]:
            return True
        held = self._held[src] = self.arrived[src].acquire(False)
        return held

    def take_next(self, src: int, shape: tuple | None) -> tuple[torch.Tensor, float] | None:
        """The next message from ``src`` and its stamp, waiting for it (``take``) unless
        ``has_message`` saw it in; ``shape`` None drops it (a rewind: comm.Mailbox.rewind)."""
        if not self._held[src]:
            self.take_or_fail(src)
        self._held[src] = False
        return self._taken(src, shape)

    def take_if_in(self, src: int, shape: tuple) -> tuple[torch.Tensor, float] | None:
        """The next message from ``src`` and its stamp if it is in already, else None (nothing
        waits): ``has_message`` and ``take_next`` in one call, for a receive whose message is
        in, which is the executor's own time between two actions (bench/EXECUTOR.md)."""
        if self._held[src]:
            self._held[src] = False
        elif not self.arrived[src].acquire(False):
            return None
        return self._taken(src, shape)

    def _taken(self, src: int, shape: tuple | None) -> tuple[torch.Tensor, float] | None:
        """The message whose token was just taken: the channel's next slot (None with ``shape`` None)."""
        posted = self.posted[src]
        self.posted[src] = posted + 1
        return None if shape is None else self.message_in(src, posted % self._slots_from[src], shape)

    def irecv(self, shape: tuple, src: int) -> _SharedMemoryReceive:
        posted = self.posted[src]
        self.posted[src] = posted + 1
        slot = posted % self._slots_from[src]
        return _SharedMemoryReceive(self, src, slot, shape)


class PeerOffset:
    """A transport seen from one pipeline of several side by side (data parallelism): the
    executor names peers by pipeline rank, the process group by process, and replica k's
    pipeline rank r is process ``offset + r`` (engine/schedules/data_parallel.py RankLayout)."""

    def __init__(self, transport, offset: int):
        self.transport, self.offset = transport, offset

    def isend(self, tensor: torch.Tensor, stamp: float, dst: int):
        return self.transport.isend(tensor, stamp, dst + self.offset)

    def irecv(self, shape: tuple, src: int):
        return self.transport.irecv(shape, src + self.offset)

    @property
    def poster(self):
        """The transport's poster (SharedMemoryTransport.poster) for pipeline rank ``dst``; an
        AttributeError where it has none, as on the transport itself."""
        inner = self.transport.poster
        return lambda dst: inner(dst + self.offset)

    def has_message(self, src: int) -> bool:
        return self.transport.has_message(src + self.offset)

    def take_next(self, src: int, shape):
        return self.transport.take_next(src + self.offset, shape)

    def take_if_in(self, src: int, shape):
        return self.transport.take_if_in(src + self.offset, shape)

    def __getattr__(self, name):  # name, receives_ahead, takes_in_order, buffer_bytes: the transport's own
        return getattr(self.transport, name)
