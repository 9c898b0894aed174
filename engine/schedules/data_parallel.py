"""Pipelines side by side: d replicas of one p-stage pipeline, and where their gradients meet.

Every real training job runs data parallelism around its pipeline: d copies of the pipeline,
each training 1/d of the global batch, and each stage's gradients averaged over its d copies
before the optimizer step (Megatron-LM, arXiv 2104.04473, section 3.3; DeepSpeed's pipeline
engine; torch.distributed.pipelining with DDP over a 2-D mesh). Here that is two pieces of
data, read by the same validator, simulator and executor as every schedule:

- ``RankLayout``: which process holds which (replica, pipeline rank), in one place;
- ``with_gradient_reduce``: the schedule with one R action per stage, the all-reduce of that
  stage's gradients in its data-parallel group, placed as Megatron and torch place it (right
  after the stage's own last backward) or as DeepSpeed does (after the whole flush).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pipelab.engine.actions import BACKWARD, BACKWARD_WEIGHT, REDUCE_GRAD, Action
from pipelab.engine.schedules.base import Schedule

AFTER_BACKWARD = "backward"
"""R right after its stage's last backward (B, or the last W): later stages reduce while
earlier ones still compute, hiding the all-reduce in the cool-down's idle time."""
AT_FLUSH = "flush"
"""R once every stage of the pipeline has finished its backward: nothing hides."""
REDUCE_PLACEMENTS = (AFTER_BACKWARD, AT_FLUSH)


@dataclass(frozen=True)
class RankLayout:
    """Where d pipelines of p ranks each sit among d x p processes.

    Process g is pipeline rank g % p of replica g // p: a pipeline is p consecutive processes
    (its messages stay between neighbours, on one host when a host holds a whole pipeline, as
    Megatron-LM keeps its tensor- and pipeline-parallel groups inside a node where it can), and
    the d processes holding the same stages, one per replica, form that stage's data-parallel
    group, whose all-reduce averages their gradients."""

    pipeline_ranks: int
    """p: processes per pipeline."""
    replicas: int = 1
    """d: pipelines side by side."""

    @property
    def world(self) -> int:
        return self.pipeline_ranks * self.replicas

    def process(self, replica: int, pipeline_rank: int) -> int:
        return replica * self.pipeline_ranks + pipeline_rank

    def replica_of(self, process: int) -> int:
        return process // self.pipeline_ranks

    def pipeline_rank_of(self, process: int) -> int:
        return process % self.pipeline_ranks

    def pipeline(self, replica: int) -> tuple[int, ...]:
        """The processes of one pipeline, stage order."""
        return tuple(self.process(replica, r) for r in range(self.pipeline_ranks))

    def reduce_group(self, pipeline_rank: int) -> tuple[int, ...]:
        """The processes holding pipeline rank ``pipeline_rank``'s stages, one per replica."""
        return tuple(self.process(k, pipeline_rank) for k in range(self.replicas))

    def describe(self) -> list[str]:
        """The layout in lines a person reads: each pipeline, then each stage group."""
        lines = [f"pipeline {k}: processes {', '.join(map(str, self.pipeline(k)))}" for k in range(self.replicas)]
        if self.replicas > 1:
            lines += [f"data-parallel group of pipeline rank {r}: processes {', '.join(map(str, self.reduce_group(r)))}"
                      for r in range(self.pipeline_ranks)]
        return lines


def with_gradient_reduce(schedule: Schedule, placement: str = AFTER_BACKWARD) -> Schedule:
    """``schedule`` with one R per stage: after the stage's last backward on its rank
    (AFTER_BACKWARD), or at the end of each rank's program, waiting for every stage's backward
    (AT_FLUSH). Chunks of one rank (interleaved, V) each reduce after their own last backward,
    so a chunk that finishes early reduces while the rank's other chunk still computes."""
    if placement not in REDUCE_PLACEMENTS:
        raise ValueError(f"unknown reduce placement {placement!r}; valid: {', '.join(REDUCE_PLACEMENTS)}")
    programs = []
    for rank, program in enumerate(schedule.actions):
        out = list(program)
        stages = schedule.stages_of(rank)
        if placement == AT_FLUSH:
            out += [Action(s, REDUCE_GRAD, 0) for s in stages]
        else:
            # Insert from the last position backwards, so earlier indices stay valid.
            lasts = sorted(((last_backward(program, s), s) for s in stages), reverse=True)
            for index, s in lasts:
                out.insert(index + 1, Action(s, REDUCE_GRAD, 0))
        programs.append(tuple(out))
    return replace(schedule, actions=tuple(programs), reduce_at_flush=placement == AT_FLUSH)


def last_backward(program: tuple[Action, ...], stage: int) -> int:
    """Index of the action that completes ``stage``'s last gradient on its rank: its last B
    or W (an I leaves the weight gradient to its W)."""
    return max(k for k, a in enumerate(program) if a.stage == stage and a.kind in (BACKWARD, BACKWARD_WEIGHT))

