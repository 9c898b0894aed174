"""Event-driven simulation of a schedule on a cost model: the "theory" timeline.

Each rank runs its program in order; an action starts when its rank is free and its inputs
exist (the previous stage's activation, the next stage's input gradient, plus the link cost
when they come from another rank). The same dependency rules let the validator prove that a
schedule cannot deadlock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pipelab.engine.actions import (
    BACKWARD,
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    INPUT_GRAD_KINDS,
    REDUCE_GRAD,
    UPDATE,
    Action,
    ScheduleError,
)
from pipelab.engine.errors import Message
from pipelab.engine.results.timeline import Event, Timeline
from pipelab.engine.schedules.base import Schedule


@dataclass(frozen=True, kw_only=True)
class CostModel:
    """Seconds per action, per stage (a float applies to every stage)."""

    forward: float | tuple[float, ...] = 1.0
    """T_F: one micro-batch's forward through one stage."""
    backward: float | tuple[float, ...] | None = None
    """T_B: a full backward; defaults to input + weight."""
    backward_input: float | tuple[float, ...] | None = None
    """T_I (the paper's T_B in arXiv 2401.10241): the input-gradient half; defaults to T_B/2."""
    backward_weight: float | tuple[float, ...] | None = None
    """T_W: the weight-gradient half; defaults to T_B/2."""
    update: float | tuple[float, ...] = 0.0
    """T_U: one optimizer step of one stage."""
    reduce: float | tuple[float, ...] = 0.0
    """T_R: one stage's gradient all-reduce over its data-parallel replicas (the R action);
    engine/theory/formulas.py ring_all_reduce_seconds gives it from bytes and a link."""
    link: float = 0.0
    """Seconds from send to arrival for a message between two ranks."""
    activation_bytes: int | tuple[int, ...] = 0
    """Bytes of activations one stage keeps for one micro-batch's backward."""
    weight_grad_bytes: int | tuple[int, ...] = 0
    """Bytes a split backward (I) leaves alive until its W: the layer inputs and output
    gradients the weight-gradient matmuls still need (arXiv 2401.10241, section 2)."""
    per_action: Mapping[tuple[str, int, int], float] | None = None
    """Seconds for particular actions, keyed (kind, stage, micro-batch); they override the
    per-stage values. Measured costs differ by position: a step's first forward on a stage
    runs with cold caches and takes longer than the ones after it."""
    host_after: float | tuple[float, ...] = 0.0
    """Seconds a rank stays taken after each action of a stage without computing: the
    executor's own CPU time posting sends, keeping books and taking messages that are in
    (Event.host_after). Measured runs
    on CPU have it; the papers' cost models have none."""
    per_action_host_after: Mapping[tuple[str, int, int], float] | None = None
    """host_after for particular actions, keyed like ``per_action``."""
    per_step_action: Mapping[tuple[str, int, int, int], float] | None = None
    """Seconds for an action of one step, keyed (kind, stage, micro-batch, step); they override
    ``per_action``. Overlapping steps are one timeline (engine/schedules/stream.py), so each step's own
    measured costs go in together."""
    per_step_action_host_after: Mapping[tuple[str, int, int, int], float] | None = None
    """host_after for an action of one step, keyed like ``per_step_action``."""

    def of(self, kind: str, stage: int, microbatch: int | None = None, step: int | None = None) -> float:
        if self.per_step_action is not None and (kind, stage, microbatch, step) in self.per_step_action:
            return self.per_step_action[(kind, stage, microbatch, step)]
        if self.per_action is not None and (kind, stage, microbatch) in self.per_action:
            return self.per_action[(kind, stage, microbatch)]
        if kind == FORWARD:
            return per_stage(self.forward, stage)
        if kind == UPDATE:
            return per_stage(self.update, stage)
        if kind == REDUCE_GRAD:
            return per_stage(self.reduce, stage)
        b, i, w = (per_stage(v, stage) for v in (self.backward, self.backward_input, self.backward_weight))
        if b is None:
            b = (i if i is not None else 1.0) + (w if w is not None else 1.0)
        if kind == BACKWARD:
            return b
        if i is None and w is None:
            i = w = b / 2
        elif i is None:
            i = b - w
        elif w is None:
            w = b - i
        return i if kind == BACKWARD_INPUT else w

    def host(self, kind: str, stage: int, microbatch: int | None = None, step: int | None = None) -> float:
        """Seconds the rank stays taken after this action without computing."""
        if (self.per_step_action_host_after is not None
                and (kind, stage, microbatch, step) in self.per_step_action_host_after):
            return self.per_step_action_host_after[(kind, stage, microbatch, step)]
        if self.per_action_host_after is not None and (kind, stage, microbatch) in self.per_action_host_after:
            return self.per_action_host_after[(kind, stage, microbatch)]
        return per_stage(self.host_after, stage)


