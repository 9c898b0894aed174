"""Rule checks on a schedule before anything runs (as torch's `_validate_schedule` does).

Every error carries the schedule's table with the offending step marked, so a student who
typed a custom schedule sees where it breaks.
"""

from __future__ import annotations

from engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, UPDATE, Action, ScheduleError
from engine.schedules.base import Schedule
from engine.simulate import UNIT_COSTS, Deadlock, simulate


class InvalidSchedule(ScheduleError):
    """A rule broken; ``rule`` is the one-line reason, ``table`` the marked schedule."""

    def __init__(self, rule: str, table: str):
        super().__init__(f"{rule}\n{table}")
        self.rule = rule
        self.table = table


def format_table(schedule: Schedule, mark: tuple[int, int] | None = None) -> str:
    """Rows are program steps, columns ranks; ``mark=(rank, step)`` flags one cell with *.

    Step k is each rank's k-th action, not a moment in time (the simulator gives times).
    """
    width = max([6] + [len(str(a)) + 1 for prog in schedule.actions for a in prog])
    header = "step " + "".join(f"{'rank ' + str(r):>{width + 1}}" for r in range(schedule.num_ranks))
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
            line += "   <-- here"
        lines.append(line)
    return "\n".join(lines)


def _fail(schedule: Schedule, rule: str, rank: int, step: int) -> InvalidSchedule:
    return InvalidSchedule(f"rank {rank}, step {step}: {rule}", format_table(schedule, (rank, step)))


def validate(schedule: Schedule) -> None:
    """Raise InvalidSchedule naming the first broken rule; return None if the schedule is sound."""
    S, m = schedule.num_stages, schedule.num_microbatches
    if S < 1 or m < 1:
        raise InvalidSchedule("a schedule needs at least one stage and one micro-batch", format_table(schedule))
    if len(schedule.actions) != schedule.num_ranks:
        raise InvalidSchedule(f"expected {schedule.num_ranks} rank programs, got {len(schedule.actions)}",
                              format_table(schedule))
    if sorted(set(schedule.stage_to_rank)) != list(range(schedule.num_ranks)):
        raise InvalidSchedule("every rank must hold at least one stage", format_table(schedule))
    seen: dict[tuple[str, int, int], tuple[int, int]] = {}
    for r, program in enumerate(schedule.actions):
        for k, a in enumerate(program):
            if a.stage >= S:
                raise _fail(schedule, f"{a} names stage {a.stage} but there are only {S} stages", r, k)
            if a.microbatch >= m:
                raise _fail(schedule, f"{a} names micro-batch {a.microbatch} but there are only {m}", r, k)
            if schedule.stage_to_rank[a.stage] != r:
                owner = schedule.stage_to_rank[a.stage]
                raise _fail(schedule, f"{a}: stage {a.stage} lives on rank {owner}, not rank {r}", r, k)
            key = (a.kind, a.stage, a.microbatch)
            if key in seen and a.kind != UPDATE:
                raise _fail(schedule, f"{a} is computed twice in one step", r, k)
            if a.kind in (BACKWARD, BACKWARD_INPUT) and (FORWARD, a.stage, a.microbatch) not in seen:
                raise _fail(schedule, f"{a} comes before its forward {Action(a.stage, FORWARD, a.microbatch)}", r, k)
            if a.kind == BACKWARD and (BACKWARD_INPUT, a.stage, a.microbatch) in seen:
                raise _fail(schedule, f"{a}: this backward was already split into I and W", r, k)
            if a.kind == BACKWARD_INPUT and (BACKWARD, a.stage, a.microbatch) in seen:
                raise _fail(schedule, f"{a}: this micro-batch already had a full backward B", r, k)
            if a.kind == BACKWARD_WEIGHT and (BACKWARD_INPUT, a.stage, a.microbatch) not in seen:
                raise _fail(schedule, f"{a} comes before its input-gradient backward "
                                      f"{Action(a.stage, BACKWARD_INPUT, a.microbatch)}", r, k)
            backward_done = any((kind, a.stage, a.microbatch) in seen for kind in (BACKWARD, BACKWARD_WEIGHT))
            if a.kind == UPDATE and not backward_done:
                raise _fail(schedule, f"{a} updates before the backward of micro-batch {a.microbatch} "
                                      f"on stage {a.stage}", r, k)
            seen[key] = (r, k)
    # Completeness: every (stage, micro-batch) has one F and a whole backward.
    for s in range(S):
        r = schedule.stage_to_rank[s]
        for j in range(m):
            missing = None
            if (FORWARD, s, j) not in seen:
                missing = Action(s, FORWARD, j)
            elif (BACKWARD, s, j) not in seen and (BACKWARD_INPUT, s, j) not in seen:
                missing = Action(s, BACKWARD, j)
            elif (BACKWARD_INPUT, s, j) in seen and (BACKWARD_WEIGHT, s, j) not in seen:
                missing = Action(s, BACKWARD_WEIGHT, j)
            if missing is not None:
                raise _fail(schedule, f"{missing} is missing: every stage must run F and a backward for every "
                                      "micro-batch", r, len(schedule.actions[r]) - 1)
    # Dependencies across ranks must be satisfiable in the order given: play it.
    try:
        simulate(schedule, UNIT_COSTS)
    except Deadlock as err:
        raise deadlock_error(err) from None


def deadlock_error(err: Deadlock) -> InvalidSchedule:
    """The simulator's Deadlock as an InvalidSchedule, its first stuck rank's step marked."""
    r, k = min(err.blocked.stuck.items())
    return _fail(err.schedule, str(err), r, k)


def parse_schedule(text: str, num_ranks: int | None = None, num_microbatches: int | None = None,
                   stage_to_rank: tuple[int, ...] | None = None, name: str = "custom") -> Schedule:
    """Read a custom schedule: one line per rank, actions separated by spaces or commas.

    Lines may start with ``rank N:``; blank lines and ``#`` comments are skipped. Stage
    placement defaults to "stage s on the rank whose line first names it".
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
            raise ScheduleError(f"line {lineno}: {err}") from None
    if not programs:
        raise ScheduleError("the schedule is empty: write one line of actions per rank, like '0F0 0B0'")
    if num_ranks is not None and len(programs) != num_ranks:
        raise ScheduleError(f"expected {num_ranks} lines (one per rank), got {len(programs)}")
    m = num_microbatches or 1 + max((a.microbatch for p in programs for a in p), default=0)
    if stage_to_rank is None:
        owner: dict[int, int] = {}
        for r, program in enumerate(programs):
            for a in program:
                owner.setdefault(a.stage, r)
        stages = 1 + max(owner, default=0)
        missing = [s for s in range(stages) if s not in owner]
        if missing:
            raise ScheduleError(f"stage {missing[0]} appears on no rank: stages must be numbered 0..S-1 without gaps")
        stage_to_rank = tuple(owner[s] for s in range(stages))
    schedule = Schedule(name, len(programs), m, tuple(stage_to_rank), tuple(tuple(p) for p in programs))
    for r, program in enumerate(programs):
        for k, a in enumerate(program):
            if a.stage < len(stage_to_rank) and stage_to_rank[a.stage] != r:
                raise _fail(schedule, f"{a}: stage {a.stage} appears on ranks {stage_to_rank[a.stage]} and {r}; "
                                      "each stage lives on one rank", r, k)
    return schedule


def schedule_to_text(schedule: Schedule) -> str:
    return "\n".join(f"rank {r}: " + " ".join(map(str, p)) for r, p in enumerate(schedule.actions))
