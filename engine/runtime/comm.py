"""Point-to-point messages between pipeline ranks: non-blocking, stamped, in channel order.

Every message is a stage-boundary tensor (an activation going forward, or its gradient going
back) with the sender's device-clock time attached (engine/runtime/transport.py packs both into one
buffer). Sends are posted and never waited on until the end of the step, so no order of
actions can deadlock on a send (docs/design.md, "Why the engine is built this way").

Receives follow the *sender's* order on each (src, dst) channel: gloo and NCCL both match
messages in posting order, so the receiver takes them in that order and buffers the ones
it needs later. Works without tags, so the same code serves NCCL. On gloo the next
receives of each channel are posted ahead of need (``Device.receives_ahead``). The bytes
themselves move through a transport (engine/runtime/transport.py): torch.distributed, or shared
memory for the CPU ranks of one host.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelab.engine.actions import FORWARD, INPUT_GRAD_KINDS
from pipelab.engine.runtime.slots import slots_needed
from pipelab.engine.schedules.base import Schedule

if TYPE_CHECKING:  # the launcher (and so the web server) imports this module without torch
    import torch

Key = tuple[str, int, int]  # ("act" | "grad", destination stage, micro-batch)


def sends_by_channel(schedule: Schedule) -> dict[tuple[int, int], list[tuple[Key, int]]]:
    """For every (src, dst) rank pair, each message src sends with the index, in src's
    program, of the action that sends it; in program order."""
    plan: dict[tuple[int, int], list[tuple[Key, int]]] = {}
    last = schedule.num_stages - 1
    for src, program in enumerate(schedule.actions):
        for index, a in enumerate(program):
            if a.kind == FORWARD and a.stage < last:
                dst, key = schedule.rank_of(a.stage + 1, a.microbatch), ("act", a.stage + 1, a.microbatch)
            elif a.kind in INPUT_GRAD_KINDS and a.stage > 0:
                dst, key = schedule.rank_of(a.stage - 1, a.microbatch), ("grad", a.stage - 1, a.microbatch)
            else:
                continue
            if dst != src:
                plan.setdefault((src, dst), []).append((key, index))
    return plan


PING_CHANNELS = ((0, 1), (1, 0))  # pipelab.engine.runtime.executor.measure_link_cost's ping-pong


def channels(schedule: Schedule, sends: dict | None = None) -> list[tuple[int, int]]:
    """Every (src, dst) pair that carries a message in a run, the link-cost ping included.
    ``sends``: ``sends_by_channel(schedule)`` when the caller has it already."""
    found = set(sends_by_channel(schedule) if sends is None else sends)
    if schedule.num_ranks > 1:
        found |= set(PING_CHANNELS)
    return sorted(found)


def channel_sizes(schedule: Schedule, shape_of, ping_numel: int) -> dict[tuple[int, int], tuple[int, int]]:
    """For every channel: (slots it needs, engine/runtime/slots.py; elements of its largest message)."""
    sends = sends_by_channel(schedule)
    slots = slots_needed(schedule, sends)
    sizes = {channel: (slots[channel], max(math.prod(message_shape(key, shape_of)) for key, _ in sent))
             for channel, sent in sends.items()}
    for channel in channels(schedule, sends):
        count, numel = sizes.get(channel, (0, 0))
        sizes[channel] = (max(count, 1), max(numel, ping_numel))
    return sizes


def _taken_at(schedule: Schedule) -> dict[Key, int]:
    """Every message's index, in its receiver's program, of the action that takes it: the F
    of the stage an activation enters, the backward (B or I) of the stage a gradient enters."""
    out = {}
    for program in schedule.actions:
        for index, a in enumerate(program):
            if a.kind == FORWARD:
                out[("act", a.stage, a.microbatch)] = index
            elif a.kind in INPUT_GRAD_KINDS:
                out[("grad", a.stage, a.microbatch)] = index
    return out


def message_shape(key: Key, shape_of) -> tuple:
    """A message's shape. An activation entering stage s has stage s's input shape; the
    gradient sent back to stage s is the gradient of its output, i.e. stage s+1's input shape."""
    kind, stage, _ = key
    return shape_of(stage if kind == "act" else stage + 1)


@dataclass(frozen=True)
class MessagePlan:
    """What one rank's Mailbox needs to know of the schedule; the same every step."""
    incoming: dict[int, list[Key]]
    """Per source rank, the messages it sends this rank, in its program order."""
    consumed_at: dict[Key, int]
    """Each message this rank sends: index, in the receiver's program, of the action that takes it."""
    sent_at: dict[Key, int]
    """Each message this rank gets: index, in the sender's program, of the action that sends it."""


