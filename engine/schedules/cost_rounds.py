"""The zero bubble paper's own heuristic, round by round (arXiv 2401.10241, section 3.1).

engine/schedules/cost_greedy.py runs whatever is ready; the paper's heuristic is stricter, and
that is what brings ZB-2p's bubble near zero (its Table 5):

1. warm-up: every stage runs F0; then, from the last stage back, each stage adds as many
   forwards as fit, within the memory limit, before its first B can arrive (``Rounds.
   bubble_before_first_b``: whether the last of them may overrun that arrival), always at
   least one fewer than the stage before it; then every stage runs B0, last stage first;
2. steady state: round i runs one F per stage (first stage first) and B_i on every stage (last
   stage first). Before a pass, W's run while the memory limit needs room, and while one fits
   in the wait for the pass's input; a wait shorter than W gets a W too when leaving it idle
   would raise the largest idle time any stage has so far, or always (``fill_short_gaps``).
   ``prioritize_b`` lets a stage two forwards ahead of the next skip its F when it would delay
   the B coming back;
3. a stage with no forwards left runs its W's before each B; all remaining W's close the step.

A micro-batch counts 1 against the memory limit from F until I, then ``PassCosts.
weight_memory`` of it until W (Table 1). The times here only pick the order; the simulator
plays it (engine/schedules/cost_search.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.actions import Action, F, I, W
from pipelab.engine.schedules.costs import PassCosts


@dataclass(frozen=True)
class Rounds:
    """One setting of the heuristic's three binary choices (the paper tries each)."""

    bubble_before_first_b: bool
    prioritize_b: bool
    fill_short_gaps: bool


ALL_ROUNDS = tuple(Rounds(a, b, c) for a in (True, False) for b in (True, False) for c in (True, False))


def rounds_order(ranks: int, microbatches: int, costs: PassCosts, limit: float, setting: Rounds
                 ) -> list[list[Action]] | None:
    """Per-rank order of the heuristic under a memory limit in micro-batches; None when the
    limit cannot hold the warm-up (no W left to free room)."""
    try:
        return _Plan(ranks, microbatches, costs, limit, setting).run()
    except _NoRoom:
        return None


def best_rounds_order(ranks: int, microbatches: int, costs: PassCosts, limit: float) -> list[list[Action]] | None:
    """The order of the setting whose plan has the shortest longest stage (the first on ties),
    as the paper keeps its best; None when no setting fits the limit. The plan's times are the
    simulator's (each pass as early as its order, its inputs and the link allow), so only the
    winner needs to be simulated."""
    best, best_span = None, None
    for setting in ALL_ROUNDS:
        plan = _Plan(ranks, microbatches, costs, limit, setting)
        try:
            order = plan.run()
        except _NoRoom:
            continue
        if best_span is None or plan.longest_stage() < best_span:
            best, best_span = order, plan.longest_stage()
    return best


class _NoRoom(Exception):
    pass