def per_stage(value, stage: int):
    """A CostModel field's value for one stage (a scalar applies to every stage)."""
    return value[stage] if isinstance(value, (tuple, list)) else value


UNIT_COSTS = CostModel(forward=1.0, backward_input=1.0, backward_weight=1.0)
"""T_F = T_I = T_W = 1 (so T_B = 2): the paper's figures."""


@dataclass
class Blocked:
    """Where a schedule cannot go on: each stuck rank with the index of its stuck action."""
    stuck: dict[int, int] = field(default_factory=dict)


class Deadlock(ScheduleError):
    """Every rank with actions left waits on another. ``blocked`` says where each is stuck;
    pipelab.engine.theory.validate turns it into an InvalidSchedule with the marked table."""

    def __init__(self, schedule: Schedule, blocked: Blocked):
        self.schedule = schedule
        self.blocked = blocked
        waiting = tuple(Message.of("rank_at", rank=r, action=str(schedule.actions[r][k]))
                        for r, k in sorted(blocked.stuck.items()))
        self.message = Message.of("deadlock", waiting=waiting)
        super().__init__(self.message)


def dependencies(action: Action, schedule: Schedule, split: set[tuple[int, int]]) -> list[tuple]:
    """Keys of the actions whose results ``action`` needs, with the rank they run on."""
    s, j = action.stage, action.microbatch
    last = schedule.num_stages - 1
    if action.kind == FORWARD:
        return [("F", s - 1, j)] if s > 0 else []
    if action.kind in INPUT_GRAD_KINDS:
        deps = [("F", s, j)]
        if s < last:
            deps.append(("grad", s + 1, j))
        return deps
    if action.kind == BACKWARD_WEIGHT:
        return [("I", s, j)]
    if action.kind == REDUCE_GRAD:
        # After every backward of its stage, or of every stage when the reduce waits for the
        # flush (Schedule.reduce_at_flush). Replicas of a pipeline play the same program on
        # the same costs, so the group's all-reduce starts when this replica's does.
        stages = range(schedule.num_stages) if schedule.reduce_at_flush else (s,)
        microbatches = range(schedule.num_microbatches)
        if schedule.is_async:  # PipeDream's replicated stage: one round, a micro-batch from each replica
            r = len(schedule.workers_of(s))
            microbatches = range(j - j % r, j - j % r + r)
        return [("W", t, i) if (t, i) in split else ("B", t, i) for t in stages for i in microbatches]
    # UPDATE: after this stage's backward of that micro-batch is complete
    return [("W", s, j) if (s, j) in split else ("B", s, j)]


def play(schedule: Schedule, cost: CostModel, microbatches_per_step: int | None = None
         ) -> tuple[Timeline, Blocked | None]:
    """Play every rank's program; returns the timeline and, if it gets stuck, where.

    ``microbatches_per_step``: ``schedule`` is a run's stream (engine/schedules/stream.py), whose
    micro-batch g is micro-batch g % m of step g // m: costs are looked up and events
    labelled with those."""
    m = microbatches_per_step or schedule.num_microbatches
    cursor = [0] * schedule.num_ranks
    events = [Event(*played) for played in _played(schedule, cost, m, cursor)]
    blocked = _blocked(schedule, cursor)
    events.sort(key=lambda e: (e.start, e.rank))
    timeline = Timeline(schedule.num_ranks, events, "simulated", m, schedule.stage_to_rank)
    timeline.memory = activation_memory(timeline, cost)
    return timeline, blocked


