"""Timeline: what happened (or would happen) on each device, and the metrics read off it.

The simulator and the executor both return a Timeline, so one chart, one bubble metric and
one Chrome trace serve theory and measurement alike. Times are seconds.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, FORWARD, KINDS, REDUCE_GRAD, UPDATE, Action
from pipelab.engine.theory.held_activations import peak_activations

SEND = "send"
RECV = "recv"
COMPUTE_KINDS = tuple(k for k in KINDS if k != REDUCE_GRAD)  # F, B, I, W, U keep a device busy
# R (the data-parallel all-reduce) is communication: it is in the step (span) but not busy time,
# so the bubble a run measures grows by the reduce it cannot hide. send/recv are neither.


@dataclass(frozen=True)
class Event:
    rank: int
    stage: int
    kind: str
    """F, B, I, W, U, or send / recv."""
    microbatch: int
    start: float
    """Start on this timeline's clock (device clock for measured runs)."""
    end: float
    step: int = 0
    """Training step the event belongs to."""
    wall_start: float | None = None
    """Wall-clock start, for measured runs (seconds since the run's common origin)."""
    wall_end: float | None = None
    peer: int | None = None
    """For send/recv: the other rank."""
    nbytes: int = 0
    """For send/recv: payload size."""
    host_after: float = 0.0
    """For measured compute actions on CPU: the executor's own CPU time after this action and
    before its rank turns to the next (posting its sends, bookkeeping, taking the next action's
    message where it is in already). The device clock moves
    on by it, but the device computes nothing then, so it is not busy time."""

    @property
    def duration(self) -> float:
        return self.end - self.start

    @classmethod
    def from_row(cls, rank: int, row: list, wall_origin: float) -> "Event":
        """The Event of a row the executor recorded while its rank ran (EVENT_ROW), its wall
        clock from ``wall_origin``. A row is a plain list: building a frozen dataclass after
        every action was the executor's own time on the device clock (bench/EXECUTOR.md), and
        its host_after is only known once the next action begins."""
        stage, kind, microbatch, start, end, step, wall_start, wall_end, peer, nbytes, host_after = row
        return cls(rank, stage, kind, microbatch, start, end, step, wall_start - wall_origin, wall_end - wall_origin,
                   peer, nbytes, host_after)


EVENT_ROW = ("stage", "kind", "microbatch", "start", "end", "step", "wall_start", "wall_end", "peer", "nbytes",
             "host_after")
"""An event while its rank runs: these Event fields in a list, in this order (Event.from_row)."""
ROW_STEP, ROW_HOST_AFTER = EVENT_ROW.index("step"), EVENT_ROW.index("host_after")


