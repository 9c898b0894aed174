"""The schedules that came first: naive model parallelism, GPipe and 1F1B (PipeDream-Flush)."""

from __future__ import annotations

from pipelab.engine.actions import Action, B, F
from pipelab.engine.schedules.base import Schedule, linear_placement
from pipelab.engine.schedules.registry import register
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.schedule_theory import ScheduleTheory

NAIVE_THEORY = ScheduleTheory(
    # One micro-batch at a time: one device of p works, so utilization is 1/p.
    bubble_fraction=lambda c: theory.naive_bubble_fraction(c.p),
    bubble_text="(p-1)/p", bubble_latex=r"\frac{p-1}{p}",
    peak_inflight=lambda p, m, r, v: 1, peak_inflight_latex="1")

GPIPE_THEORY = ScheduleTheory(
    # (p-1)/(m+p-1) (arXiv 1811.06965, section 2.2); every rank keeps all m micro-batches'
    # activations until its backwards start.
    bubble_fraction=lambda c: theory.gpipe_bubble_fraction(c.p, c.m),
    bubble_text="(p-1)/(m+p-1)", bubble_latex=r"\frac{p-1}{m+p-1}",
    bubble_time=theory.one_f_one_b_bubble_time,
    peak_inflight=lambda p, m, r, v: m, peak_inflight_latex="m",
    peak_activations=lambda p, m: float(m))

ONE_F_ONE_B_THEORY = ScheduleTheory(
    # GPipe's bubble, but rank r holds at most p - r micro-batches: its warm-up depth + 1
    # (arXiv 2006.09503, section 3.2), so p on rank 0 whatever m is.
    bubble_fraction=lambda c: theory.one_f_one_b_bubble_fraction(c.p, c.m),
    bubble_text="(p-1)/(m+p-1)", bubble_latex=r"\frac{p-1}{m+p-1}",
    bubble_time=theory.one_f_one_b_bubble_time,
    peak_inflight=lambda p, m, r, v: min(p - r, m), peak_inflight_latex=r"\min(p - r,\ m)",
    peak_activations=lambda p, m: float(min(p, m)))


@register("naive",
          summary={"en": "one micro-batch at a time through every stage and back (the baseline)",
                   "zh": "每次一个微批次，依次经过所有阶段再返回（基线）"},
          constraint={"en": "one micro-batch at a time", "zh": "每次一个微批次"},
          paper="model parallelism without pipelining; the starting point of arXiv 1811.06965, section 2",
          theory=NAIVE_THEORY, order=10, label="Naive")
def naive(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    # Micro-batch j does not enter stage 0 before micro-batch j-1 has come back through its
    # backward, so at any moment exactly one device is working: utilization 1/p.
    actions = [[a for j in range(microbatches) for a in (F(r, j), B(r, j))] for r in range(ranks)]
    return Schedule("naive", ranks, microbatches, linear_placement(ranks), _freeze(actions))


@register("gpipe",
          summary={"en": "all forwards, then all backwards, then one synchronous update",
                   "zh": "先做所有前向，再做所有反向，最后一次同步更新"},
          constraint={"en": "none", "zh": "无"},
          paper="GPipe, arXiv 1811.06965, section 2.2", theory=GPIPE_THEORY, order=20, label="GPipe",
          torch_class="ScheduleGPipe")
def gpipe(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    # Every rank keeps all m micro-batches' activations until its backwards start (peak m).
    actions = [[F(r, j) for j in range(microbatches)] + [B(r, j) for j in range(microbatches)]
               for r in range(ranks)]
    return Schedule("gpipe", ranks, microbatches, linear_placement(ranks), _freeze(actions))


@register("1f1b",
          summary={"en": "PipeDream-Flush: warm-up, one forward one backward, cool-down, flush",
                   "zh": "PipeDream-Flush：热身、一前一后交替、冷却、流水线刷新"},
          constraint={"en": "none", "zh": "无"},
          paper="PipeDream-Flush, arXiv 2006.09503, section 3.2 (also DeepSpeed's schedule)",
          theory=ONE_F_ONE_B_THEORY, order=30, label="1F1B",
          torch_class="Schedule1F1B")
def one_f_one_b(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
    actions = []
    for r in range(ranks):
        # Warm-up: rank r runs p-r-1 forwards so that the last stage can start 1F1B at once;
        # then at most p-r micro-batches are ever alive on rank r, whatever m is.
        warmup = min(ranks - r - 1, microbatches)
        steady = microbatches - warmup
        program = [F(r, j) for j in range(warmup)]
        for k in range(steady):
            program += [F(r, warmup + k), B(r, k)]
        program += [B(r, j) for j in range(steady, microbatches)]
        actions.append(program)
    return Schedule("1f1b", ranks, microbatches, linear_placement(ranks), _freeze(actions))


def _freeze(actions: list[list[Action]]) -> tuple[tuple[Action, ...], ...]:
    return tuple(tuple(program) for program in actions)