def simulated_own_spans(schedule: Schedule, cost: CostModel) -> list[float]:
    """Per rank, from its first action's start to its last action's end, as ``simulate`` plays
    it, without building its timeline: the cost-aware schedules play a dozen candidate orders
    to keep the fastest (engine/schedules/cost_search.py). Raises Deadlock as simulate does."""
    ranks = schedule.num_ranks
    first, last = [math.inf] * ranks, [-math.inf] * ranks
    cursor = [0] * ranks
    for r, _, _, _, start, end, _ in _played(schedule, cost, schedule.num_microbatches, cursor):
        if start < first[r]:
            first[r] = start
        if end > last[r]:
            last[r] = end
    blocked = _blocked(schedule, cursor)
    if blocked is not None:
        raise Deadlock(schedule, blocked)
    return [b - a for a, b in zip(first, last)]


def _blocked(schedule: Schedule, cursor: list[int]) -> Blocked | None:
    """Where the ranks stopped short of their programs' ends (``cursor``: actions played), if any did."""
    if all(c == len(p) for c, p in zip(cursor, schedule.actions)):
        return None
    return Blocked({r: c for r, (c, p) in enumerate(zip(cursor, schedule.actions)) if c < len(p)})


def _played(schedule: Schedule, cost: CostModel, m: int, cursor: list[int]):
    """Each action as the ranks play it: (rank, stage, kind, micro-batch in its step, start, end,
    step), Event's fields, in the order the sweeps reach them. Each rank runs its program in order,
    an action once its inputs are in (a message from another rank a link later) and its rank is
    free; sweeps go on while any rank moves. ``cursor[r]`` counts rank r's actions played: where
    it stopped, when the schedule gets stuck."""
    split = schedule.split_backward_pairs
    finish: dict[tuple, float] = {}
    free_at = [0.0] * schedule.num_ranks
    # Each action's inputs with their link delays, worked out once (a blocked action is tried
    # again on every sweep), and its cost and host time once per (kind, stage) where nothing finer
    # is given: the paper's p = 32, m = 256 rows play some 25,000 actions per candidate order.
    needs: list[list] = [[None] * len(program) for program in schedule.actions]
    stage_costs = {} if cost.per_action is None and cost.per_step_action is None else None
    stage_hosts = {} if cost.per_action_host_after is None and cost.per_step_action_host_after is None else None
    progress = True
    while progress:
        progress = False
        for r, program in enumerate(schedule.actions):
            mine = needs[r]
            while cursor[r] < len(program):
                k = cursor[r]
                a = program[k]
                deps = mine[k]
                if deps is None:
                    deps = mine[k] = [(d, cost.link if schedule.rank_of(d[1], d[2]) != r else 0.0)
                                      for d in dependencies(a, schedule, split)]
                ready = free_at[r]
                for d, delay in deps:
                    done = finish.get(d)
                    if done is None:
                        break  # an input not in yet: the rank waits for a later sweep
                    ready = max(ready, done + delay)
                else:  # every input in: play the action
                    step, j = divmod(a.microbatch, m)
                    kind, stage = a.kind, a.stage
                    took = _priced(cost.of, stage_costs, kind, stage, j, step)
                    host = _priced(cost.host, stage_hosts, kind, stage, j, step)
                    end = ready + took
                    finish[(kind, stage, a.microbatch)] = end
                    if kind in INPUT_GRAD_KINDS:
                        finish[("grad", stage, a.microbatch)] = end
                    free_at[r] = end + host
                    cursor[r] += 1
                    progress = True
                    yield r, stage, kind, j, ready, end, step
                    continue
                break


