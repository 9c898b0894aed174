"""Zero bubble schedules (Qi et al., arXiv 2401.10241): ZB-H1, ZB-H2 and ZB-V.

The backward of a linear layer is two matmuls: the input gradient I (the previous stage is
waiting for it) and the weight gradient W (needed only at the optimizer step). Splitting B
into I and W lets W fill the time a rank would otherwise wait.

ZB-H1, and ZB-V once the V is full (m >= 2p), are written out directly. For ZB-H2 (and ZB-V
with fewer micro-batches) the paper places passes on a unit-time grid (section 2, and the
heuristic of section 3.2); we do the same: ``greedy_order`` plays the pipeline with
T_F = T_I = T_W = 1 and, whenever a rank is free, runs (1) an input-gradient backward if one
is ready (it is on the critical path), else (2) a forward if the rank's memory caps allow,
else (3) the oldest pending W. The order each rank ends up with is the schedule; the caps
(micro-batches alive from F to I, and held from F to W) tell H2 and V apart.

ZB-H2 also takes the pass costs (``costs``): under the same caps the cost-aware heuristic
(engine/schedules/cost_greedy.py) plays the pipeline at the real T_F, T_I, T_W and link, and
the simulator keeps whichever order is faster there, the unit grid on ties. Either way the
step reaches the paper's (p-1)(T_F + T_B - 2T_W), clipped at zero, plus 2(p-1) links inside
the longest device's span (tests/test_zb_costs.py)."""

from __future__ import annotations

import dataclasses
import functools

from pipelab.engine.actions import BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, Action, ActionKind, F, I, ScheduleError, W
from pipelab.engine.schedules.base import Schedule, linear_placement, v_placement
from pipelab.engine.schedules.chunks import FixedChunks
from pipelab.engine.schedules.cost_search import fastest_order, policies
from pipelab.engine.schedules.costs import UNIT_PASS_COSTS, PassCosts
from pipelab.engine.schedules.registry import register
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.schedule_theory import BubbleCase, ScheduleTheory


def _h1_bubble(c: BubbleCase) -> float:
    # (p-1)(T_F + T_B - T_W), the paper's T_B being our T_I (section 2.1): deferred W fill
    # the cool-down; 1/3 of 1F1B's when T_F = T_I = T_W.
    return theory.bubble_fraction_from_time(theory.zb_h1_bubble_time(c.p, c.t_f, c.t_i, c.t_w), c.m, c.work)


def _parallelogram_bubble(c: BubbleCase) -> float:
    """ZB-H2 and ZB-V: no gap inside a device's own span once it fits, (p-1)(T_F + T_B - 2T_W)
    clipped at zero (section 2.2). One synchronous step, the window the engine measures, adds
    the (p-1) T_F of the step's two ends (theory.synchronous_step_ends); the paper's zero holds
    where steps overlap (section 4), so ``overlapped`` keeps only the own-span bubble (from
    m >= 2p-1, which the extra warm-up forwards need, for ZB-V m >= 2p). ZB-V has no closed
    form of its own in the paper; with T_F = T_I = T_W it matches the simulator once m >= 2p.
    v x work: a ZB-V device runs two chunks of every micro-batch."""
    bubble = theory.zb_h2_bubble_time(c.p, c.t_f, c.t_i, c.t_w)
    if not c.overlapped:
        bubble += theory.synchronous_step_ends(c.p, c.t_f)
    return theory.bubble_fraction_from_time(bubble, c.m, c.v * c.work)


def _parallelogram_bubble_time(p: int, t_f: float, t_i: float, t_w: float) -> float:
    return theory.zb_h2_bubble_time(p, t_f, t_i, t_w) + theory.synchronous_step_ends(p, t_f)


def _h2_bubble_time(p: int, t_f: float, t_i: float, t_w: float) -> float:
    """One synchronous step of ZB-H2 built for its costs: the later devices' (p-1) T_F of
    lag fall inside the window either way, so the step idles the larger of that and the
    own-span bubble (p-1)(T_F + T_B - 2T_W), not their sum; equal at T_F = T_I = T_W."""
    return max(theory.zb_h2_bubble_time(p, t_f, t_i, t_w), theory.synchronous_step_ends(p, t_f))


def _h2_bubble(c: BubbleCase) -> float:
    """ZB-H2 (section 2.2): the own-span bubble where steps overlap, else _h2_bubble_time."""
    bubble = theory.zb_h2_bubble_time(c.p, c.t_f, c.t_i, c.t_w)
    if not c.overlapped:
        bubble = _h2_bubble_time(c.p, c.t_f, c.t_i, c.t_w)
    return theory.bubble_fraction_from_time(bubble, c.m, c.work)