def message_plan(schedule: Schedule, rank: int) -> MessagePlan:
    sends = sends_by_channel(schedule)
    taken_at = _taken_at(schedule)
    return MessagePlan(incoming={src: [key for key, _ in sent] for (src, dst), sent in sends.items() if dst == rank},
                       consumed_at={key: taken_at[key] for (src, dst), sent in sends.items() if src == rank
                                    for key, _ in sent},
                       sent_at={key: index for (src, dst), sent in sends.items() if dst == rank
                                for key, index in sent})


class Mailbox:
    """One rank's side of all channels for one step."""

    def __init__(self, rank: int, plan: MessagePlan, shape_of, transport):
        self.rank = rank
        self.transport = transport
        self.plan = plan
        self.incoming = {src: deque(keys) for src, keys in plan.incoming.items()}
        # Each incoming message's shape (``shape_of``: stage -> shape of that stage's input
        # activation), looked up once per step, not once per receive.
        self.shapes = {key: message_shape(key, shape_of) for keys in plan.incoming.values() for key in keys}
        self.taken = {src: 0 for src in self.incoming}  # messages received from src (waited on)
        self.sent_to: dict[int, int] = {}  # messages sent to each peer
        self.posted: dict[int, deque] = {src: deque() for src in self.incoming}  # (key, work)
        ahead = transport.receives_ahead
        self.ahead = max(1, ahead)  # a receive is posted at the latest when it is needed
        # Shared memory: each channel's messages taken in order (has_message, take_next), no
        # receive posted; each post and receive object there was the executor's own time.
        self._in_order = transport if getattr(transport, "takes_in_order", False) else None
        for src in self.incoming:
            for _ in range(ahead):
                self._post_next(src)
        self.buffered: dict[Key, tuple[torch.Tensor, float]] = {}
        # Sends still holding their buffers, per peer: (index of the peer's action that
        # consumes the message, work).
        self.in_flight: dict[int, list[tuple[int, object]]] = {}
        self.consumed_at, self.sent_at = plan.consumed_at, plan.sent_at
        self.local: dict[Key, tuple[torch.Tensor, float]] = {}
        # A shared-memory send has completed once posted (transport.py): nothing to hold, and
        # each peer's send is one bound function (SharedMemoryTransport.poster), made once per run.
        self._sends_complete = getattr(transport, "sends_complete", False)
        self._post: dict[int, object] = {}  # peer -> its poster, or None: the general path (_poster)
        self.sent = self.received = 0
        self.bytes_sent = 0

    def send(self, key: Key, tensor: torch.Tensor, stamp: float, dst: int, nbytes: int | None = None) -> None:
        """``nbytes``: the tensor's, where the caller has it already."""
        post = self._post.get(dst, False)
        if post is False:
            post = self._poster(dst)
        if post is not None:  # shared memory, another rank: nothing kept in flight (below)
            self.sent += 1
            self.sent_to[dst] = self.sent_to.get(dst, 0) + 1
            self.bytes_sent += tensor.nbytes if nbytes is None else nbytes
            post(tensor, stamp)
            return
        if dst == self.rank:  # next stage on this rank: hand over in memory
            self.local[key] = (tensor, stamp)
            return
        # A send's buffer lives until the send completes; kept to the end of the step, one
        # buffer per message would make 1F1B's memory grow with m after all. NCCL says when
        # a send has finished; gloo only once it is waited on, and waiting on a send the peer
        # may not have taken yet can deadlock. So a send is let go when it has finished, or
        # when the peer has certainly taken it (``_let_go``).
        self.sent += 1
        self.sent_to[dst] = self.sent_to.get(dst, 0) + 1
        self.bytes_sent += tensor.nbytes
        if self._sends_complete:  # nothing in flight: the executor's own time per send stays short
            self.transport.isend(tensor, stamp, dst)  # a copy of values the executor detached already (Stage)
            return
        work = self.transport.isend(tensor.detach(), stamp, dst)
        flight = self.in_flight.get(dst)
        if flight:
            flight = [(at, w) for at, w in flight if not w.is_completed()]
        if not work.is_completed():  # a shared-memory send is complete once written
            flight = flight or []
            flight.append((self.consumed_at[key], work))
        if flight is not None:
            self.in_flight[dst] = flight

    def _poster(self, dst: int):
        """The transport's poster for ``dst`` (SharedMemoryTransport.poster), or None: this rank
        itself, or a transport whose sends are kept in flight."""
        post = None
        if dst != self.rank and self._sends_complete and hasattr(self.transport, "poster"):
            post = self.transport.poster(dst)
        self._post[dst] = post
        return post

    def receive(self, key: Key, src: int) -> tuple[torch.Tensor, float]:
        """The tensor for ``key`` and its sender's stamp, receiving earlier messages first."""
        if src == self.rank:
            return self.local.pop(key)
        in_order = self._in_order
        while key not in self.buffered:
            if in_order is not None:
                queue = self.incoming.get(src)
                if not queue:
                    raise RuntimeError(f"rank {self.rank} expects {key} from rank {src}, "
                                       "but its schedule sends no such message")
                next_key = queue.popleft()
                self.buffered[next_key] = in_order.take_next(src, self.shapes[next_key])
                self.received += 1
                self.taken[src] += 1
                continue
            posted = self.posted.get(src)
            if not posted and not self._post_next(src):
                raise RuntimeError(f"rank {self.rank} expects {key} from rank {src}, "
                                   "but its schedule sends no such message")
            next_key, work = posted.popleft()
            self.buffered[next_key] = work.wait()
            self.received += 1
            self.taken[src] += 1
            if self.in_flight:  # none where a send completes once posted (shared memory)
                self._let_go(src, self.sent_at[next_key])
            while len(posted) < self.ahead and self._post_next(src):
                pass
        return self.buffered.pop(key)

    def take_if_in(self, key: Key, src: int) -> tuple[torch.Tensor, float] | None:
        """``receive(key, src)`` where it would return without waiting on the network, else None:
        ``ready`` and ``receive`` in one call. Taking a message that is in is the executor's own
        time between two actions, and each call there is microseconds (bench/EXECUTOR.md)."""
        if src == self.rank:
            return self.local.pop(key)
        got = self.buffered.pop(key, None)
        if got is not None:
            return got
        in_order = self._in_order
        if in_order is None:
            return self.receive(key, src) if self.ready(key, src) else None
        queue = self.incoming.get(src)
        if not queue or queue[0] != key:  # not sent yet, or earlier messages first: receive buffers them
            return None
        got = in_order.take_if_in(src, self.shapes[key])
        if got is not None:
            queue.popleft()
            self.received += 1
            self.taken[src] += 1
        return got

    def ready(self, key: Key, src: int) -> bool:
        """Whether ``receive(key, src)`` would return without waiting on the network."""
        if src == self.rank or key in self.buffered:
            return True
        if self._in_order is not None:
            queue = self.incoming.get(src)
            return bool(queue) and queue[0] == key and self._in_order.has_message(src)
        posted = self.posted.get(src)
        if posted is not None and not posted:
            self._post_next(src)
        return bool(posted) and posted[0][0] == key and posted[0][1].is_completed()

    def _post_next(self, src: int) -> bool:
        """Post the receive of the next message on channel src (False: none left)."""
        queue = self.incoming.get(src)
        if not queue:
            return False
        key = queue.popleft()
        self.posted[src].append((key, self.transport.irecv(self.shapes[key], src)))
        return True

    def _let_go(self, peer: int, index: int) -> None:
        """``peer`` sent a message from the action at ``index`` of its program: every message
        we sent it that an action up to that one consumed has arrived there, so its send has
        completed and waiting on it returns at once."""
        keep = []
        for at, work in self.in_flight.get(peer, []):
            if at <= index:
                work.wait()
            else:
                keep.append((at, work))
        self.in_flight[peer] = keep

    def sends_in_flight(self) -> int:
        """Sends of this step still holding their buffers."""
        return sum(len(flight) for flight in self.in_flight.values())

    def rewind(self, first_microbatch: int, sent_here: dict[int, int]) -> None:
        """Go back to the first message of micro-batch ``first_microbatch`` on every channel
        (a stream's step start, engine/schedules/stream.py), after a rollback (engine/runtime/executor.py):
        take the messages already sent to this rank (``sent_here``: per source, how many it
        has sent in all) and drop them, drop what was kept of them, and let the next
        receives be the step's messages again. Every rank does this together, with nothing
        of the step in use, so a slot taken again is free (engine/runtime/slots.py)."""
        for src, count in sent_here.items():
            posted = self.posted.get(src)
            while self._in_order is not None and posted is not None and self.taken[src] < count:
                self._in_order.take_next(src, None)
                self.taken[src] += 1
            while posted is not None and self.taken[src] < count:
                if not posted and not self._post_next(src):
                    break
                posted.popleft()[1].wait()
                self.taken[src] += 1
        for src, keys in self.plan.incoming.items():
            again = deque(key for key in keys if key[2] >= first_microbatch)
            # Receives posted ahead (gloo) match the next messages sent: the step's again.
            self.posted[src] = deque((again.popleft(), work) for _, work in self.posted[src])
            self.incoming[src] = again
        for kept in (self.buffered, self.local):
            for key in [key for key in kept if key[2] >= first_microbatch]:
                del kept[key]
        for flight in self.in_flight.values():
            for _, work in flight:
                work.wait()
        self.in_flight.clear()

    def finish(self) -> None:
        """Wait for the step's sends still in flight (their buffers may then be freed)."""
        for flight in self.in_flight.values():
            for _, work in flight:
                work.wait()
        self.in_flight.clear()
