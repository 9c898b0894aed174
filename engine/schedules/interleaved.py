"""Interleaved 1F1B (Megatron-LM, arXiv 2104.04473, section 2.2).

Each rank holds v model chunks (stages r, r+p, ...). A micro-batch visits every rank v times,
each visit 1/v of the work, so the warm-up and cool-down bubbles shrink by v; the price is
about v times as many messages (vp - 1 chunk boundaries per micro-batch instead of p - 1).
"""

from __future__ import annotations

from pipelab.engine.actions import BACKWARD, FORWARD, Action, ScheduleError
from pipelab.engine.schedules.base import Schedule, interleaved_placement
from pipelab.engine.schedules.chunks import AnyChunks
from pipelab.engine.schedules.registry import register
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.schedule_theory import BubbleCase, ScheduleTheory


def _bubble(c: BubbleCase) -> float:
    # (p-1)/v x (T_F + T_B) of idle time per device (section 2.2), over m micro-batches' work.
    return theory.bubble_fraction_from_time(theory.interleaved_bubble_time(c.p, c.v, c.t_f, c.t_i + c.t_w), c.m,
                                            c.work)


def _peak_inflight(p: int, m: int, r: int, v: int) -> int:
    # Megatron's warm-up, (p - r - 1) x 2 + (v - 1) x p forwards, plus one, in chunks; with
    # m == p everything is warm-up; with v == 1 it is 1F1B's p - r.
    if v == 1:
        return min(p - r, m)
    if m == p:
        return m * v
    return min((p - r - 1) * 2 + (v - 1) * p + 1, m * v)


INTERLEAVED_THEORY = ScheduleTheory(bubble_fraction=_bubble, bubble_text="(p-1)/(vm+p-1)",
                                    bubble_latex=r"\frac{p-1}{vm+p-1}", peak_inflight=_peak_inflight)


@register("interleaved",
          summary={"en": "Megatron's interleaved 1F1B: v chunks per device divide the bubble over the ideal time by v, "
                         "at (vp-1)/(p-1) times the messages",
                   "zh": "Megatron 的交错式 1F1B（虚拟流水线）：每个设备 v 个模型块，按理想时间算的气泡缩小为 1/v，"
                         "消息数变为 (vp-1)/(p-1) 倍"},
          constraint={"en": "m a multiple of p; p·v at most the layers", "zh": "m 是 p 的倍数；p·v 不超过层数"},
          paper="Megatron-LM, arXiv 2104.04473, section 2.2", chunks=AnyChunks(default=2),
          theory=INTERLEAVED_THEORY, order=40, label="Interleaved 1F1B",
          torch_class="ScheduleInterleaved1F1B")
def interleaved(ranks: int, microbatches: int, chunks: int = 2) -> Schedule:
    p, m, v = ranks, microbatches, chunks
    if m % p != 0:
        # Megatron's original schedule walks micro-batches in groups of p per chunk.
        raise ScheduleError.of("multiple", schedule="interleaved", m=m, p=p)
    total = m * v  # forward (and backward) actions per rank

    def forward_at(k: int, r: int) -> Action:
        # Virtual step k: groups of p micro-batches, cycling through the chunks.
        group, within = divmod(k, p * v)
        chunk = within // p
        return Action(chunk * p + r, FORWARD, group * p + within % p)

    def backward_at(k: int, r: int) -> Action:
        group, within = divmod(k, p * v)
        chunk = v - 1 - within // p  # backwards visit the chunks in reverse
        return Action(chunk * p + r, BACKWARD, group * p + within % p)

    actions = []
    for r in range(p):
        if v == 1:
            warmup = min(p - r - 1, total)
        elif m == p:
            warmup = total  # Megatron: with m == p everything is warm-up
        else:
            warmup = min((p - r - 1) * 2 + (v - 1) * p, total)
        program = [forward_at(k, r) for k in range(warmup)]
        for k in range(total - warmup):
            program += [forward_at(warmup + k, r), backward_at(k, r)]
        program += [backward_at(k, r) for k in range(total - warmup, total)]
        actions.append(tuple(program))
    return Schedule("interleaved", p, m, interleaved_placement(p, v), tuple(actions))
