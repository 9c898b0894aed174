"""V-Min and V-Half: V-shape schedules with controllable memory (arXiv 2405.15362, section 3).

Both place two chunks per rank on ZB-V's V and split the backward into I and W; they differ
only in how far apart the upward passes of one micro-batch sit on neighbouring devices
(engine/schedules/building_block.py). Closer passes mean shorter lifespans, less memory, and
a longer warm-up (the repeated blocks fit less work in before the first backward):

- V-Min, offset 1: the shortest lifespans, (p+4)//3 stages' worth of activations on the worst
  device, about a third of 1F1B's p; bubble about 2p/3m of the work.
- V-Half, offset 2: (p+2)//2, about half of 1F1B's; bubble about p/2m.

Those memory counts and bubble rates are the authors' summary table (at T_F = T_B = T_W, in
sail-sg's demo of the paper); our
blocks meet the memory exactly (tests/test_v_memory.py). The third schedule of the sequel,
V-ZB (zero bubble at 1F1B's memory, section 3), sits where our zb-v already is: the same V,
p stages' worth on every device, no idle slot inside a device's span once m >= 2p. It is not
registered twice.
"""

from __future__ import annotations

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules.base import Schedule, v_placement
from pipelab.engine.schedules.building_block import lightest_block
from pipelab.engine.schedules.chunks import FixedChunks
from pipelab.engine.schedules.registry import register
from pipelab.engine.theory.formulas import v_half_peak_activations, v_min_peak_activations
from pipelab.engine.theory.schedule_theory import ScheduleTheory

V_MIN_THEORY = ScheduleTheory(peak_activations=v_min_peak_activations)
V_HALF_THEORY = ScheduleTheory(peak_activations=v_half_peak_activations)


def _v_schedule(name: str, offset: int, ranks: int, microbatches: int, chunks: int) -> Schedule:
    if chunks != 2:
        raise ScheduleError.of("fixed_chunks", schedule=name, got=chunks)
    programs = lightest_block(ranks, offset).programs(microbatches)
    return Schedule(name, ranks, microbatches, v_placement(ranks), tuple(map(tuple, programs)))


@register("v-half",
          summary={"en": "V-Half: a V of repeated building blocks whose activations tend to half of 1F1B's as p "
                         "grows (the paper's figure; the table counts them at your p), with less bubble than 1F1B",
                   "zh": "V-Half：由重复的构建块组成的 V 形调度，p 越大激活越接近 1F1B 的一半（论文的数字；"
                         "表中按你的 p 计数），气泡也比 1F1B 少"},
          constraint={"en": "v = 2 exactly", "zh": "v 必须等于 2"},
          paper="Pipeline Parallelism with Controllable Memory, arXiv 2405.15362, section 3 (V-Half)",
          chunks=FixedChunks(2), theory=V_HALF_THEORY, order=110, label="V-Half")
def v_half(ranks: int, microbatches: int, chunks: int = 2) -> Schedule:
    return _v_schedule("v-half", 2, ranks, microbatches, chunks)


@register("v-min",
          summary={"en": "V-Min: a V of repeated building blocks whose activations tend to a third of 1F1B's as p "
                         "grows (the paper's figure; the table counts them at your p)",
                   "zh": "V-Min：由重复的构建块组成的 V 形调度，p 越大激活越接近 1F1B 的三分之一（论文的数字；"
                         "表中按你的 p 计数）"},
          constraint={"en": "v = 2 exactly", "zh": "v 必须等于 2"},
          paper="Pipeline Parallelism with Controllable Memory, arXiv 2405.15362, section 3 (V-Min)",
          chunks=FixedChunks(2), theory=V_MIN_THEORY, order=120, label="V-Min")
def v_min(ranks: int, microbatches: int, chunks: int = 2) -> Schedule:
    return _v_schedule("v-min", 1, ranks, microbatches, chunks)
