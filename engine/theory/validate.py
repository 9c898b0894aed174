"""Rule checks on a schedule before anything runs (as torch's `_validate_schedule` does).

Every error carries the schedule's table with the offending step marked, so a student who
typed a custom schedule sees where it breaks.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.actions import (
    BACKWARD,
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    REDUCE_GRAD,
    UPDATE,
    Action,
    ScheduleError,
)
from pipelab.engine.errors import Message, message_of
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.registry import CUSTOM
from pipelab.engine.theory.simulate import UNIT_COSTS, Deadlock, simulate


class InvalidSchedule(ScheduleError):
    """A rule broken; ``rule`` is the one-line reason (a coded Message), ``table`` the
    schedule with the offending step marked (``schedule`` and ``mark`` to draw it again,
    e.g. with a page's own words: format_table)."""

    def __init__(self, rule: Message, schedule: Schedule, mark: tuple[int, int] | None = None):
        table = format_table(schedule, mark)
        super().__init__(f"{rule}\n{table}")
        self.rule = self.message = rule
        self.schedule, self.mark, self.table = schedule, mark, table


@dataclass(frozen=True)
class TableWords:
    """The words of a schedule table, so a page can draw it in its own language."""

    step: str = "action"
    """Row k is each rank's k-th action: "step" read as a training step (issue 47)."""
    rank: str = "rank"
    here: str = "<-- here"


def format_table(schedule: Schedule, mark: tuple[int, int] | None = None, words: TableWords = TableWords()) -> str:
    """Rows are program steps, columns ranks; ``mark=(rank, step)`` flags one cell with *.

    Step k is each rank's k-th action, not a moment in time (the simulator gives times).
    """
    width = max([6] + [len(str(a)) + 1 for prog in schedule.actions for a in prog])
    header = f"{words.step:<4} " + "".join(f"{words.rank + ' ' + str(r):>{width + 1}}"
                                           for r in range(schedule.num_ranks))
    lines = [header]
    steps = max((len(p) for p in schedule.actions), default=0)
    for k in range(steps):
        cells = []
        for r, program in enumerate(schedule.actions):
            text = str(program[k]) if k < len(program) else ""
            if mark == (r, k):
                text = "*" + text
            cells.append(f"{text:>{width + 1}}")
        line = f"{k:>4} " + "".join(cells)
        if mark is not None and mark[1] == k:
            line += "   " + words.here
        lines.append(line)
    return "\n".join(lines)


def _fail(schedule: Schedule, rank: int, step: int, code: str, /, **values) -> InvalidSchedule:
    """The rule ``code`` broken at ``step`` of ``rank``: the reason names the place, the table marks it."""
    rule = Message.of("at_step", rank=rank, step=step, rule=Message.of(code, **values))
    return InvalidSchedule(rule, schedule, (rank, step))


def validate(schedule: Schedule) -> None:
    """Raise InvalidSchedule naming the first broken rule; return None if the schedule is sound."""
    S, m = schedule.num_stages, schedule.num_microbatches
    if S < 1 or m < 1:
        raise InvalidSchedule(Message.of("no_work"), schedule)
    if len(schedule.actions) != schedule.num_ranks:
        raise InvalidSchedule(Message.of("rank_programs", expected=schedule.num_ranks, got=len(schedule.actions)),
                              schedule)
    if sorted({r for s in range(S) for r in schedule.workers_of(s)}) != list(range(schedule.num_ranks)):
        raise InvalidSchedule(Message.of("rank_without_stage"), schedule)
    seen: dict[tuple[str, int, int], tuple[int, int]] = {}
    reduced: set[tuple[int, int]] = set()  # (stage, rank) of each R
    for r, program in enumerate(schedule.actions):
        for k, a in enumerate(program):
            if a.stage >= S:
                raise _fail(schedule, r, k, "stage_range", action=str(a), stage=a.stage, stages=S)
            if a.microbatch >= m:
                raise _fail(schedule, r, k, "microbatch_range", action=str(a), microbatch=a.microbatch, microbatches=m)
            if a.kind == REDUCE_GRAD:  # one per worker of its stage: it covers the worker's micro-batches
                if r not in schedule.workers_of(a.stage):
                    raise _fail(schedule, r, k, "wrong_rank", action=str(a), stage=a.stage,
                                owner=schedule.stage_to_rank[a.stage], rank=r)
                _check_reduce(schedule, r, k, a, seen, reduced)
                continue
            if schedule.rank_of(a.stage, a.microbatch) != r:
                if len(schedule.workers_of(a.stage)) > 1:  # a replicated stage's round-robin routing
                    raise _fail(schedule, r, k, "wrong_replica", action=str(a), stage=a.stage, microbatch=a.microbatch,
                                owner=schedule.rank_of(a.stage, a.microbatch), rank=r,
                                replicas=len(schedule.workers_of(a.stage)))
                raise _fail(schedule, r, k, "wrong_rank", action=str(a), stage=a.stage,
                            owner=schedule.rank_of(a.stage, a.microbatch), rank=r)
            key = (a.kind, a.stage, a.microbatch)
            if key in seen and a.kind != UPDATE:
                raise _fail(schedule, r, k, "twice", action=str(a))
            if a.kind in (BACKWARD, BACKWARD_INPUT) and (FORWARD, a.stage, a.microbatch) not in seen:
                raise _fail(schedule, r, k, "before_forward", action=str(a),
                            forward=str(Action(a.stage, FORWARD, a.microbatch)))
            if a.kind == BACKWARD and (BACKWARD_INPUT, a.stage, a.microbatch) in seen:
                raise _fail(schedule, r, k, "already_split", action=str(a))
            if a.kind == BACKWARD_INPUT and (BACKWARD, a.stage, a.microbatch) in seen:
                raise _fail(schedule, r, k, "already_full", action=str(a))
            if a.kind == BACKWARD_WEIGHT and (BACKWARD_INPUT, a.stage, a.microbatch) not in seen:
                raise _fail(schedule, r, k, "before_input_grad", action=str(a),
                            input_grad=str(Action(a.stage, BACKWARD_INPUT, a.microbatch)))
            backward_done = any((kind, a.stage, a.microbatch) in seen for kind in (BACKWARD, BACKWARD_WEIGHT))
            if a.kind == UPDATE and not backward_done:
                raise _fail(schedule, r, k, "update_before_backward", action=str(a), microbatch=a.microbatch,
                            stage=a.stage)
            seen[key] = (r, k)
    # Completeness: every (stage, micro-batch) has one F and a whole backward.
    for s in range(S):
        for j in range(m):
            r = schedule.rank_of(s, j)
            missing = None
            if (FORWARD, s, j) not in seen:
                missing = Action(s, FORWARD, j)
            elif (BACKWARD, s, j) not in seen and (BACKWARD_INPUT, s, j) not in seen:
                missing = Action(s, BACKWARD, j)
            elif (BACKWARD_INPUT, s, j) in seen and (BACKWARD_WEIGHT, s, j) not in seen:
                missing = Action(s, BACKWARD_WEIGHT, j)
            if missing is not None:
                raise _fail(schedule, r, len(schedule.actions[r]) - 1, "missing", action=str(missing))
    # With data parallelism (any R), every stage reduces its gradients once per step; with
    # replicated stages, every worker of a replicated stage does.
    # replicated stages, every worker of a replicated stage does (asynchronous PipeDream: before
    # each of its updates).
    if schedule.is_replicated and schedule.is_async:
        needed = [((a.stage, r, a.microbatch), r, a.stage, a.microbatch) for r, program in enumerate(schedule.actions)
                  for a in program if a.kind == UPDATE and len(schedule.workers_of(a.stage)) > 1]
    elif schedule.is_replicated:
        needed = [((s, r), r, s, 0) for s in range(S) if len(schedule.workers_of(s)) > 1
                  for r in schedule.workers_of(s)]
    else:
        owners = schedule.stage_to_rank
        needed = [((s, owners[s]), owners[s], s, 0) for s in range(S)] if reduced else []
    for key, r, s, j in needed:
        if key not in reduced:
            raise _fail(schedule, r, len(schedule.actions[r]) - 1, "reduce_missing",
                        action=str(Action(s, REDUCE_GRAD, j)))
    # Dependencies across ranks must be satisfiable in the order given: play it.
    try:
        simulate(schedule, UNIT_COSTS)
    except Deadlock as err:
        raise deadlock_error(err) from None


def _check_reduce(schedule: Schedule, r: int, k: int, a: Action, seen: dict, reduced: set) -> None:
    """R averages a stage's whole step of gradients: once per stage, after every one of the
    stage's backwards is complete (its B, or its W after a split), and never in a schedule
    that updates inside the step (each replica would update on its own gradient), except
    asynchronous PipeDream's replicated stages: there an R before each update averages one
    round (engine/schedules/replication.py), after the backward of its own micro-batch."""
    if schedule.is_async and schedule.is_replicated:
        if (a.stage, r, a.microbatch) in reduced:
            raise _fail(schedule, r, k, "twice", action=str(a))
        reduced.add((a.stage, r, a.microbatch))
        if (BACKWARD, a.stage, a.microbatch) not in seen or seen[(BACKWARD, a.stage, a.microbatch)][0] != r:
            raise _fail(schedule, r, k, "reduce_before_backward", action=str(a), microbatch=a.microbatch,
                        stage=a.stage)
        return
    if (a.stage, r) in reduced:
        raise _fail(schedule, r, k, "twice", action=str(a))
    reduced.add((a.stage, r))
    if schedule.is_async:
        raise _fail(schedule, r, k, "reduce_async", action=str(a))
    for j in range(schedule.num_microbatches):
        if schedule.rank_of(a.stage, j) != r:  # another replica's micro-batch: its own R covers it
            continue
        if not any((kind, a.stage, j) in seen for kind in (BACKWARD, BACKWARD_WEIGHT)):
            raise _fail(schedule, r, k, "reduce_before_backward", action=str(a), microbatch=j, stage=a.stage)


def deadlock_error(err: Deadlock) -> InvalidSchedule:
    """The simulator's Deadlock as an InvalidSchedule, its first stuck rank's step marked."""
    r, k = min(err.blocked.stuck.items())
    return InvalidSchedule(Message.of("at_step", rank=r, step=k, rule=err.message), err.schedule, (r, k))


def parse_schedule(text: str, num_ranks: int | None = None, num_microbatches: int | None = None,
                   stage_to_rank: tuple[int, ...] | None = None, name: str = CUSTOM,
                   stage_replicas: tuple[int, ...] = ()) -> Schedule:
    """Read a custom schedule: one line per rank, actions separated by spaces or commas.

    Lines may start with ``rank N:``; blank lines and ``#`` comments are skipped. Stage
    placement defaults to "stage s on the rank whose line first names it". A stored run of
    replicated stages gives its ``stage_replicas`` (Schedule.stage_replicas): validate checks
    their routing.
    """
    programs: list[list[Action]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if ":" in line:
            line = line.split(":", 1)[1]
        try:
            programs.append([Action.parse(tok) for tok in line.replace(",", " ").split()])
        except ScheduleError as err:
            raise ScheduleError.of("at_line", line=lineno, rule=message_of(err)) from None
    if not programs:
        raise ScheduleError.of("empty_schedule")
    if num_ranks is not None and len(programs) != num_ranks:
        raise ScheduleError.of("line_count", expected=num_ranks, got=len(programs))
    m = num_microbatches or 1 + max((a.microbatch for p in programs for a in p), default=0)
    if stage_to_rank is None:
        owner: dict[int, int] = {}
        for r, program in enumerate(programs):
            for a in program:
                owner.setdefault(a.stage, r)
        stages = 1 + max(owner, default=0)
        missing = [s for s in range(stages) if s not in owner]
        if missing:
            raise ScheduleError.of("stage_gap", stage=missing[0])
        stage_to_rank = tuple(owner[s] for s in range(stages))
    schedule = Schedule(name, len(programs), m, tuple(stage_to_rank), tuple(tuple(p) for p in programs),
                        stage_replicas=tuple(stage_replicas))
    if stage_replicas:
        return schedule
    for r, program in enumerate(programs):
        for k, a in enumerate(program):
            if a.stage < len(stage_to_rank) and stage_to_rank[a.stage] != r:
                raise _fail(schedule, r, k, "two_ranks", action=str(a), stage=a.stage, first=stage_to_rank[a.stage],
                            rank=r)
    return schedule


def schedule_to_text(schedule: Schedule) -> str:
    return "\n".join(f"rank {r}: " + " ".join(map(str, p)) for r, p in enumerate(schedule.actions))
