"""List scheduling at real costs: the zero bubble paper's heuristic (arXiv 2401.10241, section 3.1).

``greedy_order`` (engine/schedules/zero_bubble.py) places passes on a unit-time grid, which is
ZB-H2's shape when T_F = T_I = T_W. At other costs that shape leaves gaps the paper's
schedules do not have, so the cost-aware schedules play the pipeline here at the given
T_F, T_I (the paper's T_B), T_W and T_comm, one stage per rank, and whenever a rank is free:

1. run the oldest input-gradient backward I whose gradient has arrived: I is on the critical
   path, the previous stage waits for it;
2. else a forward whose activation has arrived, while the rank's memory limit allows one
   more micro-batch (held from F until its W frees it; after I only ``PassCosts.weight_memory``
   of it, what W still reads, counts: the paper's Table 1). ``Policy.forward_may_delay_input``
   says whether a forward may start when it would still be running at a known I's arrival
   (the paper's choice of extra warm-up forwards that may delay the first B);
3. else the oldest deferred weight-gradient W: it fills a wait, or frees memory when the
   limit is reached. ``Policy.weight_may_delay`` says whether a W may start when it would
   still be running at a known arrival (else the rank waits and keeps W for a later gap);
4. else wait for the next arrival.

The order each rank ends up with is the schedule. Like the paper, the caller tries a few
policies and keeps the order the simulator plays fastest (engine/schedules/cost_search.py).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

from pipelab.engine.actions import Action, F, I, ScheduleError, W
from pipelab.engine.schedules.costs import PassCosts


@dataclass(frozen=True)
class Policy:
    """One setting of the heuristic's choices."""

    held_limit: tuple[int, ...]
    """Per rank: the activation memory limit in micro-batches, a whole one from F until I,
    ``PassCosts.weight_memory`` of one from I until W."""
    alive_limit: tuple[int, ...]
    """Per rank: micro-batches alive from F until I (what I still needs)."""
    forward_may_delay_input: bool = True
    weight_may_delay: bool = True


def cost_greedy_order(ranks: int, microbatches: int, costs: PassCosts, policy: Policy) -> list[list[Action]]:
    """Per-rank action order of the list schedule above; stage r on rank r."""
    return _Play(ranks, microbatches, costs, policy).run()


class _Play:
    """The event-driven play behind cost_greedy_order: the rank that is free earliest decides next."""

    def __init__(self, ranks: int, microbatches: int, costs: PassCosts, policy: Policy):
        self.p, self.m, self.c, self.policy = ranks, microbatches, costs, policy
        self.f_end: list[dict[int, float]] = [{} for _ in range(ranks)]
        self.i_end: list[dict[int, float]] = [{} for _ in range(ranks)]
        self.next_f, self.next_i = [0] * ranks, [0] * ranks
        self.pending_w: list[deque[int]] = [deque() for _ in range(ranks)]
        self.held: list[float] = [0.0] * ranks  # micro-batches' activations, W's share after I
        self.alive = [0] * ranks
        self.idle_since = [0.0] * ranks
        self.decide_at = [0.0] * ranks  # when the rank next looks for work; inf: waits for an arrival
        self.order: list[list[Action]] = [[] for _ in range(ranks)]

    def run(self) -> list[list[Action]]:
        total = 3 * self.m
        # The rank free earliest decides next, the latest rank first on ties (its I's are what the
        # earlier ranks wait on): a heap of (decide_at, -rank), one entry pushed whenever a
        # rank's decide_at changes, an entry whose time is no longer its rank's skipped. A scan of
        # every rank per decision made p = 32, m = 256 (the paper's Table 5) quadratic in p.
        queue = [(0.0, -r) for r in range(self.p)]
        heapq.heapify(queue)
        self._queue = queue
        while queue:
            t, neg_r = heapq.heappop(queue)
            r = -neg_r
            if t != self.decide_at[r] or len(self.order[r]) >= total:
                continue
            if math.isinf(t):
                raise ScheduleError.of("memory_limit", schedule="the cost-aware schedule",
                                       limit=min(self.policy.held_limit))
            self._decide(r, t)
            heapq.heappush(queue, (self.decide_at[r], neg_r))
        return self.order

    # ---- when each pass can start ----------------------------------------------------
    def _forward_ready(self, r: int) -> float | None:
        j = self.next_f[r]
        if j >= self.m or self.held[r] + 1 > self.policy.held_limit[r] + 1e-9 \
                or self.alive[r] >= self.policy.alive_limit[r]:
            return None
        if r == 0:
            return 0.0
        arrived = self.f_end[r - 1].get(j)
        return None if arrived is None else arrived + self.c.link

    def _input_ready(self, r: int) -> float | None:
        j = self.next_i[r]
        if j >= self.m or j not in self.f_end[r]:
            return None
        if r == self.p - 1:
            return self.f_end[r][j]
        arrived = self.i_end[r + 1].get(j)
        return None if arrived is None else max(self.f_end[r][j], arrived + self.c.link)

    # ---- one decision --------------------------------------------------------------------
    def _decide(self, r: int, t: float) -> None:
        ti, tf = self._input_ready(r), self._forward_ready(r)
        upcoming = [x for x in (ti, tf) if x is not None and x > t]
        next_arrival = min(upcoming) if upcoming else None
        if ti is not None and ti <= t:
            self._start(r, t, "I")
        elif tf is not None and tf <= t and (self.policy.forward_may_delay_input or ti is None
                                             or t + self.c.forward <= ti):
            self._start(r, t, "F")
        elif self.pending_w[r] and (next_arrival is None or self.policy.weight_may_delay
                                    or t + self.c.backward_weight <= next_arrival):
            self._start(r, t, "W")
        else:
            self.decide_at[r] = math.inf if next_arrival is None else next_arrival

    def _start(self, r: int, t: float, kind: str) -> None:
        if kind == "F":
            j = self.next_f[r]
            self.next_f[r] += 1
            self.held[r] += 1
            self.alive[r] += 1
            end = t + self.c.forward
            self.f_end[r][j] = end
            self.order[r].append(F(r, j))
            if r + 1 < self.p:
                self._arrival(r + 1, end + self.c.link)
        elif kind == "I":
            j = self.next_i[r]
            self.next_i[r] += 1
            self.alive[r] -= 1
            self.held[r] -= 1 - self.c.weight_memory  # I frees all but what W reads
            self.pending_w[r].append(j)
            end = t + self.c.backward_input
            self.i_end[r][j] = end
            self.order[r].append(I(r, j))
            if r > 0:
                self._arrival(r - 1, end + self.c.link)
        else:
            j = self.pending_w[r].popleft()
            self.held[r] -= self.c.weight_memory
            end = t + self.c.backward_weight
            self.order[r].append(W(r, j))
        self.idle_since[r] = end
        self.decide_at[r] = end

    def _arrival(self, r: int, at: float) -> None:
        """Something for rank r arrives at ``at``: a waiting rank looks again then."""
        earlier = max(self.idle_since[r], at)
        if earlier < self.decide_at[r]:
            self.decide_at[r] = earlier
            heapq.heappush(self._queue, (earlier, -r))
