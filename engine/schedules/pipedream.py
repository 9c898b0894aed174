"""Asynchronous PipeDream (arXiv 1806.03377) and PipeDream-2BW (arXiv 2006.09503).

Both run 1F1B without a flush inside the step; what differs is when a stage updates its
weights (the U actions) and so how many weight versions it must stash for in-flight
micro-batches. The executor's weight stash makes a backward use its forward's weights.
"""

from __future__ import annotations

from pipelab.engine.actions import BACKWARD, ScheduleError, U
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.classic import one_f_one_b
from pipelab.engine.schedules.registry import register
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.schedule_theory import BubbleCase, ScheduleTheory


def _bubble(c: BubbleCase) -> float:
    # One synchronous step is 1F1B's (p-1)/(m+p-1). With overlapping steps, 1F1B without a
    # flush keeps every stage busy in steady state (arXiv 1806.03377, section 3).
    return 0.0 if c.overlapped else theory.gpipe_bubble_fraction(c.p, c.m)


PIPEDREAM_THEORY = ScheduleTheory(
    bubble_fraction=_bubble, bubble_text="(p-1)/(m+p-1)", bubble_latex=r"\frac{p-1}{m+p-1}",
    peak_inflight=lambda p, m, r, v: min(p - r, m), peak_inflight_latex=r"\min(p - r,\ m)",
    # Weight stashing: stage r sees p - r updates between a micro-batch's F and B (section 3.3).
    weight_versions=lambda p, r: p - r, weight_versions_latex="p - r")

PIPEDREAM_2BW_THEORY = ScheduleTheory(
    bubble_fraction=_bubble, bubble_text="(p-1)/(m+p-1)", bubble_latex=r"\frac{p-1}{m+p-1}",
    peak_inflight=lambda p, m, r, v: min(p - r, m), peak_inflight_latex=r"\min(p - r,\ m)",
    # Double buffering: two versions (arXiv 2006.09503, section 3.1); one on the last stage,
    # which runs each backward right after its forward, so no micro-batch spans its update.
    weight_versions=lambda p, r: 2 if r < p - 1 else 1, weight_versions_latex=r"\min(2,\ p - r)")


@register("pipedream",
          summary={"en": "asynchronous 1F1B: update after every backward, stash weights",
                   "zh": "异步 1F1B：每次反向后立即更新，权重暂存"},
          constraint={"en": "asynchronous: no gradient check", "zh": "异步：不做梯度校验"},
          paper="PipeDream, arXiv 1806.03377, sections 3.2-3.3", synchronous=False,
          theory=PIPEDREAM_THEORY, order=50, label="PipeDream")
def pipedream(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    # NOAM = p micro-batches admitted at start-up; every backward is followed by its stage's
    # update, so stage r sees p-r updates between a micro-batch's F and B: p-r versions.
    base = one_f_one_b(ranks, microbatches)
    actions = [[x for a in program for x in ((a, U(a.stage, a.microbatch)) if a.kind == BACKWARD else (a,))]
               for program in base.actions]
    return Schedule("pipedream", ranks, microbatches, base.stage_to_rank,
                    tuple(tuple(p) for p in actions))


@register("pipedream-2bw",
          summary={"en": "double-buffered weights: accumulate p micro-batches, update with one-step delay",
                   "zh": "双缓冲权重：累积 p 个微批次的梯度，延迟一步更新"},
          constraint={"en": "m a multiple of p; asynchronous", "zh": "m 是 p 的倍数；异步"},
          paper="PipeDream-2BW, arXiv 2006.09503, section 3.1", synchronous=False,
          theory=PIPEDREAM_2BW_THEORY, order=60, label="PipeDream-2BW")
def pipedream_2bw(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    # 2BW accumulates gradients over a group of g = p micro-batches and updates once per group.
    # Forwards of the next group already in flight keep the previous version: at most two
    # versions are alive, and their gradients land one update late (the one-step delay).
    if microbatches % ranks != 0:
        raise ScheduleError.of("multiple_updates", schedule="pipedream-2bw", m=microbatches, p=ranks)
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
