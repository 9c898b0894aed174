"""The lesson catalog: what each page teaches, its claim, and the runs it offers.

Plain data, no Streamlit and no torch, so the app, the CLI and the tests can all read it.
Each lesson's prose lives in a markdown file next to this module (``Lesson.text()``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipelab.engine.config import MODELS
from pipelab.engine.schedules import SCHEDULE_NAMES, chunked_schedules, get_schedule_info

if TYPE_CHECKING:
    from pipelab.engine.config import RunConfig

_HERE = Path(__file__).resolve().parent

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
    """Training steps per run: the first two warm up (pipelab.engine.results.result.WARM_UP_STEPS), the
    figures are medians over the other three."""
    recompute: bool = False
    """Re-materialization (GPipe): keep only stage inputs, redo the forward inside backward."""
    overlap_steps: bool = False
    """No flush or barrier between steps: each stage updates and starts the next step on its
    own (PipeDream and 2BW always run this way); the bubble counts the steady steps."""

    def to_run_config(self, **extra) -> "RunConfig":
        """The engine's RunConfig for these knobs; chunks only for schedules that take them."""
        from pipelab.engine.config import RunConfig
        chunks = self._run_chunks()
        fields = dict(schedule=self.schedule, stages=self.stages, microbatches=self.microbatches, chunks=chunks,
                      model=self.model, layers=self.layers, hidden=self.hidden,
                      microbatch_size=self.microbatch_size, steps=self.steps, recompute=self.recompute,
                      overlap_steps=self.overlap_steps)
        return RunConfig(**{**fields, **extra})

    def _run_chunks(self) -> int | None:
        """The run's chunks: None (the schedule's own) for one that takes no chunk count; the
        knob's unchunked 1 means a V's 2; any other value goes on for the build to check."""
        if self.schedule not in SCHEDULES:
            return None  # check() names the unknown schedule
        rule = get_schedule_info(self.schedule).chunks
        if not rule.takes_chunks:
            return None
        return rule.resolve(self.chunks) if self.chunks == 1 else self.chunks

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


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """A second run shown beside the lesson's own, e.g. 1F1B next to GPipe."""

    label: str
    """Legend text, e.g. "GPipe (same m)"."""
    overrides: dict
    """Knob name -> value applied on top of the lesson's defaults (or the student's form)."""


@dataclass(frozen=True, kw_only=True)
class Lesson:
    slug: str
    """URL-safe id, e.g. "gpipe"."""
    number: int
    """Position in the course, 1-based."""
    title: str
    markdown: str
    """File name in lessons/, e.g. "02_gpipe.md"."""
    claim: str
    """The lesson's main checkable claim in one sentence."""
    defaults: Knobs
    schedules: Sequence[str]
    """Schedules the student may pick on this page (registered names); must include
    defaults.schedule. SCHEDULES offers every registered one."""
    comparisons: tuple[Comparison, ...] = ()
    sweep: dict | None = None
    """{"knob": name, "values": [...]}: run the lesson once per value and plot against theory."""
    editable: tuple[str, ...] = ("stages", "microbatches", "model", "layers", "hidden")
    """Knobs shown on the run form; the rest stay at their defaults."""
    claim_compares: bool = False
    """The claim is a comparison (interleaved against 1F1B, say): Run runs the lesson's
    comparisons with it, side by side (engine/runtime/paired.py), and judges them; one run alone
    cannot test it."""
    example_schedule: str = ""
    """Text prefilled in the custom-schedule box (playground only), after a comment line
    that says what it is in the page's language (``playground.example_comment``)."""

    def __post_init__(self) -> None:
        # Catch typos in the catalog at import time rather than in a student's browser.
        for name in self.schedules:
            get_schedule_info(name)  # ScheduleError listing the registered names
        for name in self.editable:
            if name not in KNOB_NAMES:
                raise ValueError(f"lesson {self.slug}: editable knob {name!r} unknown; valid: {', '.join(KNOB_NAMES)}")
        for comparison in self.comparisons:
            self.defaults.with_overrides(comparison.overrides).check()
        if self.sweep is not None:
            for value in self.sweep["values"]:
                self.defaults.with_overrides({self.sweep["knob"]: value}).check()
        self.defaults.check()

    def text(self) -> str:
        """The lesson's markdown, read from the file next to this module."""
        return (_HERE / self.markdown).read_text(encoding="utf-8")

    def comparison_knobs(self, base: Knobs | None = None) -> tuple[tuple[str, Knobs], ...]:
        """(label, knobs) for each comparison, applied on ``base`` (the student's form) or the defaults."""
        base = base or self.defaults
        return tuple((c.label, base.with_overrides(c.overrides)) for c in self.comparisons)

    def sweep_knobs(self, base: Knobs | None = None) -> tuple[tuple[object, Knobs], ...]:
        """(value, knobs) for each point of the sweep; empty if the lesson has none."""
        if self.sweep is None:
            return ()
        base = base or self.defaults
        return tuple((v, base.with_overrides({self.sweep["knob"]: v})) for v in self.sweep["values"])