ZB_H1_THEORY = ScheduleTheory(
    bubble_fraction=_h1_bubble, bubble_text="(p-1)/(3m+p-1)",
    bubble_latex=r"\frac{(p-1)(T_F+T_I-T_W)}{m(T_F+T_I+T_W)+(p-1)(T_F+T_I-T_W)} = \frac{p-1}{3m+p-1}",
    bubble_time=theory.zb_h1_bubble_time,
    # Alive until I like 1F1B: p - r; held until W, p on every rank (W runs r micro-batches late).
    peak_inflight=lambda p, m, r, v: min(p - r, m), peak_inflight_latex=r"\min(p - r,\ m)",
    peak_activations=lambda p, m: float(min(p, m)))

ZB_H2_THEORY = ScheduleTheory(
    bubble_fraction=_h2_bubble, bubble_text="(p-1)/(3m+p-1)",
    bubble_latex=r"\frac{(p-1)\max(T_F,\,T_F+T_I-2T_W)}{m(T_F+T_I+T_W)+(p-1)\max(T_F,\,T_F+T_I-2T_W)}"
                 r" = \frac{p-1}{3m+p-1}",
    bubble_time=_h2_bubble_time,
    # 2(p - r) - 1 warm-up forwards alive, so 2p - 1 on rank 0 (section 2.2).
    peak_inflight=lambda p, m, r, v: min(2 * (p - r) - 1, m), peak_inflight_latex=r"\min(2(p - r) - 1,\ m)",
    peak_activations=lambda p, m: float(min(2 * p - 1, m)))

ZB_V_THEORY = ScheduleTheory(
    bubble_fraction=_parallelogram_bubble, bubble_text="(p-1)/(6m+p-1)",
    bubble_latex=r"\frac{(p-1)\,T_F}{2m(T_F+T_I+T_W)+(p-1)\,T_F} = \frac{p-1}{6m+p-1}",
    bubble_exact=lambda p, m: m >= 2 * p,  # the V fills up only from 2p micro-batches (section 6)
    bubble_time=_parallelogram_bubble_time,
    # At most 2p chunks (p stages' worth, 1F1B's peak) on any rank (section 6): an upper bound.
    peak_inflight=lambda p, m, r, v: min(2 * p, 2 * m), peak_inflight_latex=r"\min(2p,\ 2m)",
    peak_activations=lambda p, m: float(min(p, m)))


def greedy_order(stage_to_rank: tuple[int, ...], microbatches: int, limit: list[int],
                 held_limit: list[int] | None = None) -> list[list[Action]]:
    """Per-rank action order from unit-time greedy list scheduling (see module docstring).

    ``limit[r]`` caps the stage-micro-batches alive on rank r from F to I (the activations I
    needs); ``held_limit[r]`` caps them from F to W (W still holds the linear layers' inputs
    and output gradients), so deferring W cannot grow memory without bound.
    """
    held_limit = held_limit or [10**9] * len(limit)
    stages, ranks, m = len(stage_to_rank), max(stage_to_rank) + 1, microbatches
    done: dict[tuple[int, str, int], int] = {}  # (stage, kind, micro-batch) -> finish time
    next_forward = [0] * stages
    pending_w: list[list[tuple[int, int]]] = [[] for _ in range(ranks)]  # (stage, mb) after I
    alive = [0] * ranks  # F done, I not yet
    held = [0] * ranks  # F done, W not yet
    local = [[s for s in range(stages) if stage_to_rank[s] == r] for r in range(ranks)]
    first_open = [0] * stages  # per stage: every micro-batch below it has had its I
    order: list[list[Action]] = [[] for _ in range(ranks)]
    total = 3 * stages * m
    t = 0
    while sum(map(len, order)) < total:
        started = []
        for r in range(ranks):
            room = alive[r] < limit[r] and held[r] < held_limit[r]
            action = _pick(r, t, local[r], done, next_forward, pending_w[r], room, stages, m, first_open)
            if action is not None:
                started.append((r, action))
        for r, a in started:  # all picks at time t see the same state, then finish at t+1
            order[r].append(a)
            done[(a.stage, a.kind, a.microbatch)] = t + 1
            if a.kind == FORWARD:
                next_forward[a.stage] += 1
                alive[r] += 1
                held[r] += 1
            elif a.kind == BACKWARD_INPUT:
                pending_w[r].append((a.stage, a.microbatch))
                alive[r] -= 1
            else:
                held[r] -= 1
        t += 1
        if t > 10 * total + 10:
            raise ScheduleError("greedy schedule construction made no progress (memory limit too small)")
    return order