@dataclass
class Timeline:
    num_ranks: int
    events: list[Event]
    clock: str = "simulated"
    """Which clock start/end are on: "simulated", "device" or "wall"."""
    num_microbatches: int = 0
    stage_to_rank: tuple[int, ...] = ()
    memory: dict[int, list[tuple[float, int]]] = field(default_factory=dict)
    """Per rank, (time, live activation bytes) samples, on the same clock as the events."""

    # ---- views -------------------------------------------------------------------------
    def steps(self) -> list[int]:
        return sorted({e.step for e in self.events})

    def of_step(self, step: int) -> "Timeline":
        return Timeline(self.num_ranks, [e for e in self.events if e.step == step], self.clock,
                        self.num_microbatches, self.stage_to_rank, self.memory)

    def on_wall_clock(self) -> "Timeline":
        """The same events with start/end taken from the wall clock."""
        events = [Event(e.rank, e.stage, e.kind, e.microbatch, e.wall_start, e.wall_end, e.step,
                        e.wall_start, e.wall_end, e.peer, e.nbytes)
                  for e in self.events if e.wall_start is not None]
        return Timeline(self.num_ranks, events, "wall", self.num_microbatches, self.stage_to_rank, {})

    def compute_events(self) -> list[Event]:
        return [e for e in self.events if e.kind in COMPUTE_KINDS]

    def reduce_events(self) -> list[Event]:
        """The data-parallel all-reduces (R), one per stage and step."""
        return [e for e in self.events if e.kind == REDUCE_GRAD]

    # ---- metrics -----------------------------------------------------------------------
    def span(self) -> tuple[float, float]:
        """From the first compute action to the last compute action or all-reduce (R): a step
        with data parallelism ends when its gradients are reduced."""
        events = self.compute_events() + self.reduce_events()
        if not events:
            return 0.0, 0.0
        return min(e.start for e in events), max(e.end for e in events)

    def step_time(self) -> float:
        start, end = self.span()
        return end - start

    def exposed_reduce(self) -> dict[int, float]:
        """Per stage with an R: how long its all-reduce outlasts the step's compute, the part
        the pipeline's idle time after the stage's last backward did not hide (0 when it fits).
        The step's compute ends with its last F/B/I/W on any device (of any replica, where the
        timeline has every process's rows: the all-reduce waits for the slowest); for stage s of 1F1B that
        leaves about s x T_B after its own last backward (engine/theory/formulas.py
        exposed_reduce_s). One step's timeline: the caller cuts them (StepWindows.split)."""
        compute = [e.end for e in self.compute_events() if e.kind != UPDATE]
        if not compute:
            return {}
        end = max(compute)
        exposed: dict[int, float] = {}
        for e in self.reduce_events():  # with every process's rows, each stage's latest replica
            exposed[e.stage] = max(exposed.get(e.stage, 0.0), e.end - end)
        return exposed

    def busy_time(self) -> list[float]:
        busy = [0.0] * self.num_ranks
        for e in self.compute_events():
            busy[e.rank] += e.duration
        return busy

    def bubble_fractions(self) -> list[float]:
        """Per device: share of the step's span in which it computes nothing.

        The span runs from the first action on any device to the last, the window GPipe's
        (p-1)/(m+p-1) is stated for (arXiv 1811.06965, section 2.2).
        """
        total = self.step_time()
        if total <= 0:
            return [0.0] * self.num_ranks
        return [max(0.0, 1.0 - b / total) for b in self.busy_time()]

    def bubble_fraction(self) -> float:
        fractions = self.bubble_fractions()
        return sum(fractions) / len(fractions)

    # ---- overlapping steps -------------------------------------------------------------
    def step_starts(self) -> list[dict[int, float]]:
        """Per device, the start of its first compute action of each step: where the device
        turns to that step (a chart's step boundaries)."""
        starts: list[dict[int, float]] = [{} for _ in range(self.num_ranks)]
        for e in self.compute_events():
            mine = starts[e.rank]
            if e.step not in mine or e.start < mine[e.step]:
                mine[e.step] = e.start
        return starts

    def step_windows(self, steps: list[int]) -> list[list[tuple[float, float]]]:
        """Per device, its window of each of ``steps`` when steps overlap: from its first
        action of the step to its first action of the next step (to its last action's end,
        for the run's last step). No global moment separates overlapping steps, but each
        device turns from one step to the next at one point of its own program."""
        starts = self.step_starts()
        ends = [0.0] * self.num_ranks
        for e in self.compute_events():
            ends[e.rank] = max(ends[e.rank], e.end)
        windows = []
        for r in range(self.num_ranks):
            mine = starts[r]
            windows.append([(mine[k], mine.get(k + 1, ends[r])) for k in steps])
        return windows

    def overlapped_bubble_fractions(self, steps: list[int]) -> list[list[float]]:
        """Per device, for each of ``steps``, the share of its step window (step_windows) in
        which it computes nothing. Compute actions of any step count where they fall inside
        the window: PipeDream's next-step forwards fill this step's cool-down."""
        windows = self.step_windows(steps)
        busy = [[0.0] * len(steps) for _ in range(self.num_ranks)]
        for e in self.compute_events():
            for k, (start, end) in enumerate(windows[e.rank]):
                busy[e.rank][k] += max(0.0, min(end, e.end) - max(start, e.start))
        return [[max(0.0, 1.0 - b / (end - start)) if end > start else 0.0
                 for b, (start, end) in zip(busy[r], windows[r])] for r in range(self.num_ranks)]

    def steady_bubble_fractions(self, steps: list[int]) -> list[float]:
        """Per device, the median over ``steps`` of overlapped_bubble_fractions: the bubble of
        an overlapped run over its steady window (see steady_steps)."""
        return [statistics.median(per_step) for per_step in self.overlapped_bubble_fractions(steps)]

    def idle_within_own_span(self) -> list[float]:
        """Per device: idle time between its own first and last action.

        This is the bubble the zero-bubble paper's formulas count (arXiv 2401.10241,
        section 2): the ramp-up wait before a device's first forward is left out, since the
        next step's forwards can start early there. For GPipe and 1F1B it equals the full
        bubble of device 0.
        """
        return [max(0.0, span - busy) for span, busy in self._own_spans()]

    def _own_spans(self) -> list[tuple[float, float]]:
        """Per device: (its own span, first action's start to last action's end; its busy time),
        (0, 0) for a device without actions. One pass over the events, not one per device: a
        timeline of many devices or steps (pipelab simulate at p = 200) spent seconds filtering
        the same list again and again."""
        first: dict[int, float] = {}
        last: dict[int, float] = {}
        busy = [0.0] * self.num_ranks
        for e in self.compute_events():
            first[e.rank] = min(first.get(e.rank, e.start), e.start)
            last[e.rank] = max(last.get(e.rank, e.end), e.end)
            busy[e.rank] += e.duration
        return [(last[r] - first[r], busy[r]) if r in first else (0.0, 0.0) for r in range(self.num_ranks)]

    def steady_bubble_fraction(self) -> float:
        """Mean over devices of idle_within_own_span / own span."""
        fractions = [max(0.0, span - busy) / span if span > 0 else 0.0 for span, busy in self._own_spans()]
        return sum(fractions) / len(fractions)

    def peak_inflight(self) -> list[int]:
        """Per device: most stage-micro-batches whose activations are alive at once.

        A stage-micro-batch is alive from its F until the backward that frees its
        activations: B, or I when the backward is split. W still holds the linear layers'
        inputs and output gradients, a smaller share (arXiv 2401.10241, Table 1) that the
        executor measures in bytes rather than counts here.
        """
        deltas: dict[int, list[tuple[float, int]]] = {r: [] for r in range(self.num_ranks)}
        for e in self.events:
            if e.kind == FORWARD:
                deltas[e.rank].append((e.start, +1))
            elif e.kind in (BACKWARD, BACKWARD_INPUT):
                deltas[e.rank].append((e.end, -1))
        peaks = []
        for r in range(self.num_ranks):
            alive = peak = 0
            for _, d in sorted(deltas[r], key=lambda x: (x[0], x[1])):
                alive += d
                peak = max(peak, alive)
            peaks.append(peak)
        return peaks

    def peak_activations(self) -> list[float]:
        """Per device: most activations held at once, in full stages for one micro-batch
        (a chunk counts 1/v), from F until the backward is complete (B, or W after a split
        one), along the order the device ran its actions (engine/theory/held_activations.py)."""
        # Fewer stages than devices: replicated stages, one stage a worker.
        chunks = max(1, len(self.stage_to_rank) // self.num_ranks) if self.stage_to_rank else 1
        ordered = sorted(self.compute_events(), key=lambda e: (e.start, e.end))
        programs = [[Action(e.stage, e.kind, e.microbatch) for e in ordered if e.rank == r]
                    for r in range(self.num_ranks)]
        return peak_activations(programs, chunks)

    def weight_versions(self) -> list[int]:
        """Per device: most weight versions alive at once (PipeDream's stash, arXiv 1806.03377).

        A stage's version k is made by its k-th update U; a forward pins the current version
        until its backward; the current version is always alive.
        """
        peaks = [1] * self.num_ranks
        by_stage: dict[int, list[Event]] = {}
        for e in self.events:
            if e.kind in (FORWARD, BACKWARD, BACKWARD_INPUT, UPDATE):
                by_stage.setdefault(e.stage, []).append(e)
        per_rank_stage_peak: dict[int, int] = {}
        for events in by_stage.values():
            version, pinned, peak = 0, {}, 1
            for e in sorted(events, key=lambda e: (e.start, e.end)):
                if e.kind == FORWARD:
                    pinned[(e.step, e.microbatch)] = version
                elif e.kind in (BACKWARD, BACKWARD_INPUT):
                    pinned.pop((e.step, e.microbatch), None)
                else:  # UPDATE
                    version += 1
                peak = max(peak, len(set(pinned.values()) | {version}))
            rank = events[0].rank
            per_rank_stage_peak[rank] = max(per_rank_stage_peak.get(rank, 0), peak)
        for rank, peak in per_rank_stage_peak.items():
            peaks[rank] = peak
        return peaks


    # ---- export ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"clock": self.clock, "num_ranks": self.num_ranks,
                "num_microbatches": self.num_microbatches, "stage_to_rank": list(self.stage_to_rank),
                "events": [asdict(e) for e in self.events],
                "memory": {str(r): samples for r, samples in self.memory.items()}}

    def to_chrome_trace(self) -> dict:
        """Chrome trace events (load in Perfetto or chrome://tracing): one track per device."""
        trace = [{"name": "process_name", "ph": "M", "pid": 0, "tid": r, "args": {"name": f"device {r}"}}
                 for r in range(self.num_ranks)]
        trace += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": r, "args": {"name": f"device {r}"}}
                  for r in range(self.num_ranks)]
        for e in self.events:
            label = f"{e.stage}{e.kind}{e.microbatch}" if e.kind in KINDS else f"{e.kind} {e.stage}:{e.microbatch}"
            args = {"stage": e.stage, "microbatch": e.microbatch, "step": e.step, "clock": self.clock}
            if e.host_after:
                args["host_after_us"] = e.host_after * 1e6  # the gap after it that is the engine's own work
            trace.append({"name": label, "cat": e.kind, "ph": "X", "pid": 0, "tid": e.rank,
                          "ts": e.start * 1e6, "dur": max(e.duration, 0.0) * 1e6, "args": args})
        return {"traceEvents": trace, "displayTimeUnit": "ms"}

    def write_chrome_trace(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_chrome_trace(), f)


