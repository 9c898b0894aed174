"""How many slots a shared-memory channel needs: as many messages as can be in use at once.

A received tensor *is* its slot (engine/runtime/transport.py): the receiving stage computes on it
in place, and autograd keeps it for the backward, a split backward's W included (the first
layer's input, or the last layer's output gradient). So the slot of message k may take
message k+S only when the receiver's last use of message k has happened before the sender
writes message k+S. Nothing in a run waits for that; the schedule itself must guarantee it.

"Happened before" is the order every valid run keeps, whatever the actions cost: each
rank's program order, and each action after the actions whose results it needs (the
simulator's ``dependencies``). For every node of that graph we find, per rank, the first
action of the rank's program that must come after it; that gives, for each message, the
first later message on its channel whose write is ordered after its last use.

One slot per message of a step, the bound used before, is always safe (the next step
starts after a collective) but grows with m: at m=128 every 1F1B channel held 128 messages
while 1F1B keeps about p micro-batches in flight. With this count, 1F1B's channels need
about p slots, and GPipe's still need m, as its activations do.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque

from pipelab.engine.actions import BACKWARD_WEIGHT, INPUT_GRAD_KINDS
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.theory.simulate import dependencies

Channel = tuple[int, int]
Node = tuple[int, int]  # (rank, index in its program)


def slots_needed(schedule: Schedule, sends: dict[Channel, list[tuple[tuple, int]]]) -> dict[Channel, int]:
    """Slots per channel, for ``sends`` as ``comm.sends_by_channel`` gives them: each
    channel's messages (key, index of the sending action in the sender's program)."""
    first_after = _first_after(schedule)
    last_use = _last_use(schedule)
    out = {}
    for (src, dst), messages in sends.items():
        positions = [index for _, index in messages]
        need = 1
        for k, (key, _) in enumerate(messages):
            _, stage, microbatch = key
            bound = first_after[last_use[(stage, microbatch)]][src]
            # Messages sent from position ``bound`` on are written after message k's last
            # use; message k's slot can take the first of them, not one before.
            need = max(need, bisect_left(positions, bound) - k)
        out[(src, dst)] = need
    return out


def _last_use(schedule: Schedule) -> dict[tuple[int, int], Node]:
    """(stage, micro-batch) -> the action that last uses that stage's received tensors: its
    W after a split backward (W still holds the layer inputs and output gradients), else
    its backward."""
    found: dict[tuple[int, int], Node] = {}
    for rank, program in enumerate(schedule.actions):
        for index, a in enumerate(program):
            key = (a.stage, a.microbatch)
            if a.kind == BACKWARD_WEIGHT or (a.kind in INPUT_GRAD_KINDS and key not in found):
                found[key] = (rank, index)
    return found


def _first_after(schedule: Schedule) -> dict[Node, list[float]]:
    """For every action, per rank, the index of the first action of that rank's program that
    every run puts after it (inf when none is)."""
    producers = {}
    for rank, program in enumerate(schedule.actions):
        for index, a in enumerate(program):
            producers[(a.kind, a.stage, a.microbatch)] = (rank, index)
            if a.kind in INPUT_GRAD_KINDS:
                producers[("grad", a.stage, a.microbatch)] = (rank, index)
    split = schedule.split_backward_pairs
    successors: dict[Node, list[Node]] = {}
    waiting_on: dict[Node, int] = {}
    for rank, program in enumerate(schedule.actions):
        for index, a in enumerate(program):
            node = (rank, index)
            needs = [producers[d] for d in dependencies(a, schedule, split) if d in producers]
            if index > 0:
                needs.append((rank, index - 1))
            waiting_on[node] = len(needs)
            for before in needs:
                successors.setdefault(before, []).append(node)
    order, ready = [], deque(n for n, count in waiting_on.items() if count == 0)
    while ready:  # a topological order (a valid schedule has no cycle: engine/theory/validate.py)
        node = ready.popleft()
        order.append(node)
        for after in successors.get(node, ()):
            waiting_on[after] -= 1
            if waiting_on[after] == 0:
                ready.append(after)
    ranks = schedule.num_ranks
    first: dict[Node, list[float]] = {}
    for node in reversed(order):
        earliest = [float("inf")] * ranks
        for after in successors.get(node, ()):
            earliest[after[0]] = min(earliest[after[0]], after[1])
            earliest = [min(x, y) for x, y in zip(earliest, first[after])]
        first[node] = earliest
    return first