def _pick(r, t, local, done, next_forward, pending_w, room, stages, m, first_open):
    def ready(key):
        return key in done and done[key] <= t

    # (1) input-gradient backward, oldest micro-batch first, later stage first (it came back).
    # A stage's forwards run in micro-batch order, one after another, so the first whose F is not
    # done by t ends the stage's search, and its first candidate is its oldest: one pass from
    # the first micro-batch without its I (the paper's p = 32, m = 256 rows scanned every j).
    candidates = []
    for s in local:
        while first_open[s] < m and (s, BACKWARD_INPUT, first_open[s]) in done:
            first_open[s] += 1
        for j in range(first_open[s], next_forward[s]):
            if not ready((s, FORWARD, j)):
                break
            if (s, BACKWARD_INPUT, j) in done:
                continue
            if s == stages - 1 or ready((s + 1, BACKWARD_INPUT, j)):
                candidates.append((j, -s))
                break
    if candidates:
        j, neg_s = min(candidates)
        return Action(-neg_s, BACKWARD_INPUT, j)
    # (2) forward while memory allows, deeper stage first (push micro-batches through the V)
    if room:
        forwards = []
        for s in local:
            j = next_forward[s]
            if j < m and (s == 0 or ready((s - 1, FORWARD, j))):
                forwards.append((-s, j))
        if forwards:
            neg_s, j = min(forwards)
            return Action(-neg_s, FORWARD, j)
    # (3) deferred weight gradient
    if pending_w:
        s, j = pending_w.pop(0)
        return Action(s, BACKWARD_WEIGHT, j)
    return None


@register("zb-h1",
          summary={"en": "zero bubble H1: split B into I and W, defer W; 1F1B's memory, about 1/3 of its bubble",
                   "zh": "零气泡 H1：把 B 拆成 I 和 W，推迟 W；显存同 1F1B，气泡约为其 1/3"},
          constraint={"en": "none", "zh": "无"},
          paper="Zero Bubble, arXiv 2401.10241, section 2.1", theory=ZB_H1_THEORY, order=70, label="ZB-H1")
