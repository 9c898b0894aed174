"""How a run's steps are windowed into its figures: one place for a measured run and a simulation.

Two ways to cut a timeline into steps (docs/measuring.md, "Which window a bubble counts"):

- **with a barrier between steps**, each step is its own window: the schedule's F/B/I/W, the
  update after the flush left out (the formulas describe that window), and a figure is the
  median over the windowed steps;
- **overlapping steps** (one stream, PipeDream, 2BW, post-validation) have no flush: each
  device's step runs from its first action of a step to its first of the next, over the steady
  steps (``steady_steps``: after the pipeline fills, before it drains).

``build_result`` (engine/results/result.py) measures a run through it, and ``pipelab simulate``
(engine/cli/main.py) plays its schedule through the same object, so the command line and a run
count a bubble and a step the same way.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from pipelab.engine.actions import UPDATE
from pipelab.engine.results.timeline import Event, Timeline, steady_steps
from pipelab.engine.schedules.base import Schedule

WARM_UP_STEPS = 2
"""Steps left out of a run's figures. The first pays one-off costs (allocations, the
optimizer's state, cold caches); on these hosts the second still ran 15-60 % slower than the
steps after it (lesson 2's GPipe at p = 2, m = 8: device-clock bubble 0.18-0.24 in step 1,
0.14-0.15 from step 2 on), and a median over steps 1 and 2 carried half of that into the
figure, so one click's verdict flipped between runs."""


def measured_steps(steps: int) -> list[int]:
    """The steps a run's figures are medians over: those after the warm-up (WARM_UP_STEPS,
    fewer in a run too short to keep one after them); the only step if there is one."""
    if steps == 1:
        return [0]
    return list(range(min(WARM_UP_STEPS, steps - 1), steps))


@dataclass(frozen=True)
class StepFigures:
    """A timeline's figures over its windowed steps, on one clock."""
    bubble_per_device: tuple[float, ...]
    """Per device, its median idle share of a windowed step."""
    step_times: tuple[float, ...]
    """Each windowed step's time, in order."""
    steady: float
    """Idle share inside each device's own span (first to last action), mean over the steps."""
    bubbles_per_step: tuple[tuple[float, ...], ...] | None
    """Per windowed step, each device's idle share; None where steps overlap (a stream's steps share their ends)."""
    steady_per_step: tuple[float, ...] | None

    @property
    def bubble(self) -> float:
        """Mean over devices."""
        return statistics.fmean(self.bubble_per_device)

    @property
    def step_time(self) -> float:
        """Median over the windowed steps."""
        return statistics.median(self.step_times)


@dataclass(frozen=True)
class StepWindows:
    """Which steps a timeline's figures cover, and how each is cut out of it."""
    overlapped: bool
    steps: tuple[int, ...]

    @classmethod
    def of_run(cls, total_steps: int, overlapped: bool) -> StepWindows:
        """A run's: the steady steps of a stream, or the steps after the warm-up."""
        return cls(overlapped, tuple(steady_steps(total_steps) if overlapped else measured_steps(total_steps)))

    def window(self, timeline: Timeline, schedule: Schedule) -> Timeline:
        """The part of ``timeline`` a bubble counts: a synchronous schedule's steps without the
        optimizer step after the flush (the formulas describe the F/B/I/W window). Where steps
        overlap, and for asynchronous schedules, each stage's update is part of the stream and stays."""
        if schedule.is_async or self.overlapped:
            return timeline
        return Timeline(timeline.num_ranks, [e for e in timeline.events if e.kind != UPDATE], timeline.clock,
                        timeline.num_microbatches, timeline.stage_to_rank, timeline.memory)

    def split(self, window: Timeline) -> list[Timeline]:
        """Each windowed step's own timeline, in one pass over the events (a long run has many)."""
        grouped: dict[int, list[Event]] = {k: [] for k in self.steps}
        for e in window.events:
            if e.step in grouped:
                grouped[e.step].append(e)
        return [Timeline(window.num_ranks, grouped[k], window.clock, window.num_microbatches,
                         window.stage_to_rank, window.memory) for k in self.steps]

    def figures(self, window: Timeline, each: list[Timeline] | None = None) -> StepFigures:
        """The bubble and step figures of ``window`` (``self.window(...)``, on any clock);
        ``each``: its steps already split (``self.split(window)``), where the caller has them."""
        if self.overlapped:
            steps = list(self.steps)
            per_device = window.steady_bubble_fractions(steps)
            return StepFigures(tuple(per_device), tuple(overlapped_step_times(window, steps)),
                               statistics.fmean(per_device), None, None)
        each = self.split(window) if each is None else each
        bubbles = [tuple(t.bubble_fractions()) for t in each]
        steady = [t.steady_bubble_fraction() for t in each]
        return StepFigures(tuple(statistics.median(col) for col in zip(*bubbles)), tuple(t.step_time() for t in each),
                           statistics.fmean(steady), tuple(bubbles), tuple(steady))


def overlapped_step_times(timeline: Timeline, steps: list[int]) -> list[float]:
    """Each step's time when steps overlap: its window (Timeline.step_windows) averaged over
    the devices; in a steady run every device turns once per step, so they agree."""
    windows = timeline.step_windows(steps)
    return [statistics.fmean(end - start for start, end in (w[k] for w in windows)) for k in range(len(steps))]
