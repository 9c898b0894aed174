"""Asynchronous PipeDream (arXiv 1806.03377) and PipeDream-2BW (arXiv 2006.09503).

Both run 1F1B without a flush inside the step; what differs is when a stage updates its
weights (the U actions) and so how many weight versions it must stash for in-flight
micro-batches. The executor's weight stash makes a backward use its forward's weights.
"""

from __future__ import annotations

from engine.actions import BACKWARD, U
from engine.actions import ScheduleError
from engine.schedules.base import Schedule, register
from engine.schedules.classic import one_f_one_b


@register("pipedream", summary="asynchronous 1F1B: update after every backward, stash weights",
          paper="PipeDream, arXiv 1806.03377, sections 3.2-3.3", synchronous=False)
def pipedream(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    # NOAM = p micro-batches admitted at start-up; every backward is followed by its stage's
    # update, so stage r sees p-r updates between a micro-batch's F and B: p-r versions.
    base = one_f_one_b(ranks, microbatches)
    actions = [[x for a in program for x in ((a, U(a.stage, a.microbatch)) if a.kind == BACKWARD else (a,))]
               for program in base.actions]
    return Schedule("pipedream", ranks, microbatches, base.stage_to_rank,
                    tuple(tuple(p) for p in actions))


@register("pipedream-2bw", summary="double-buffered weights: accumulate p micro-batches, update with one-step delay",
          paper="PipeDream-2BW, arXiv 2006.09503, section 3.1", synchronous=False)
def pipedream_2bw(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    # 2BW accumulates gradients over a group of g = p micro-batches and updates once per group.
    # Forwards of the next group already in flight keep the previous version: at most two
    # versions are alive, and their gradients land one update late (the one-step delay).
    if microbatches % ranks != 0:
        raise ScheduleError(f"pipedream-2bw updates every p micro-batches, so m must be a multiple of stages (m % p == 0), got m={microbatches}, p={ranks}")
    base = one_f_one_b(ranks, microbatches)
    actions = []
    for program in base.actions:
        out = []
        for a in program:
            out.append(a)
            if a.kind == BACKWARD and (a.microbatch + 1) % ranks == 0:
                out.append(U(a.stage, a.microbatch))
        actions.append(tuple(out))
    return Schedule("pipedream-2bw", ranks, microbatches, base.stage_to_rank, tuple(actions))