class _Plan:
    def __init__(self, p: int, m: int, costs: PassCosts, limit: float, setting: Rounds):
        self.p, self.m, self.c, self.limit, self.s = p, m, costs, limit + 1e-9, setting
        self.cost = {"F": costs.forward, "I": costs.backward_input, "W": costs.backward_weight}
        self.memory = {"F": 1.0, "I": -(1.0 - costs.weight_memory), "W": -costs.weight_memory}
        self.done = {kind: [0] * p for kind in "FIW"}
        self.end: dict[tuple[str, int, int], float] = {}
        self.free = [0.0] * p
        self.held = [0.0] * p
        self.idle = [0.0] * p  # each stage's waits after its first F
        self.order: list[list[Action]] = [[] for _ in range(p)]

    # ---- placing one pass ------------------------------------------------------------------
    def arrival(self, j: int, kind: str) -> float:
        """When stage j's next pass of ``kind`` has its input from the neighbour (0: none needed)."""
        k = self.done[kind][j]
        if kind == "F" and j > 0:
            return self.end[("F", j - 1, k)] + self.c.link
        if kind == "I" and j < self.p - 1:
            return self.end[("I", j + 1, k)] + self.c.link
        return 0.0

    def put(self, j: int, kind: str) -> None:
        k = self.done[kind][j]
        if self.held[j] + self.memory[kind] > self.limit:
            raise _NoRoom
        start = max(self.free[j], self.arrival(j, kind))
        if self.done["F"][j] > 0:
            self.idle[j] += start - self.free[j]
        self.free[j] = self.end[(kind, j, k)] = start + self.cost[kind]
        self.held[j] += self.memory[kind]
        self.done[kind][j] += 1
        self.order[j].append({"F": F, "I": I, "W": W}[kind](j, k))

    def longest_stage(self) -> float:
        """The longest stage's time from its first pass's start to its last pass's end."""
        return max(self.free[j] - (self.end[("F", j, 0)] - self.cost["F"]) for j in range(self.p))

    def pending_w(self, j: int) -> bool:
        return self.done["W"][j] < self.done["I"][j]

    def fill_before(self, j: int, kind: str) -> None:
        """W's before stage j's next ``kind``: for room, then into the wait for its input."""
        while self.held[j] + self.memory[kind] > self.limit:
            if not self.pending_w(j):
                raise _NoRoom
            self.put(j, "W")
        if kind == "F" and j == 0 or kind == "I" and j == self.p - 1:
            return
        ready = self.arrival(j, kind)
        while self.pending_w(j) and self.free[j] + self.cost["W"] <= ready:
            self.put(j, "W")
        if self.pending_w(j) and self.free[j] < ready:
            if self.s.fill_short_gaps or ready - self.free[j] > max(self.idle) - self.idle[j]:
                self.put(j, "W")

    # ---- the phases -----------------------------------------------------------------------
    def run(self) -> list[list[Action]]:
        self.warm_up()
        for i in range(1, self.m):
            self.steady_round(i)
        for j in range(self.p):
            while self.pending_w(j):
                self.put(j, "W")
        return self.order

    def warm_up(self) -> None:
        p, m = self.p, self.m
        for j in range(p):
            self.put(j, "F")
        extra = [0] * p
        back = self.end[("F", p - 1, 0)] + self.cost["I"]  # when the last stage's B0 ends
        for j in range(p - 2, -1, -1):
            held, t = self.held[j], self.free[j]
            while self.done["F"][j] + extra[j] < m and held + 1 <= self.limit:
                if self.s.bubble_before_first_b and t + self.cost["F"] > back + self.c.link:
                    break
                if not self.s.bubble_before_first_b and t >= back + self.c.link:
                    break
                held, t, extra[j] = held + 1, t + self.cost["F"], extra[j] + 1
            back = max(t, back + self.c.link) + self.cost["I"]
        for j in range(1, p):  # a stage always runs fewer warm-up forwards than the one before
            while 0 < extra[j] and extra[j] >= extra[j - 1] and self.done["F"][j] + extra[j] < m:
                extra[j] -= 1
        for j in range(p):
            for _ in range(extra[j]):
                self.put(j, "F")
        for j in range(p - 1, -1, -1):
            self.put(j, "I")

    def steady_round(self, i: int) -> None:
        p = self.p
        wants = [self.done["F"][j] < self.m and not self.skip_forward(j) for j in range(p)]
        for j in range(p - 2, -1, -1):
            wants[j] = wants[j] and wants[j + 1]
        for j in range(p):
            if wants[j]:
                self.fill_before(j, "F")
                self.put(j, "F")
        for j in range(p - 1, -1, -1):
            self.fill_before(j, "I")
            if j == 0 and self.done["F"][0] == self.m:
                while self.pending_w(0):
                    self.put(0, "W")
            self.put(j, "I")

    def skip_forward(self, j: int) -> bool:
        """``prioritize_b``: a stage two forwards ahead of the next skips its F when running it
        (and the W's that make room) would hold up the B that the next stage sends back."""
        if not self.s.prioritize_b or j + 1 >= self.p or self.done["F"][j] < self.done["F"][j + 1] + 2:
            return False
        back = self.free[j + 1] + self.cost["F"] + self.cost["I"] + self.c.link
        if self.free[j] >= back:
            return True
        freed, room_cost, k = self.held[j] + 1, 0.0, self.done["W"][j]
        while freed > self.limit and k < self.done["I"][j]:
            freed, room_cost, k = freed + self.memory["W"], room_cost + self.cost["W"], k + 1
        if self.free[j] + self.cost["F"] + room_cost <= back:
            return False
        return back - self.free[j] <= max(self.idle) - self.idle[j]

