"""A lesson's run settings (Knobs): the defaults of its run form, and the server's check of them.

Plain data, no Streamlit and no torch, so the app, the CLI and the tests can all read it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelab.engine.config import MODELS
from pipelab.engine.schedules import SCHEDULE_NAMES, chunked_schedules, chunks_for

if TYPE_CHECKING:
    from pipelab.engine.config import RunConfig

SCHEDULES = SCHEDULE_NAMES
"""Every registered schedule (engine/schedules), a live view: the playground offers them all,
and a schedule registered later appears without an edit here. A lesson names its own subset."""


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """Defaults for a lesson's run form; ``check`` applies the server's limits (pipelab.engine.config)."""

    schedule: str = "gpipe"
    """A registered schedule's name (``pipelab list``)."""
    stages: int = 4
    """Pipeline ranks p (one process each)."""
    microbatches: int = 8
    """Micro-batches m per step; the mini-batch is microbatches x microbatch_size rows."""
    chunks: int = 1
    """Model chunks v per rank, for the schedules that take them (their ChunkRule: any v >= 1
    for interleaved, exactly 2 for a V, where 1 stands for that 2); else 1."""
    model: str = "mlp"
    """One of pipelab.engine.config.MODELS: "mlp" (Linear+GELU blocks) or "gpt" (small Transformer blocks)."""
    # Sized so that each action's compute outweighs the engine's fixed costs per action and
    # per message (its own work between actions, the copy into the link): at width 256 and
    # 16 rows those hid what the schedules differ in. Four layers per stage also keep stage 0
    # (its first layer computes no input gradient) close to the others. Every lesson's claim
    # shows at this size (tests/test_lesson_claims.py); a larger one lengthens the student's
    # wait for each click.
    layers: int = 16
    """Depth of the whole model, split over stages x chunks: Linear layers for mlp (the head
    included), transformer blocks for gpt (the embedding and the head come on top)."""
    hidden: int = 512
    """Width of every block."""
    microbatch_size: int = 64
    """Rows (samples) per micro-batch."""
    steps: int = 5
    """Training steps per run: the first two warm up (pipelab.engine.results.windows.WARM_UP_STEPS), the
    figures are medians over the other three."""
    recompute: bool = False
    """Re-materialization (GPipe): keep only stage inputs, redo the forward inside backward."""
    overlap_steps: bool = False
    """No flush or barrier between steps: each stage updates and starts the next step on its
    own (PipeDream and 2BW always run this way); the bubble counts the steady steps."""
    data_parallel: int = 1
    """Pipelines side by side d (d x stages processes); ``microbatches`` is each one's m, so the
    global batch is d x m micro-batches (the PP x DP lesson sets m = its global batch / d)."""
    reduce_at: str = "backward"
    """Where each stage's all-reduce goes with d > 1: "backward" (after its own last backward)
    or "flush" (pipelab.engine.config.REDUCE_AT)."""
    replicas: str = ""
    """PipeDream's replicated stages as the student types them, a worker count per stage
    ("2,1,1"; the paper writes "2-1-1"); blank: one worker per stage. RunConfig reads the text
    and check_values names a wrong one (pipelab.engine.schedules.replication)."""

    def to_run_config(self, **extra) -> "RunConfig":
        """The engine's RunConfig for these knobs; chunks only for schedules that take them."""
        from pipelab.engine.config import RunConfig
        chunks = self._run_chunks()
        fields = dict(schedule=self.schedule, stages=self.stages, microbatches=self.microbatches, chunks=chunks,
                      model=self.model, layers=self.layers, hidden=self.hidden,
                      microbatch_size=self.microbatch_size, steps=self.steps, recompute=self.recompute,
                      overlap_steps=self.overlap_steps, data_parallel=self.data_parallel,
                      reduce_at=self.reduce_at, replicas=self.replicas or None)
        return RunConfig(**{**fields, **extra})

    def _run_chunks(self) -> int | None:
        """The run's chunks: None (the schedule's own) for one that takes no chunk count; the
        knob's unchunked 1 is what the schedule runs with for 1 (chunks_for: a V's 2); any other
        value goes on as asked, for the build to check."""
        if self.schedule not in chunked_schedules():
            return None  # its own count; check() names an unknown schedule
        return chunks_for(self.schedule, 1) if self.chunks == 1 else self.chunks

    def check(self, limits=None) -> "Knobs":
        """Return self if the engine accepts these knobs under ``limits`` (default caps), else
        raise ScheduleError (a ValueError) with the engine's one-line reason, a coded Message
        (engine/errors.py) a page says in its language: the engine's RunConfig is the one
        place inputs are validated, for CLI and UI alike."""
        from pipelab.engine.actions import ScheduleError
        from pipelab.engine.config import Limits
        from pipelab.engine.errors import message_of
        if self.schedule not in SCHEDULES:
            raise ScheduleError.of("not_a_schedule", got=repr(self.schedule), valid=tuple(SCHEDULES))
        if self.schedule not in chunked_schedules() and self.chunks != 1:
            raise ScheduleError.of("chunks_unused", chunks=self.chunks, schedules=chunked_schedules())
        try:
            self.to_run_config().check_values(limits or Limits())
        except ScheduleError as err:
            raise ScheduleError(message_of(err)) from None
        return self

    def with_overrides(self, overrides: dict) -> "Knobs":
        """A copy with some knobs changed; unknown knob names raise KeyError listing the valid ones."""
        unknown = sorted(set(overrides) - set(KNOB_NAMES))
        if unknown:
            raise KeyError(f"unknown knob(s) {', '.join(unknown)}; valid knobs: {', '.join(KNOB_NAMES)}")
        return dataclasses.replace(self, **overrides)


KNOB_NAMES = tuple(f.name for f in dataclasses.fields(Knobs))


__all__ = ["KNOB_NAMES", "MODELS", "SCHEDULES", "Knobs"]
