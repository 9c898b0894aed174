"""Pick the fastest of several candidate orders at the given costs, as the paper does.

The zero bubble paper's automatic scheduler runs its heuristic under a few settings and keeps
the schedule with the shortest step (arXiv 2401.10241, section 3.1; its ILP refinement of
section 3.2 is left out). Here each candidate is played by the simulator itself at the given
costs, so the chosen order is the one ``pipelab simulate`` will show fastest.

The yardstick is the paper's: the longest stage's own span, from its first forward to its
last pass (section 3 and Table 5's "bubble rate"), since with post-validation (section 4)
each device starts its next step when its own work is done.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipelab.engine.actions import Action
from pipelab.engine.schedules.base import Schedule, linear_placement
from pipelab.engine.schedules.cost_greedy import Policy, cost_greedy_order
from pipelab.engine.schedules.costs import PassCosts


def policies(held_limit: tuple[int, ...], alive_limit: tuple[int, ...]) -> tuple[Policy, ...]:
    """Every setting of the heuristic's two choices under one memory limit."""
    return tuple(Policy(held_limit, alive_limit, f, w) for f in (True, False) for w in (True, False))


def longest_own_span(schedule: Schedule, costs: PassCosts) -> float:
    """The longest device's span from its first to its last action, simulated at ``costs``
    (played without a timeline: only the spans decide)."""
    from pipelab.engine.theory import simulate  # the simulator imports this package
    return max(simulate.simulated_own_spans(schedule, simulate.CostModel(
        forward=costs.forward, backward_input=costs.backward_input, backward_weight=costs.backward_weight,
        link=costs.link)))


def own_spans(events, ranks: int) -> list[float]:
    """Per rank, from its first action's start to its last action's end."""
    first, last = [float("inf")] * ranks, [float("-inf")] * ranks
    for e in events:
        first[e.rank] = min(first[e.rank], e.start)
        last[e.rank] = max(last[e.rank], e.end)
    return [b - a for a, b in zip(first, last)]


def fastest_order(name: str, ranks: int, microbatches: int, costs: PassCosts,
                  fixed: Iterable[list[list[Action]]], tried: Iterable[Policy],
                  last: Iterable[list[list[Action]]] = ()) -> Schedule:
    """The candidate with the shortest longest own span; ``fixed`` orders come first and win
    ties, so a hand-written shape stays where the heuristic does no better; ``last`` orders
    win only where they are strictly faster than every other."""
    placement = linear_placement(ranks)
    orders = list(fixed) + [cost_greedy_order(ranks, microbatches, costs, policy) for policy in tried] + list(last)
    best, best_span, seen = None, None, set()
    for order in orders:
        programs = tuple(map(tuple, order))
        if programs in seen:  # the settings often agree: play each distinct order once
            continue
        seen.add(programs)
        schedule = Schedule(name, ranks, microbatches, placement, programs)
        span = longest_own_span(schedule, costs)
        if best_span is None or span < best_span - 1e-9 * max(1.0, best_span):
            best, best_span = schedule, span
    return best