def _priced(lookup, kept: dict | None, kind: str, stage: int, j: int, step: int) -> float:
    """``lookup`` (CostModel.of or CostModel.host) for this action; ``kept``: its values per
    (kind, stage) where the cost model gives nothing finer, else None (looked up every time)."""
    if kept is None:
        return lookup(kind, stage, j, step)
    value = kept.get((kind, stage))
    if value is None:
        value = kept[(kind, stage)] = lookup(kind, stage, j, step)
    return value


def simulate(schedule: Schedule, cost: CostModel = UNIT_COSTS, microbatches_per_step: int | None = None) -> Timeline:
    """Theory timeline of a valid schedule; raises Deadlock if it would deadlock."""
    timeline, blocked = play(schedule, cost, microbatches_per_step)
    if blocked is not None:
        raise Deadlock(schedule, blocked)
    return timeline


def simulate_run(schedule: Schedule, cost: CostModel = UNIT_COSTS, steps: int = 1, overlap: bool = False) -> Timeline:
    """Several steps of ``schedule``, as the executor runs them.

    Overlapping (``overlap``, or an asynchronous schedule): the run's stream
    (engine/schedules/stream.py) played as one schedule, each stage's optimizer step in it. With
    barriers: each step starts on every device at once when the last device has done its
    optimizer step (U after each rank's own last action, as the executor's flush), so step
    k+1 is step k shifted by that time."""
    from pipelab.engine.schedules.stream import make_stream
    if overlap or schedule.is_async:
        stream = make_stream(schedule, steps)
        return simulate(stream.program, cost, schedule.num_microbatches)
    one = simulate(schedule, cost)
    events, memory, origin = [], {r: [] for r in range(schedule.num_ranks)}, 0.0
    for k in range(steps):
        step_events = [replace(e, start=e.start + origin, end=e.end + origin, step=k) for e in one.events]
        for r in range(schedule.num_ranks):
            mine = [e for e in step_events if e.rank == r]
            t = max((e.end + cost.host(e.kind, e.stage, e.microbatch) for e in mine), default=origin)
            for s in schedule.stages_of(r):
                u = cost.of(UPDATE, s, 0, k)
                step_events.append(Event(r, s, UPDATE, 0, t, t + u, k))
                t += u
        for r in memory:  # extended in place: a new list per step made many steps quadratic
            memory[r].extend((t + origin, b) for t, b in one.memory[r])
        events += step_events
        origin = max(e.end for e in step_events)
    events.sort(key=lambda e: (e.start, e.rank))
    return Timeline(schedule.num_ranks, events, "simulated", schedule.num_microbatches, schedule.stage_to_rank,
                    memory)


def activation_memory(timeline: Timeline, cost: CostModel) -> dict[int, list[tuple[float, int]]]:
    """Per rank, live activation bytes over time: a stage-micro-batch's bytes from F to the
    backward that frees them (B, or I after a split backward; see Timeline.peak_inflight),
    except what I leaves for W, which W frees."""
    changes: dict[int, list[tuple[float, int]]] = {r: [] for r in range(timeline.num_ranks)}
    for e in timeline.events:
        size = per_stage(cost.activation_bytes, e.stage)
        for_w = per_stage(cost.weight_grad_bytes, e.stage)
        if e.kind == FORWARD:
            changes[e.rank].append((e.start, size))
        elif e.kind == BACKWARD:
            changes[e.rank].append((e.end, -size))
        elif e.kind == BACKWARD_INPUT:
            changes[e.rank].append((e.end, for_w - size))
        elif e.kind == BACKWARD_WEIGHT:
            changes[e.rank].append((e.end, -for_w))
    memory = {}
    for r, deltas in changes.items():
        live, samples = 0, [(0.0, 0)]
        for t, d in sorted(deltas, key=lambda x: (x[0], x[1])):
            live += d
            samples.append((t, live))
        memory[r] = samples
    return memory
