"""DualPipeV: DualPipe (DeepSeek-V3, arXiv 2412.19437, section 3.2.1) cut in half onto a V.

DualPipe feeds micro-batches from both ends of the pipeline, so every device holds two
copies of the stages (2x parameters). Cut in half, the two directions fold onto one V:
p devices hold 2p chunks, rank r chunk 0 (stage r, going down) and chunk 1 (stage 2p-1-r,
coming back), as ZB-V does, with one copy of the weights. The deepseek-ai/DualPipe README
lists it with the same bubble (PP/2-1)(F&B+B-3W) and the same PP+1 activations per device
as DualPipe, PP being the number of stages (2p here) on PP/2 devices.

In steady state each rank pairs one chunk's forward with the other chunk's backward
(F0 with B1, then F1 with B0): on a GPU the pair runs overlapped, one hiding the other's
all-to-all; here the engine runs it one after the other. The warm-up and the second half of
the cool-down split the backward into I and W, and the W's left close the step.

The phases follow torch.distributed.pipelining's ScheduleDualPipeV and deepseek-ai/DualPipe's
dualpipev.py; this is our own code, written as per-rank action lists.
"""

from __future__ import annotations

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, Action, ScheduleError
from pipelab.engine.schedules.base import Schedule, v_placement
from pipelab.engine.schedules.chunks import FixedChunks
from pipelab.engine.schedules.registry import register
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.schedule_theory import ScheduleTheory

DUALPIPEV_THEORY = ScheduleTheory(
    # The README's (PP/2-1)(F&B + B - 3W) with the F&B pair run back to back, an upper bound
    # on this engine (theory.dualpipev_bubble_time), over two chunks' work per micro-batch.
    bubble_fraction=lambda c: theory.bubble_fraction_from_time(
        theory.dualpipev_bubble_time(c.p, c.t_f, c.t_i, c.t_w), c.m, 2 * c.work),
    bubble_text="(p-1)/(3m+p-1)",
    bubble_latex=r"\frac{(p-1)(F\&B+B-3W)}{2m(F+B)+(p-1)(F\&B+B-3W)} = \frac{p-1}{3m+p-1}",
    bubble_is_bound=True,
    bubble_time=theory.dualpipev_bubble_time,
    # The README's PP + 1 activations with PP = 2p chunks: 2p + 1 alive until I on every rank,
    # p + 1/2 stages' worth held until W.
    peak_inflight=lambda p, m, r, v: min(2 * p + 1, 2 * m), peak_inflight_latex=r"\min(2p + 1,\ 2m)",
    peak_activations=lambda p, m: p + 0.5)


@register("dualpipev",
          summary={"en": "DualPipeV: DualPipe cut in half onto a V; each device pairs one chunk's F with the "
                         "other's B, split backward at the ends",
                   "zh": "DualPipeV：把 DualPipe 对半折到 V 形上；每个设备把一个模型块的 F 与另一个模型块的 B 配对，"
                         "两端拆分反向"},
          constraint={"en": "v = 2 exactly; m at least 2p", "zh": "v 必须等于 2；m 不少于 2p"},
          paper="DeepSeek-V3, arXiv 2412.19437, section 3.2.1; DualPipeV in deepseek-ai/DualPipe",
          chunks=FixedChunks(2), theory=DUALPIPEV_THEORY, order=100, label="DualPipeV",
          torch_class="ScheduleDualPipeV")
def dualpipev(ranks: int, microbatches: int, chunks: int = 2) -> Schedule:
    p, m = ranks, microbatches
    if chunks != 2:
        raise ScheduleError.of("fixed_chunks", schedule="dualpipev", got=chunks)
    if m < 2 * p:
        # Rank 0's steady state runs m - 2p + 1 rounds; the warm-up alone takes 2p - 1 micro-batches.
        raise ScheduleError.of("two_p", schedule="dualpipev", two_p=2 * p, m=m)
    return Schedule("dualpipev", p, m, v_placement(p), tuple(tuple(_rank_program(p, m, r)) for r in range(p)))


def _rank_program(p: int, m: int, r: int) -> list[Action]:
    stage = (r, 2 * p - 1 - r)  # chunk 0 goes down the V, chunk 1 comes back up
    forwards, backwards = [0, 0], [0, 0]  # next micro-batch of each chunk
    owed_w: list[tuple[int, int]] = []  # (stage, micro-batch) after I, oldest first
    program: list[Action] = []

    def forward(chunk: int) -> None:
        program.append(Action(stage[chunk], FORWARD, forwards[chunk]))
        forwards[chunk] += 1

    def backward(chunk: int, split: bool = False) -> None:
        j = backwards[chunk]
        program.append(Action(stage[chunk], BACKWARD_INPUT if split else BACKWARD, j))
        if split:
            owed_w.append((stage[chunk], j))
        backwards[chunk] += 1

    def weight() -> None:
        if owed_w:
            program.append(Action(owed_w[0][0], BACKWARD_WEIGHT, owed_w.pop(0)[1]))

    for _ in range(2 * (p - r - 1)):  # 1. chunk 0 fills the way down
        forward(0)
    for _ in range(r + 1):  # 2. both chunks
        forward(0)
        forward(1)
    for _ in range(p - r - 1):  # 3. the first backwards of chunk 1, W right after I
        backward(1, split=True)
        weight()
        forward(1)
    for _ in range(m - 2 * p + r + 1):  # 4. steady state: F0 with B1, F1 with B0
        forward(0)
        backward(1)
        forward(1)
        backward(0)
    for _ in range(p - r - 1):  # 5. chunk 0 has no forwards left
        backward(1)
        forward(1)
        backward(0)
    split = False
    for i in range(r + 1):  # 6. both backwards; halfway through, start splitting off W
        split = split or (i == (r + 1) // 2 and r % 2 == 1)
        backward(1, split)
        split = split or (i == (r + 1) // 2 and r % 2 == 0)
        backward(0, split)
    for _ in range(p - r - 1):  # 7. the last backwards of chunk 0, each after an owed W
        weight()
        backward(0, split)
    while owed_w:  # 8. the W tail
        weight()
    return program