_PLAYGROUND_EXAMPLE = """\
rank 0: 0F0 0F1 0B0 0B1
rank 1: 1F0 1B0 1F1 1B1
"""

LESSONS: tuple[Lesson, ...] = (
    Lesson(
        slug="naive", number=1, title="Naive model parallelism", markdown="01_naive.md",
        # "Computes forward or backward work": the optimizer update after the last backward
        # overlaps the next device's backward, and the lesson's question counts F and B only.
        claim="With one batch passing through p stages, only one device computes forward or backward work "
              "at a time, so each device is busy about 1/p of the step.",
        # The same 8 micro-batches in both runs, one at a time (naive) or pipelined (GPipe):
        # the same actions in another order, so the step times differ by the schedule alone.
        # (One 512-row piece against 8 pieces would also measure how a CPU's matmuls slow
        # down on fewer rows.)
        defaults=Knobs(schedule="naive"),
        schedules=("naive", "gpipe"),
        comparisons=(Comparison(label="GPipe, the same 8 micro-batches pipelined",
                                overrides={"schedule": "gpipe"}),),
        editable=("stages", "microbatches", "microbatch_size", "model", "layers", "hidden"),
    ),
    Lesson(
        slug="gpipe", number=2, title="GPipe: micro-batches and a flush", markdown="02_gpipe.md",
        claim="GPipe's bubble fraction is (K-1)/(M+K-1), so it shrinks as micro-batches M grow "
              "past the number of stages K.",
        # Two stages: on a host of two cores or more each rank has a core, so the stages'
        # costs are not bent by sharing one (on fewer cores than ranks that alone lifts the
        # bubble past the formula's).
        defaults=Knobs(schedule="gpipe", stages=2),
        schedules=("gpipe", "naive"),
        comparisons=(Comparison(label="GPipe with re-materialization", overrides={"recompute": True}),),
        sweep={"knob": "microbatches", "values": [4, 8, 16]},
        editable=("stages", "microbatches", "model", "layers", "hidden", "recompute"),
    ),
    Lesson(
        slug="pipedream", number=3, title="PipeDream: asynchronous 1F1B and weight stashing",
        markdown="03_pipedream.md",
        claim="Asynchronous PipeDream keeps every stage busy in steady state, but stage r must stash "
              "up to p-r weight versions; 2BW needs only two.",
        defaults=Knobs(schedule="pipedream", steps=6),
        schedules=("pipedream", "pipedream-2bw", "1f1b"),
        comparisons=(
            Comparison(label="PipeDream-2BW (two weight versions)", overrides={"schedule": "pipedream-2bw"}),
            Comparison(label="1F1B with a flush (synchronous)", overrides={"schedule": "1f1b"}),
        ),
        editable=("stages", "microbatches", "model", "layers", "hidden", "steps"),
    ),
    Lesson(
        slug="1f1b", number=4, title="1F1B (PipeDream-Flush): same bubble, less memory",
        markdown="04_1f1b.md",
        claim="1F1B has GPipe's bubble, but rank r holds at most p-r micro-batches of activations "
              "instead of M, so its peak memory stays flat as M grows.",
        defaults=Knobs(schedule="1f1b"),
        schedules=("1f1b", "gpipe"),
        comparisons=(Comparison(label="GPipe", overrides={"schedule": "gpipe"}),),
        sweep={"knob": "microbatches", "values": [4, 8, 16]},
        editable=("stages", "microbatches", "microbatch_size", "model", "layers", "hidden"),
    ),
    Lesson(
        slug="interleaved", number=5, title="Interleaved 1F1B (Megatron-LM)", markdown="05_interleaved.md",
        # One quantity per half, the one the page measures: the bubble in both forms (the paper's
        # over the ideal time, the page's share of the step), and the messages as the Compare
        # table's ratio, (vp-1)/(p-1), which is "about v" only for large p.
        claim="With v chunks per device Megatron's bubble over the ideal time, (p-1)/(vm), is divided by v "
              "(as a share of the step, (p-1)/(vm+p-1), by a little less), while each micro-batch's messages "
              "grow from 2(p-1) to 2(vp-1): (vp-1)/(p-1) times as many, about v.",
        defaults=Knobs(schedule="interleaved", chunks=2),
        schedules=("interleaved", "1f1b"),
        comparisons=(Comparison(label="1F1B (v = 1)", overrides={"schedule": "1f1b", "chunks": 1}),),
        editable=("stages", "microbatches", "chunks", "model", "layers", "hidden"),
        claim_compares=True,
    ),
    Lesson(
        slug="zero-bubble", number=6, title="Zero bubble: splitting the backward", markdown="06_zero_bubble.md",
        claim="Splitting the backward into input-gradient (I) and weight-gradient (W) parts lets ZB-H1 cut "
              "1F1B's bubble time to about a third at the same memory, and lets ZB-H2 / ZB-V work without a "
              "gap inside each device's span, so only the pipeline's two ends stay idle in a synchronous step.",
        # Micro-batches of 128 rows: zero bubble's gaps are what is left after each action's
        # fixed costs (the engine's own time, a step's cold first forward), and with steps
        # overlapping ZB-H2 has no slack to hide them (arXiv 2401.10241, section 4); twice
        # the work per action halves their share (bench/overlap.py measures the pair here).
        defaults=Knobs(schedule="zb-h1", microbatch_size=128),
        schedules=("zb-h1", "zb-h2", "zb-v", "dualpipev", "zb-1p", "zb-2p", "v-half", "v-min", "1f1b"),
        comparisons=(
            Comparison(label="1F1B", overrides={"schedule": "1f1b"}),
            Comparison(label="ZB-H2", overrides={"schedule": "zb-h2"}),
            Comparison(label="ZB-V (2 chunks per rank)", overrides={"schedule": "zb-v", "chunks": 2}),
        ),
        editable=("stages", "microbatches", "microbatch_size", "model", "layers", "hidden", "overlap_steps"),
        claim_compares=True,
    ),
    Lesson(
        slug="playground", number=7, title="Playground: write your own schedule", markdown="07_playground.md",
        claim="Any schedule that passes validation runs on real processes, and the simulator "
              "predicts its timeline from the same action lists.",
        defaults=Knobs(),
        schedules=SCHEDULES,
        editable=KNOB_NAMES,
        example_schedule=_PLAYGROUND_EXAMPLE,
    ),
)


def get_lesson(slug: str) -> Lesson:
    """The lesson with this slug; an unknown slug raises KeyError listing the valid ones."""
    for lesson in LESSONS:
        if lesson.slug == slug:
            return lesson
    raise KeyError(f"unknown lesson {slug!r}; valid lessons: {', '.join(each.slug for each in LESSONS)}")


__all__ = ["Comparison", "KNOB_NAMES", "LESSONS", "Knobs", "Lesson", "MODELS", "SCHEDULES",
           "get_lesson"]
