"""PipeDream's replicated stages: a stage on several workers, micro-batches round-robin.

PipeDream (Harlap et al., arXiv 1806.03377, section 3.2) does not only split a model into
stages: its planner may give a heavy stage several workers ("2-1-1": three stages, the first on
two workers). Micro-batch j goes to replica j mod r of a stage with r replicas, so the backward
of j runs on the worker that ran its forward and holds its activations, and a replicated
stage's workers combine their gradients in the stage's own group (data parallelism inside one
stage): in a synchronous step once, after the worker's last backward (a sum: each loss was
scaled for the whole step); in asynchronous PipeDream before every update, averaging one round
of the round-robin (one micro-batch from each replica), so the replicas stay one model. Uniform
replication, every stage r times, is plain data parallelism around a pipeline
(engine/schedules/data_parallel.py); this module is the general case.

As data: ``replicate`` takes a one-stage-per-rank schedule and gives each worker of stage s
either the stage's own program for its share of the micro-batches, renamed (with a rebuild:
the pipeline stays full), or the subsequence of the stage's program routed to it. Every order the
original schedule can run in is an order the subsequences can run in (each keeps the original's
relative order), so that construction never deadlocks; the first may, and its caller validates
it and falls back (RunConfig.build_schedule). The validator checks the routing and plays either
(a round's all-reduce waits for each replica's backward).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pipelab.engine.actions import BACKWARD, REDUCE_GRAD, UPDATE, Action, ScheduleError
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.data_parallel import last_backward


def parse_replicas(text: str) -> tuple[int, ...] | None:
    """"2,1,1" or "2-1-1" (the paper's notation) as a tuple; a one-line error otherwise."""
    return parse_counts(text, "replicas")


def parse_counts(text: str, knob: str) -> tuple[int, ...] | None:
    """"1,4,4" as (1, 4, 4), a count per stage as a form or the command line gives it (replicas
    also as the paper writes them, "2-1-1"); blank as None; a one-line error otherwise."""
    if not text.strip():
        return None
    parts = (text.replace("-", ",") if knob == "replicas" else text).split(",")
    try:
        return tuple(int(part) for part in parts)
    except ValueError:
        raise ScheduleError.of("counts_text", knob=knob.replace("_", "-"), got=repr(text)) from None


def check_replicas(replicas: tuple[int, ...], stages: int) -> None:
    """One count per stage, each a whole number of at least 1."""
    if len(replicas) != stages:
        raise ScheduleError.of("replicas_length", got=len(replicas), stages=stages, text=replicas_text(replicas))
    for count in replicas:
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ScheduleError.of("replicas_count", got=repr(count), text=replicas_text(replicas))


def replicate(schedule: Schedule, replicas: tuple[int, ...],
              rebuild: Callable[[int], Schedule] | None = None) -> Schedule:
    """``schedule`` with stage s on ``replicas[s]`` workers, micro-batches round-robin, and one R
    per worker of a replicated stage after that worker's last backward (Megatron-LM's and torch's
    place for a data-parallel reduce). ``schedule`` holds one stage per rank and no R.

    With ``rebuild(n)`` (the same schedule for n micro-batches) a worker of a stage with r
    replicas runs the stage's own program for its m / r micro-batches, renamed: its warm-up keeps
    as many forwards in flight as the stage would, so that uniform replication is exactly r
    pipelines side by side, and PipeDream's input stage admits its micro-batches as the paper's
    1F1B-RR does. Those orders may deadlock together (some zero-bubble shifts): the caller
    validates and, where they do, takes the construction without ``rebuild``, in which each
    worker runs its micro-batches' subsequence of the stage's program, which cannot deadlock
    (RunConfig.build_schedule does so)."""
    if schedule.chunks != 1 or schedule.stage_replicas:
        raise ScheduleError.of("replicas_chunks", schedule=schedule.name, v=schedule.chunks)
    check_replicas(replicas, schedule.num_stages)
    if schedule.is_async and not _updates_after_every_backward(schedule):
        raise ScheduleError.of("replicas_async", schedule=schedule.name, text=replicas_text(replicas))
    uneven = [count for count in replicas if count > 1 and schedule.num_microbatches % count]
    if schedule.is_async and uneven:  # a round of updates takes one micro-batch from each replica
        raise ScheduleError.of("replicas_async_rounds", schedule=schedule.name, text=replicas_text(replicas),
                               m=schedule.num_microbatches, r=uneven[0])
    if schedule.num_microbatches < max(replicas):
        raise ScheduleError.of("replicas_microbatches", text=replicas_text(replicas), most=max(replicas),
                               m=schedule.num_microbatches)
    if rebuild is not None:
        return replace(_assemble(schedule, replicas, lambda s, mine: _own_program(schedule, s, mine, rebuild)),
                       replicas_run_own_programs=True)
    return _assemble(schedule, replicas, lambda s, mine: [a for a in schedule.actions[schedule.stage_to_rank[s]]
                                                          if a.microbatch in mine])


def _assemble(schedule: Schedule, replicas: tuple[int, ...], program_of) -> Schedule:
    """Every worker's program (``program_of(stage, its micro-batches)``), with its R actions."""
    first = [sum(replicas[:s]) for s in range(len(replicas))]
    programs = []
    for s, count in enumerate(replicas):
        for k in range(count):
            mine = list(program_of(s, frozenset(range(k, schedule.num_microbatches, count))))
            if count > 1 and schedule.is_async:
                mine = _reduce_before_each_update(mine)
            elif count > 1:
                mine.insert(last_backward(tuple(mine), s) + 1, Action(s, REDUCE_GRAD, 0))
            programs.append(tuple(mine))
    return replace(schedule, num_ranks=sum(replicas), stage_to_rank=tuple(first), actions=tuple(programs),
                   stage_replicas=tuple(replicas))


def _own_program(schedule: Schedule, stage: int, mine: frozenset, rebuild) -> list[Action]:
    """The stage's program for this worker's micro-batches only, as the schedule orders that many:
    micro-batch i of the rebuilt program is the worker's i-th."""
    if len(mine) == schedule.num_microbatches:
        return list(schedule.actions[schedule.stage_to_rank[stage]])
    names = sorted(mine)
    own = rebuild(len(names))
    return [Action(a.stage, a.kind, names[a.microbatch]) for a in own.actions[own.stage_to_rank[stage]]]


def registered_builder(schedule: Schedule) -> Callable[[int], Schedule] | None:
    """The registry's builder for ``schedule``'s name at its p (unit costs), if it has one."""
    from pipelab.engine.schedules.registry import REGISTRY
    info = REGISTRY.get(schedule.name)
    return None if info is None else (lambda n: info.build(schedule.num_ranks, n, 1))


def _updates_after_every_backward(schedule: Schedule) -> bool:
    """PipeDream's own schedule: each backward followed by its stage's update of that micro-batch."""
    for program in schedule.actions:
        for a, b in zip(program, program[1:] + (None,)):
            if a.kind == BACKWARD and (b is None or b != Action(a.stage, UPDATE, a.microbatch)):
                return False
    return True


def _reduce_before_each_update(program: list[Action]) -> list[Action]:
    """Asynchronous PipeDream on a replicated stage: before each update the stage's replicas
    average the gradients of their latest backward, one micro-batch from each (a round of the
    round-robin), so every replica applies the same update and they stay one model (the paper's
    data-parallel replicas, section 3.2). R carries the micro-batch of the backward it follows."""
    out = []
    for a in program:
        if a.kind == UPDATE:
            out.append(Action(a.stage, REDUCE_GRAD, a.microbatch))
        out.append(a)
    return out


def replicas_text(replicas: tuple[int, ...]) -> str:
    """The paper's notation: "2-1-1"."""
    return "-".join(map(str, replicas))


def describe_replicas(schedule: Schedule) -> list[str]:
    """Each stage's workers, in lines a person reads."""
    return [f"stage {s}: process{'es' if len(schedule.workers_of(s)) > 1 else ''} "
            f"{', '.join(map(str, schedule.workers_of(s)))}"
            + (", micro-batches round-robin" if len(schedule.workers_of(s)) > 1 else "")
            for s in range(schedule.num_stages)]
