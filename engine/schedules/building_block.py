"""V-shape building blocks: one micro-batch's passes on every device, repeated to make a schedule.

The sequel to Zero Bubble ("Pipeline Parallelism with Controllable Memory", Qi et al., arXiv
2405.15362, section 2) writes a schedule as one building block (where each pass of one
micro-batch sits in time) repeated every T slots, then squeezed (every pass moved as early as
its inputs allow, order kept). A device's peak activation memory is then about the total
lifespan of what it holds (forward to weight gradient) over T (section 2): short lifespans,
little memory.

In a V (section 3) rank r holds chunk 0 (stage r, going down) and chunk 1 (stage 2p-1-r,
coming back), like ZB-V. Each device runs six unit passes per micro-batch, F, I and W of
both chunks, so T = 6 and the block repeats without a gap. The V balances the lifespans:
rank 0 holds the longest-lived chunk (stage 0) and the shortest (stage 2p-1). Section 3
sets the block by the offset between one device's pass and the next device's: our blocks
send chunk 0's forward and chunk 1's input gradient up the devices ``offset`` slots apart,
and chunk 1's forward and chunk 0's input gradient back down with no wait (1 slot). Each
device's lifespans then add up to about 2(p-1)(1 + offset) slots, so it holds about
(p-1)(1 + offset)/6 stages' worth: offset 1 is V-Min (about p/3, a third of 1F1B's p),
offset 2 V-Half (about p/2).

Two passes of one device may not share a slot modulo T, or the repeated blocks collide
(section 2). Which slots are free depends on where device 0's passes sit, so
``lightest_block`` tries every placement of device 0's F1, I1 and I0 (F0 at slot 0) and
keeps the collision-free one with the least peak memory, then the shortest span. Each W
takes the first free slot after its I (the authors' reference code does the same).

Squeezing is what the simulator and the executor do with any order; the paper's optional
reordering of the warm-up and cool-down (section 2) is left out, so the bubble is the
repeated block's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations

from pipelab.engine.actions import BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, Action, ActionKind
from pipelab.engine.theory.held_activations import peak_activations

PERIOD = 6
"""T: slots between two micro-batches' blocks, six unit passes per device (section 2)."""

PASSES: tuple[tuple[ActionKind, int], ...] = (
    (FORWARD, 0), (FORWARD, 1), (BACKWARD_INPUT, 1), (BACKWARD_INPUT, 0), (BACKWARD_WEIGHT, 1), (BACKWARD_WEIGHT, 0))
"""(kind, chunk) of the six passes, in the order the block's slots are listed."""


@dataclass(frozen=True)
class BuildingBlock:
    """Micro-batch 0's passes on a V of ``ranks`` devices, as start slots (unit passes)."""

    ranks: int
    slots: tuple[tuple[int, ...], ...]
    """slots[r][k]: the slot in which rank r starts PASSES[k] of micro-batch 0."""

    @property
    def span(self) -> int:
        """Slots from the block's first pass to the end of its last."""
        return max(max(rank) for rank in self.slots) + 1

    def programs(self, microbatches: int) -> list[list[Action]]:
        """Per rank, the block repeated every PERIOD slots for each micro-batch, in slot order."""
        p = self.ranks
        programs = []
        for r, slots in enumerate(self.slots):
            stage = (r, 2 * p - 1 - r)
            timed = [(slot + PERIOD * j, Action(stage[chunk], kind, j))
                     for j in range(microbatches) for slot, (kind, chunk) in zip(slots, PASSES)]
            programs.append([a for _, a in sorted(timed, key=lambda x: x[0])])
        return programs

    def peak_activations(self) -> float:
        """The worst device's peak once the pipeline is full: enough micro-batches that the
        first one's block has ended before the last one's starts."""
        return max(peak_activations(self.programs(self.span // PERIOD + 2), 2))


def _next_slot(earliest: int, residue: int) -> int:
    """The first slot from ``earliest`` on that sits at ``residue`` modulo PERIOD."""
    return earliest + (residue - earliest) % PERIOD


def v_block(ranks: int, offset: int, first: tuple[int, int, int]) -> BuildingBlock | None:
    """The V block whose upward passes (F0, I1) move ``offset`` slots per device and whose
    downward passes (F1, I0) move 1; ``first`` is device 0's slots of F1, I1, I0 modulo
    PERIOD (F0 at 0). None when two passes of a device collide modulo PERIOD."""
    p = ranks
    f0, f1, i1, i0 = ([0] * p for _ in range(4))
    f1_at, i1_at, i0_at = first
    for r in range(p):  # chunk 0's forward goes up the V
        f0[r] = r * offset
    for r in reversed(range(p)):  # chunk 1's forward comes down; a pass moved down sits 1 slot later mod T
        f1[r] = _next_slot(f0[r] + 1 if r == p - 1 else f1[r + 1] + 1, f1_at - r)
    for r in range(p):  # chunk 1's input gradient goes up from rank 0, which ran the last stage
        i1[r] = _next_slot(f1[0] + 1 if r == 0 else i1[r - 1] + 1, i1_at + r * offset)
    for r in reversed(range(p)):  # chunk 0's input gradient comes back down
        i0[r] = _next_slot(i1[p - 1] + 1 if r == p - 1 else i0[r + 1] + 1, i0_at - r)
    slots = []
    for r in range(p):
        taken = {s % PERIOD for s in (f0[r], f1[r], i1[r], i0[r])}
        if len(taken) < 4:
            return None
        weights = []
        for after in (i1[r], i0[r]):  # W1 then W0, each in the first free slot after its I
            w = after + 1
            while w % PERIOD in taken:
                w += 1
            taken.add(w % PERIOD)
            weights.append(w)
        slots.append((f0[r], f1[r], i1[r], i0[r], *weights))
    return BuildingBlock(p, tuple(slots))


@lru_cache(maxsize=64)
def lightest_block(ranks: int, offset: int) -> BuildingBlock:
    """Over every placement of device 0's passes, the collision-free V block with the least
    peak memory, then the shortest span (first found wins a tie, so the result is fixed)."""
    best: tuple[tuple[float, int], BuildingBlock] | None = None
    for first in permutations(range(1, PERIOD), 3):
        block = v_block(ranks, offset, first)  # type: ignore[arg-type]
        if block is None:
            continue
        key = (block.peak_activations(), block.span)
        if best is None or key < best[0]:
            best = (key, block)
    if best is None:  # every p tried (tests/test_v_memory.py) has one; a guard, not a path
        raise ValueError(f"no collision-free V block for p={ranks}, offset={offset}")
    return best[1]