def steady_steps(steps: int) -> list[int]:
    """The steps an overlapped run's bubble is measured over, the same for the device clock
    and the simulator: after the first (the pipeline fills: nothing of an earlier step is
    there to overlap it) and before the last (the pipeline drains: nothing of a later step
    fills it). With two steps the second is measured, drain included; with one, that one."""
    if steps >= 3:
        return list(range(1, steps - 1))
    return [steps - 1]


def format_grid(timeline: Timeline, slot: float | None = None) -> str:
    """Rows = devices, columns = time slots of length ``slot`` (the shortest action by
    default): the picture in the papers' figures, e.g. for unit costs ``1F0 1B0 ...``."""
    events = timeline.compute_events() + timeline.reduce_events()  # R too: it is in the step
    if not events:
        return "(empty timeline)"
    slot = slot or min(e.duration for e in events if e.duration > 0)
    origin, end = timeline.span()
    columns = int(round((end - origin) / slot))
    width = max(len(f"{e.stage}{e.kind}{e.microbatch}") for e in events) + 1
    by_rank: dict[int, list[Event]] = {r: [] for r in range(timeline.num_ranks)}
    for e in events:  # grouped once: a pass over every event per device was quadratic at large p
        by_rank[e.rank].append(e)
    lines = []
    for r in range(timeline.num_ranks):
        row = [" " * (width - 1) + "."] * columns
        for e in by_rank[r]:
            first, last = int(round((e.start - origin) / slot)), int(round((e.end - origin) / slot))
            for c in range(first, min(last, columns)):
                row[c] = f"{e.stage}{e.kind}{e.microbatch}".rjust(width)
        lines.append(f"device {r}:" + "".join(row))
    return "\n".join(lines)
