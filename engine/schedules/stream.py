"""A run's steps as one stream of actions: what overlapping steps means.

With barriers (a synchronous schedule's default) every step is the schedule's own program,
started together on every device after the previous step's flush and optimizer step. With
overlapping steps (``RunConfig.overlap_steps``; PipeDream and 2BW always run this way) the
run's steps are one schedule, the *stream*: micro-batch ``g`` of the stream is micro-batch
``g % m`` of step ``g // m``, so every key that names a micro-batch (messages, a stage's
saved activations, the simulator's dependencies) names its step too. Dependencies stay the
ones inside a step plus each rank's program order, so the same simulator, validator,
message plan and executor serve both.

- Synchronous schedules: each step's program, renumbered, one after the other; each stage
  applies its optimizer step (U) as soon as its own backward work of the step is done, and
  then its rank turns to the next step. A stage whose work ends early (the first device of
  ZB-H2's parallelogram) starts the next step while the others still finish this one:
  the parallelograms tile (arXiv 2401.10241, section 4). 1F1B's do not: its first device
  ends last, so the last device waits for the next step's forwards at every step start.
- PipeDream and 2BW: 1F1B without a flush (arXiv 1806.03377, section 3; arXiv 2006.09503):
  the registered builder over steps x m micro-batches, so the next step's warm-up forwards
  fill the cool-down of this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.actions import BACKWARD_WEIGHT, INPUT_GRAD_KINDS, UPDATE, Action
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.registry import CUSTOM, REGISTRY


@dataclass(frozen=True)
class Stream:
    """The actions of a whole run, with the step each belongs to."""

    schedule: Schedule
    """One step's schedule (what the student picked)."""
    steps: int
    program: Schedule
    """The run as one schedule over steps x m micro-batches (see the module docstring)."""

    @property
    def microbatches_per_step(self) -> int:
        return self.schedule.num_microbatches

    def step_of(self, g: int) -> int:
        return g // self.schedule.num_microbatches

    def local(self, g: int) -> int:
        """The micro-batch's index within its step."""
        return g % self.schedule.num_microbatches

    def step_starts(self, rank: int) -> list[int]:
        """Index in ``rank``'s program of its first action of each step (len: steps)."""
        starts: dict[int, int] = {}
        for index, a in enumerate(self.program.actions[rank]):
            starts.setdefault(self.step_of(a.microbatch), index)
        return [starts[k] for k in range(self.steps)]


    def check_points(self, rank: int) -> tuple[dict[int, int], dict[int, int]]:
        """Where ``rank``'s program meets post-validation (engine/runtime/post_validation.py):
        ``last_update[k]``, the index of its last U of step k (it passes the partial state on
        there), and ``verdict_at[index] = k``: before its first backward (B or I) of step
        k+1 it takes step k's verdict. A rank's next-step forwards need nothing from the
        ranks after it, so every rank gets there; the next rank sent the verdict on before
        its own first backward, whose gradient this one waits for anyway."""
        last_update: dict[int, int] = {}
        verdict_at: dict[int, int] = {}
        for index, a in enumerate(self.program.actions[rank]):
            k = self.step_of(a.microbatch)
            if a.kind == UPDATE:
                last_update[k] = index
            elif a.kind in INPUT_GRAD_KINDS and k > 0 and k - 1 not in verdict_at.values():
                verdict_at[index] = k - 1
        return last_update, verdict_at


def make_stream(schedule: Schedule, steps: int) -> Stream:
    """The run's steps as one schedule; see the module docstring."""
    m = schedule.num_microbatches
    if schedule.is_async and schedule.name in REGISTRY and schedule.name != CUSTOM:
        info = REGISTRY[schedule.name]
        if schedule.stage_replicas:  # the same round-robin over the whole stream (m is a multiple of each count)
            from pipelab.engine.schedules.replication import registered_builder, replicate
            base = info.build(schedule.num_stages, m * steps, 1)
            # As the step was built (pipelab.engine.config.replicated_schedule, which checks this
            # stream runs): each worker its stage's own program for its share, or its subsequence.
            own = schedule.replicas_run_own_programs
            run = replicate(base, schedule.stage_replicas, rebuild=registered_builder(base) if own else None)
        else:
            run = info.build(schedule.num_ranks, m * steps, schedule.chunks)
        return Stream(schedule, steps, run)
    actions = []
    for program in schedule.actions:
        joined: list[Action] = []
        for k in range(steps):
            joined += _step_program(program, k * m, add_updates=not schedule.is_async)
        actions.append(tuple(joined))
    run = Schedule(schedule.name, schedule.num_ranks, m * steps, schedule.stage_to_rank, tuple(actions),
                   schedule.description)
    return Stream(schedule, steps, run)


def _step_program(program: tuple[Action, ...], offset: int, add_updates: bool) -> list[Action]:
    """One step of a rank's program with micro-batches renumbered from ``offset``; for a
    synchronous schedule, each stage's U right after its last backward work of the step."""
    last_work: dict[int, int] = {}
    if add_updates:
        for index, a in enumerate(program):
            if a.kind in INPUT_GRAD_KINDS + (BACKWARD_WEIGHT,):
                last_work[a.stage] = index
    out = []
    for index, a in enumerate(program):
        out.append(Action(a.stage, a.kind, a.microbatch + offset))
        if last_work.get(a.stage) == index:
            # The stage's gradient is complete at its last W (split backward) or B: U depends
            # on that action (pipelab.engine.theory.simulate.dependencies).
            out.append(Action(a.stage, UPDATE, a.microbatch + offset))
    return out