def zb_h1(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    # 1F1B with B split into I and W, and rank r's W running r micro-batches late: the W's
    # the later ranks hold back fill their cool-down while the I's race to rank 0. Rank r
    # then keeps (p-r-1) + 1 + r = p micro-batches from F to W: rank 0's 1F1B peak, so no
    # device exceeds 1F1B's peak memory (the paper's "delay W by the warm-up count").
    p, m = ranks, microbatches
    actions = []
    for r in range(p):
        warmup, delay = min(p - r - 1, m), r
        program = [F(r, j) for j in range(warmup)]
        next_w = 0
        for i in range(m):
            if warmup + i < m:
                program.append(F(r, warmup + i))
            program.append(I(r, i))
            if i - delay >= 0:
                program.append(W(r, i - delay))
                next_w = i - delay + 1
        program += [W(r, j) for j in range(next_w, m)]
        actions.append(tuple(program))
    return Schedule("zb-h1", p, m, linear_placement(p), tuple(actions))


@register("zb-h2",
          summary={"en": "zero bubble H2: more warm-up forwards (up to 2p-1 alive); no gap inside a device's span",
                   "zh": "零气泡 H2：热身时多做前向（最多 2p-1 个存活）；设备自身区间内无空隙"},
          constraint={"en": "none", "zh": "无"},
          paper="Zero Bubble, arXiv 2401.10241, section 2.2", theory=ZB_H2_THEORY, order=80, takes_costs=True,
          label="ZB-H2")
def zb_h2(ranks: int, microbatches: int, chunks: int = 1, costs: PassCosts = UNIT_PASS_COSTS) -> Schedule:
    # Extra warm-up forwards: rank r may hold 2(p - r) - 1 micro-batches alive until I, and
    # every rank 2p - 1 until W (rank 0's peak, section 2.2). The unit-grid order is ZB-H2's
    # shape at T_F = T_I = T_W; at other costs the same limits under the cost-aware
    # heuristic (engine/schedules/cost_greedy.py) close the gaps that shape leaves, and the
    # simulator keeps whichever is faster at ``costs`` (the unit grid on ties).
    return _zb_h2(ranks, microbatches, costs)


@functools.lru_cache(maxsize=256)  # pure, and the search simulates a few candidates: build once
def _zb_h2(ranks: int, microbatches: int, costs: PassCosts) -> Schedule:
    alive = tuple(2 * (ranks - r) - 1 for r in range(ranks))
    held = (2 * ranks - 1,) * ranks
    unit = greedy_order(linear_placement(ranks), microbatches, list(alive), list(held))
    # ZB-H2's caps count whole micro-batches from F to W (section 2.2), whatever share of its
    # memory W still holds: that share is for the automatic schedules' limits (engine/schedules/zb_auto.py).
    whole = dataclasses.replace(costs, weight_memory=1.0)
    return fastest_order("zb-h2", ranks, microbatches, whole, [unit], policies(held, alive))


@register("zb-v",
          summary={"en": "zero bubble V: two chunks per device in a V; no gap inside a device's span at 1F1B's memory",
                   "zh": "零气泡 V：每个设备两个模型块排成 V 形；显存同 1F1B，设备自身区间内无空隙"},
          constraint={"en": "v = 2 exactly", "zh": "v 必须等于 2"},
          paper="Zero Bubble, arXiv 2401.10241, section 6 (ZB-V)", chunks=FixedChunks(2), theory=ZB_V_THEORY,
          order=90, label="ZB-V", torch_class="ScheduleZBVZeroBubble")
def zb_v(ranks: int, microbatches: int, chunks: int = 2) -> Schedule:
    if chunks != 2:
        raise ScheduleError(f"zb-v places exactly 2 chunks per rank (chunks=2), got {chunks}")
    placement = v_placement(ranks)
    if microbatches >= 2 * ranks:
        order = v_shape_order(ranks, microbatches)
    else:
        # Too few micro-batches to fill the V: the greedy grid, with what a rank holds from F
        # to W capped at 2p chunks (p stages' worth, 1F1B's peak), so W cannot be put off
        # until every micro-batch's inputs are held.
        order = greedy_order(placement, microbatches, [2 * ranks] * ranks, [2 * ranks] * ranks)
    return Schedule("zb-v", ranks, microbatches, placement, tuple(map(tuple, order)))


def v_shape_order(ranks: int, microbatches: int) -> list[list[Action]]:
    """ZB-V's own order (arXiv 2401.10241, section 6, figure of ZB-V), for m >= 2p.

    Rank r holds chunk 0 (stage r, going down the V) and chunk 1 (stage 2p-1-r, coming back).
    Warm-up: 2(p-r)-1 forwards of chunk 0, then r pairs F1 F0, then p-r rounds of F1 I1 W1.
    Steady state repeats F0 I0 W0 F1 I1 W1: each W runs right after its I, so a rank never
    holds more than 2p chunks from F to W (p stages' worth, 1F1B's peak) and, on unit costs,
    never waits. Cool-down: r pairs I0 I1, p-r pairs I0 W0, then the W's still owed.
    """
    return [_v_rank_order(ranks, microbatches, r) for r in range(ranks)]


def _v_rank_order(p: int, m: int, r: int) -> list[Action]:
    """Rank r's part of v_shape_order."""
    stage = (r, 2 * p - 1 - r)
    count = {kind: [0, 0] for kind in (FORWARD, BACKWARD_INPUT, BACKWARD_WEIGHT)}
    program: list[Action] = []

    def add(*steps: tuple[ActionKind, int]) -> None:  # (kind, chunk), in order
        for kind, chunk in steps:
            program.append(Action(stage[chunk], kind, count[kind][chunk]))
            count[kind][chunk] += 1

    forwards = count[FORWARD]
    for _ in range(2 * (p - r) - 1):
        add((FORWARD, 0))
    for _ in range(r):
        add((FORWARD, 1), (FORWARD, 0))
    for _ in range(p - r):
        add((FORWARD, 1), (BACKWARD_INPUT, 1), (BACKWARD_WEIGHT, 1))
    while forwards[1] < forwards[0] or forwards[0] < m:
        if forwards[0] < m:
            add((FORWARD, 0))
        add((BACKWARD_INPUT, 0), (BACKWARD_WEIGHT, 0), (FORWARD, 1), (BACKWARD_INPUT, 1), (BACKWARD_WEIGHT, 1))
    for _ in range(r):
        add((BACKWARD_INPUT, 0), (BACKWARD_INPUT, 1))
    for _ in range(p - r):
        add((BACKWARD_INPUT, 0), (BACKWARD_WEIGHT, 0))
    for chunk in (1, 0):
        while count[BACKWARD_WEIGHT][chunk] < m:
            add((BACKWARD_WEIGHT, chunk))
    return program
