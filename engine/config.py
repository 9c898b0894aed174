"""One place that says what a run is and which values are allowed, for CLI, Python and UI.

``RunConfig.check_values()`` turns every impossible setting into a one-line ``ConfigError`` before any
process starts; ``Limits`` are the classroom server's caps, set by the instructor.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict, dataclass, fields, replace

from pipelab.engine.actions import ScheduleError
from pipelab.engine.errors import Message, message_of
from pipelab.engine.schedules.registry import CUSTOM
from pipelab.engine.torch_bridge.settings import torch_schedule_refusal, torch_settings_refusal


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity (what a container's cpuset allows),
    else every core the OS reports."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1

DEVICES = ("cpu", "cuda", "auto")
TRANSPORTS = ("auto", "torch")
RUNTIMES = ("engine", "torch")
"""Who runs the schedule: our executor (engine/runtime/launch.py), or torch.distributed.pipelining's
_PipelineScheduleRuntime on the same layers (engine/torch_bridge/launch.py)."""
MODELS = ("mlp", "gpt", "wide-first")
"""Built-in models, simplest first (the lessons' pickers list them in this order)."""
SEQUENTIAL = "sequential"  # a user's nn.Sequential, from the Python API only (pipelab.engine.model.parts.UserModel)
PARTITIONS = ("uniform", "params", "time")
REDUCE_AT = ("backward", "flush")
"""Where each stage's data-parallel all-reduce (R) goes: engine/schedules/data_parallel.py."""


class ConfigError(ScheduleError):
    """A run setting is impossible or over a limit; the message names the constraint."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Caps a server enforces (instructors set them with PIPELAB_MAX_* environment variables)."""

    max_stages: int = 8
    """Most pipeline devices (processes) one run may start."""
    max_microbatches: int = 64
    """Most micro-batches per step."""
    max_layers: int = 32
    """Most model layers (blocks)."""
    max_hidden: int = 1024
    """Widest hidden size."""
    max_microbatch_size: int = 128
    """Most samples per micro-batch."""
    max_steps: int = 20
    """Most training steps per run."""
    max_seconds: float = 120.0
    """Wall-clock time limit of one run; it is stopped after this."""

    @classmethod
    def from_env(cls, environ: dict | None = None) -> "Limits":
        environ = os.environ if environ is None else environ
        values = {}
        for f in fields(cls):
            key = "PIPELAB_" + f.name.upper()
            if key in environ:
                values[f.name] = type(f.default)(environ[key])
        return cls(**values)


NO_LIMITS = Limits(max_stages=1 << 20, max_microbatches=1 << 20, max_layers=1 << 20, max_hidden=1 << 20,
                   max_microbatch_size=1 << 20, max_steps=1 << 20, max_seconds=24 * 3600.0)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything that defines one run of the engine."""

    schedule: str = "1f1b"
    """Registered schedule name, or CUSTOM ("custom") with ``custom_schedule`` text."""
    stages: int = 4
    """Pipeline devices p (one process each)."""
    microbatches: int = 8
    """Micro-batches m per step, per replica: the number the user fixes. With data parallelism
    the global batch is derived from it, ``global_microbatches`` = d x m micro-batches of
    ``microbatch_size`` rows; ``for_global_batch`` goes the other way, as the PP x DP lesson
    does (it fixes the global batch and splits it over the replicas)."""
    data_parallel: int = 1
    """Data-parallel degree d: pipelines side by side, d x p processes
    (engine/schedules/data_parallel.py RankLayout). Replica k trains micro-batches k*m .. k*m+m-1
    of the global batch; each stage's gradients are averaged over its d replicas (the R action)
    before the update."""
    reduce_at: str = "backward"
    """Where each stage's all-reduce goes: "backward", right after the stage's own last backward
    (Megatron-LM, torch); "flush", after every stage has finished its backward (DeepSpeed)."""
    replicas: tuple[int, ...] | None = None
    """PipeDream's replicated stages (arXiv 1806.03377, section 3.2): stage s on replicas[s]
    workers, ``sum(replicas)`` processes, micro-batch j of a stage on its (j mod replicas[s])-th
    worker; the paper writes (2, 1, 1) as "2-1-1", and a form or the command line may give that
    text. ``microbatches`` is then the whole step's. None: one worker per stage
    (engine/schedules/replication.py)."""
    chunks: int | None = None
    """Model chunks per device v; None takes the schedule's default (2 for interleaved/zb-v)."""
    model: str = "gpt"
    """"gpt" (a small decoder-only language model), "mlp" (Linear+GELU blocks) or "wide-first"
    (the mlp whose first block is a 4x-wide feed-forward block, as heavy as eight others: the
    model of PipeDream's replicated stage, engine/model/builtin.py WideBlock)."""
    layers: int = 4
    """Transformer blocks (gpt, plus the embedding and the head) or Linear layers (mlp, the head included)."""
    hidden: int = 128
    """Model width."""
    heads: int = 4
    """Attention heads (gpt)."""
    seq_len: int = 64
    """Tokens per sample (gpt)."""
    microbatch_size: int = 8
    """Samples per micro-batch."""
    steps: int = 3
    """Training steps; the first two (WARM_UP_STEPS, engine/results/windows.py) are warm-ups,
    left out of every figure's median (fewer in a run too short to keep a step after them)."""
    overlap_steps: bool = False
    """Run the steps as one stream, without a flush or barrier between them: each stage
    applies its optimizer step as soon as its own backward work of the step is done and
    turns to the next step (engine/schedules/stream.py). PipeDream and 2BW always run this way. The
    bubble is then measured over the steady steps (pipelab.engine.results.timeline.steady_steps)."""
    clip_grad_norm: float | None = None
    """Clip each step's gradient to this global norm (over all stages, as
    torch.nn.utils.clip_grad_norm_) and skip a step whose gradients are not finite; inf
    only skips. With barriers the norm is all-reduced before the update; with overlapping
    steps each stage updates optimistically and rolls back when the verdict comes
    (post-validation, engine/runtime/post_validation.py). Synchronous schedules only."""
    inject_nonfinite: int | None = None
    """Test hook: make one gradient of the last stage NaN at this step (0-based), to show the
    step skipped the same way with and without overlapping steps. Needs clip_grad_norm."""
    recompute: bool = False
    """Re-materialization (GPipe, arXiv 1811.06965): keep only stage inputs, redo F inside B."""
    check: bool = False
    """Compare with a single-process run of the same steps (the same clipping and skipping):
    step 0's gradients, every step's loss, and the weights after the last step."""
    stash: bool = True
    """PipeDream weight stashing; False shows the wrong-gradient variant."""
    stage_layers: tuple[int, ...] | None = None
    """Layers per stage, in order, given instead of ``partition``'s split: what a plan chose
    (``pipelab plan`` prints it; PipeDream's planner cuts the model where it likes). Each stage
    at least one layer, the counts summing to the model's layers (gpt: embedding and head included)."""
    partition: str = "params"
    """How layers become stages: uniform (by count), params (balance parameter counts), or time
    (profiled). params splits a gpt's blocks evenly with the embedding on the first stage and
    the head on the last, as Megatron-LM places them; by count those two took a block's place.
    Layers of equal size (the mlp) split exactly as uniform."""
    lr: float = 0.01
    """SGD learning rate."""
    seed: int = 0
    device: str = "cpu"
    """cpu (gloo), cuda (NCCL, one GPU per rank; with fewer GPUs than ranks, ranks share them
    through gloo and host memory: engine/device.py) or auto (cuda when a GPU per rank is visible)."""
    transport: str = "auto"
    """How stage-boundary messages move. auto: shared memory between CPU ranks that
    pipelab.engine.runtime.launch started on this host, torch.distributed otherwise; torch: always
    torch.distributed (gloo on CPU), e.g. to compare with a library that uses it."""
    runtime: str = "engine"
    """engine: our executor runs the schedule; torch: torch.distributed.pipelining's
    _PipelineScheduleRuntime runs its exported CSV on the same layers (docs/torch.md). A
    result saved before this field reads as engine, which ran it."""
    custom_schedule: str | None = None
    """Per-rank action lists as text, for schedule=CUSTOM."""
    timeout_s: float = 120.0
    """The whole run is stopped after this many seconds."""
    schedule_costs: tuple[float, float, float, float] | None = None
    """(T_F, T_I, T_W, link) in seconds, one stage's: what a cost-aware schedule (zb-h2, zb-1p,
    zb-2p; arXiv 2401.10241, section 3) is built for. None builds it at unit costs; ``pipelab
    run`` fills it from a profiled step (engine/runtime/profile_costs.py)."""

    def __post_init__(self):
        if self.schedule_costs is not None:  # a stored run's JSON gives a list
            object.__setattr__(self, "schedule_costs", tuple(self.schedule_costs))
        for name in ("replicas", "stage_layers"):
            value = getattr(self, name)
            if isinstance(value, list):  # a stored run's JSON gives lists
                object.__setattr__(self, name, tuple(value))
            elif isinstance(value, str):  # as a form or the command line gives it: check_values names a bad one
                object.__setattr__(self, name, _counts_or_text(value, name))

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def global_microbatches(self) -> int:
        """Micro-batches of the global batch, over every replica: d x m."""
        return self.data_parallel * self.microbatches

    @property
    def layout(self):
        """Which process holds which (replica, pipeline rank): engine/schedules/data_parallel.py.
        Replicated stages are one pipeline of sum(replicas) workers, each stage's workers side
        by side in it (the schedule routes each micro-batch: Schedule.rank_of)."""
        from pipelab.engine.schedules.data_parallel import RankLayout
        if self.replicas:
            return RankLayout(sum(self.replicas), 1)
        return RankLayout(self.stages, self.data_parallel)

    def for_global_batch(self, global_microbatches: int, data_parallel: int) -> "RunConfig":
        """These settings with the global batch fixed at ``global_microbatches`` micro-batches,
        split over ``data_parallel`` replicas: m = global / d, refused (one line) where it does
        not split evenly."""
        for name, value in (("global-microbatches", global_microbatches), ("data-parallel", data_parallel)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError.of("whole_number", knob=name, got=repr(value))
        if global_microbatches % data_parallel:
            raise ConfigError.of("global_split", total=global_microbatches, d=data_parallel)
        return self.with_(microbatches=global_microbatches // data_parallel, data_parallel=data_parallel)

    def with_(self, **changes) -> "RunConfig":
        return replace(self, **changes)

    def overlapping(self, schedule) -> bool:
        """Whether the run's steps overlap: when asked, and always for PipeDream and 2BW."""
        return self.overlap_steps or schedule.is_async

    def model_layer_count(self) -> int:
        """Entries in the flat layer list: embedding + blocks + head for gpt, the Linear layers
        for mlp, the modules of a user's nn.Sequential."""
        return self.layers + {"gpt": 2}.get(self.model, 0)

    def build_schedule(self):
        from pipelab.engine.schedules import build_schedule
        from pipelab.engine.schedules.costs import PassCosts
        from pipelab.engine.theory.validate import parse_schedule, validate
        if self.schedule == CUSTOM:
            if not self.custom_schedule:
                raise ConfigError.of("custom_needs_text")
            schedule = parse_schedule(self.custom_schedule, num_ranks=self.stages, num_microbatches=self.microbatches)
        else:
            costs = None if self.schedule_costs is None else PassCosts(
                forward=self.schedule_costs[0], backward_input=self.schedule_costs[1],
                backward_weight=self.schedule_costs[2], link=self.schedule_costs[3])
            schedule = build_schedule(self.schedule, self.stages, self.microbatches, self.chunks, costs=costs)
            if self.data_parallel > 1 and not schedule.is_async:  # check_values refuses the async ones
                from pipelab.engine.schedules.data_parallel import with_gradient_reduce
                schedule = with_gradient_reduce(schedule, self.reduce_at)
            if self.replicas:
                schedule = self._replicated(schedule, costs)
        validate(schedule)
        return schedule

    def _check_stage_layers(self, stages: int) -> None:
        """Given layers per stage: one whole count of at least 1 per stage, summing to the model's."""
        counts = tuple(self.stage_layers)
        text = ",".join(map(str, counts))
        if len(counts) != stages or any(not isinstance(c, int) or isinstance(c, bool) or c < 1 for c in counts) \
                or sum(counts) != self.model_layer_count():
            raise ConfigError.of("stage_layers", text=text, stages=stages, layers=self.model_layer_count(),
                                 model=self.model)

    def _check_stages_fit(self, stages: int, chunks: int) -> None:
        """Each of the p x v stages needs a layer of its own."""
        if stages > self.model_layer_count():
            raise ConfigError.of("layers", stages=stages, p=self.stages, v=chunks, model=self.model,
                                 have=self.model_layer_count())

    def _check_data_parallel(self, schedule) -> None:
        """What data parallelism (d > 1) does not run with yet, each refused in one line."""
        if self.data_parallel == 1:
            return
        d = self.data_parallel
        if schedule.is_async:
            raise ConfigError.of("dp_async", schedule=schedule.name, d=d)
        if not schedule.reduces_gradients:  # a custom schedule: its R actions are the user's to place
            raise ConfigError.of("dp_needs_reduce", d=d)
        for knob, given in (("overlap-steps", self.overlap_steps), ("clip-grad-norm", self.clip_grad_norm is not None),
                            ("runtime torch", self.runtime == "torch")):
            if given:
                raise ConfigError.of("dp_unsupported", knob=knob, d=d)

    def _replicated(self, schedule, costs):
        """``schedule`` with this run's replicated stages (replicated_schedule), rebuilt at its costs."""
        from pipelab.engine.schedules import build_schedule
        return replicated_schedule(schedule, tuple(self.replicas), self.steps, lambda n: build_schedule(
            self.schedule, self.stages, n, self.chunks, costs=costs))

    def _check_counts_text(self) -> None:
        """A count list given as text that does not read as whole numbers (__post_init__ kept it)."""
        for name in ("replicas", "stage_layers"):
            if isinstance(getattr(self, name), str):
                raise ConfigError.of("counts_text", knob=name.replace("_", "-"), got=repr(getattr(self, name)))

    def _check_replicas(self, limits: Limits) -> None:
        """Replicated stages: one whole count per stage, workers within the server's cap, a
        schedule of one stage per device, and what they do not run with yet, each in one line."""
        from pipelab.engine.schedules import REGISTRY
        from pipelab.engine.schedules.replication import check_replicas, replicas_text
        replicas = tuple(self.replicas)
        check_replicas(replicas, self.stages)
        text = replicas_text(replicas)
        if sum(replicas) > limits.max_stages:
            raise ConfigError.of("replicas_world", text=text, world=sum(replicas), cap=limits.max_stages)
        if self.microbatches < max(replicas):
            raise ConfigError.of("replicas_microbatches", text=text, most=max(replicas), m=self.microbatches)
        info = REGISTRY.get(self.schedule)
        if self.schedule == CUSTOM or info is None:
            raise ConfigError.of("replicas_custom", text=text)
        for knob, given in (("data-parallel", self.data_parallel > 1), ("overlap-steps", self.overlap_steps),
                            ("clip-grad-norm", self.clip_grad_norm is not None),
                            ("runtime torch", self.runtime == "torch"), ("reduce-at flush", self.reduce_at == "flush")):
            if given:
                raise ConfigError.of("replicas_unsupported", knob=knob, text=text)

    def check_values(self, limits: Limits = NO_LIMITS):
        """Raise ConfigError (one line) for an impossible or over-limit setting; return the schedule.
        (Not ``check``: that name is the ``--check`` field.)"""
        positive = ("stages", "microbatches", "data_parallel", "layers", "hidden", "heads", "seq_len",
                    "microbatch_size", "steps")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError.of("whole_number", knob=name.replace("_", "-"), got=repr(value))
        caps = (("stages", limits.max_stages), ("microbatches", limits.max_microbatches),
                ("layers", limits.max_layers), ("hidden", limits.max_hidden),
                ("microbatch_size", limits.max_microbatch_size), ("steps", limits.max_steps))
        for name, cap in caps:
            if getattr(self, name) > cap:
                raise ConfigError.of("at_most", knob=name.replace("_", "-"), cap=cap, got=getattr(self, name))
        if self.data_parallel * self.stages > limits.max_stages:
            raise ConfigError.of("world_cap", d=self.data_parallel, p=self.stages,
                                 world=self.data_parallel * self.stages, cap=limits.max_stages)
        self._check_counts_text()
        if self.replicas is not None:
            self._check_replicas(limits)
        if self.reduce_at not in REDUCE_AT:
            raise ConfigError.of("unknown_reduce_at", got=repr(self.reduce_at), valid=REDUCE_AT)
        if self.chunks is not None and (not isinstance(self.chunks, int) or self.chunks < 1):
            raise ConfigError.of("whole_number", knob="chunks", got=repr(self.chunks))
        if self.model not in MODELS + (SEQUENTIAL,):
            raise ConfigError.of("unknown_model", got=repr(self.model), valid=MODELS)
        if self.device not in DEVICES:
            raise ConfigError.of("unknown_device", got=repr(self.device), valid=DEVICES)
        if self.transport not in TRANSPORTS:
            raise ConfigError.of("unknown_transport", got=repr(self.transport), valid=TRANSPORTS)
        if self.runtime not in RUNTIMES:
            raise ConfigError.of("unknown_runtime", got=repr(self.runtime), valid=RUNTIMES)
        if self.runtime == "torch" and (refusal := torch_settings_refusal(self)) is not None:
            raise ConfigError(refusal)
        if self.partition not in PARTITIONS:
            raise ConfigError.of("unknown_partition", got=repr(self.partition), valid=PARTITIONS)
        if self.model == "gpt" and self.hidden % self.heads:
            raise ConfigError.of("heads", hidden=self.hidden, heads=self.heads)
        if not (0 < self.lr < 10):
            raise ConfigError.of("lr", got=self.lr)
        if not (0 < self.timeout_s <= limits.max_seconds):
            raise ConfigError.of("time_limit", cap=f"{limits.max_seconds:g}", got=self.timeout_s)
        if self.schedule != CUSTOM:  # before building p x v stages for nothing
            from pipelab.engine.schedules import chunks_for
            chunks = chunks_for(self.schedule, self.chunks)
            if self.chunks in (None, chunks):  # a v the schedule refuses: building it says why
                self._check_stages_fit(self.stages * chunks, chunks)
        schedule = self.build_schedule()
        self._check_stages_fit(schedule.num_stages, schedule.chunks)
        if self.stage_layers is not None:
            self._check_stage_layers(schedule.num_stages)
        self._check_data_parallel(schedule)
        if self.runtime == "torch" and (refusal := torch_schedule_refusal(schedule)) is not None:
            raise ConfigError(refusal)
        if self.check and schedule.is_async:
            raise ConfigError.of("check_async", schedule=schedule.name)
        if self.clip_grad_norm is not None:
            if isinstance(self.clip_grad_norm, bool) or not self.clip_grad_norm > 0:
                raise ConfigError.of("clip_positive", got=self.clip_grad_norm)
            if schedule.is_async:
                raise ConfigError.of("clip_async", schedule=schedule.name)
        if self.inject_nonfinite is not None:
            if self.clip_grad_norm is None:
                raise ConfigError.of("inject_needs_clip")
            if not isinstance(self.inject_nonfinite, int) or not 0 <= self.inject_nonfinite < self.steps:
                raise ConfigError.of("inject_step", last=self.steps - 1, got=repr(self.inject_nonfinite))
        return schedule


def settings_error(config: RunConfig, limits: Limits = NO_LIMITS) -> Message | None:
    """Why ``config`` cannot run under ``limits``, as the one coded line check_values raises
    (ConfigError, or a schedule builder's ScheduleError), or None. The page beside its Run
    button, the runner before it queues and the command line before it starts a process all
    say this same sentence: none of them checks a value itself."""
    try:
        config.check_values(limits)
    except Exception as err:  # ConfigError, a builder's ScheduleError, a custom schedule's parse error
        return message_of(err)
    return None


def replicated_schedule(schedule, replicas: tuple[int, ...], steps: int = 1, rebuild=None):
    """``schedule`` with replicated stages (engine/schedules/replication.py): each worker running
    its stage's own program for its share where those programs run together (the pipeline stays
    full), else each its subsequence of the stage's program, which always can; an asynchronous
    schedule's stream over ``steps`` is checked too, since that is what runs. ``rebuild(n)``: the
    schedule for n micro-batches (default: its registered builder at unit costs). The run, the
    command line's simulate and the pages' theory all build replicated stages here."""
    from pipelab.engine.schedules.replication import registered_builder, replicate
    from pipelab.engine.schedules.stream import make_stream
    from pipelab.engine.theory.validate import validate
    subsequences = replicate(schedule, replicas)  # says in one line what cannot be replicated
    rebuild = rebuild or registered_builder(schedule)
    if rebuild is None:
        return subsequences
    try:
        own = replicate(schedule, replicas, rebuild=rebuild)
        validate(own)
        if own.is_async:
            validate(make_stream(own, steps).program)
        return own
    except ScheduleError:  # a deadlock, or a builder that refuses a worker's share of the micro-batches
        return subsequences


def _counts_or_text(text: str, name: str) -> tuple[int, ...] | str | None:
    """A count list's text as its tuple (replication.parse_counts), or, where it does not read
    as whole numbers, the text itself, for check_values to name in one line."""
    from pipelab.engine.schedules.replication import parse_counts
    try:
        return parse_counts(text, name)
    except ScheduleError:
        return text


COMMAND_LINE_DEFAULTS = dict(model="mlp", layers=16, hidden=512, microbatch_size=64, steps=5)
"""The model ``pipelab run`` builds when no size is given: the lessons' own (lessons.Knobs,
tests/test_cli.py keeps them equal). At RunConfig's tiny defaults each action lasts a fraction
of a millisecond, the engine's fixed costs per action swamp what the schedules differ in, and
overlapped ZB-H2 measured 0.152 against 0.168 with a barrier; at this size, 0.066 against 0.142."""


def add_run_args(p: argparse.ArgumentParser) -> None:
    d = RunConfig(**COMMAND_LINE_DEFAULTS)
    p.add_argument("--model", default=d.model, choices=MODELS)
    # None: not given, so default_layers picks enough for every stage (the note says so).
    p.add_argument("--layers", type=int, default=None,
                   help="mlp: Linear layers, the head included; gpt: transformer blocks (plus embedding and head); "
                        f"default {d.layers}, or one per stage when there are more stages")
    p.add_argument("--hidden", type=int, default=d.hidden)
    p.add_argument("--heads", type=int, default=d.heads)
    p.add_argument("--seq-len", type=int, default=d.seq_len)
    p.add_argument("--microbatch-size", type=int, default=d.microbatch_size)
    p.add_argument("--steps", type=int, default=d.steps)
    p.add_argument("--overlap-steps", action="store_true",
                   help="no flush or barrier between steps: each stage updates and starts the next step on its own")
    p.add_argument("--clip-grad-norm", type=float, default=None, metavar="X",
                   help="clip each step's gradient to global norm X and skip non-finite steps (inf: only skip)")
    p.add_argument("--inject-nonfinite", type=int, default=None, metavar="STEP",
                   help="test hook: a NaN in the last stage's gradient at this step (needs --clip-grad-norm)")
    p.add_argument("--data-parallel", type=int, default=d.data_parallel, metavar="D",
                   help="D pipelines side by side (D x stages processes), each stage's gradients averaged over them")
    p.add_argument("--reduce-at", default=d.reduce_at, choices=REDUCE_AT,
                   help="each stage's all-reduce: right after its own last backward, or after the whole flush")
    p.add_argument("--global-microbatches", type=int, default=None, metavar="N",
                   help="fix the global batch at N micro-batches and split it over the D replicas "
                        "(instead of --microbatches, which is per replica)")
    p.add_argument("--replicas", default=None, metavar="R,R,...",
                   help="PipeDream's replicated stages: one worker count per stage, e.g. 2,1,1 (the paper's "
                        "2-1-1: stage 0 on 2 workers, sum(R) processes); micro-batches go round-robin")
    for action in p._actions:  # one of --microbatches and --global-microbatches: _config_from_args checks
        if action.dest == "microbatches":
            action.required, action.help = False, "micro-batches m per step, per replica"
    p.add_argument("--recompute", action="store_true")
    p.add_argument("--check", action="store_true",
                   help="compare step 0's gradients, every loss and the final weights with one process")
    p.add_argument("--no-stash", dest="stash", action="store_false", help="PipeDream without weight stashing")
    p.add_argument("--partition", default=d.partition, choices=PARTITIONS)
    p.add_argument("--stage-layers", default=None, metavar="N,N,...",
                   help="layers per stage, in order, instead of --partition (what `pipelab plan` chose)")
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--device", default=d.device, choices=DEVICES)
    p.add_argument("--transport", default=d.transport, choices=TRANSPORTS,
                   help="auto: shared memory between CPU ranks on this host; torch: torch.distributed")
    p.add_argument("--custom", help="file with a custom schedule (use --schedule custom)")
    p.add_argument("--timeout", type=float, default=d.timeout_s, help="stop the run after this many seconds")
    p.add_argument("--unit-costs", action="store_true",
                   help="build a cost-aware schedule (zb-h2, zb-1p, zb-2p) at T_F = T_I = T_W instead of "
                        "profiling one step first")


def default_layers(config: RunConfig) -> tuple[int, str]:
    """The layer count for a run whose user did not pass --layers: the default, or one layer
    (block) per stage when the schedule has more stages than that (a V places 2 per device),
    with a line saying so ("" when the default is kept). Settings that build no schedule keep
    the default: check_values then names what is wrong with them."""
    try:
        stages = config.build_schedule().num_stages
    except Exception:
        return config.layers, ""
    if stages <= config.layers:
        return config.layers, ""
    return stages, (f"layers: {stages} (--layers not given; the default {config.layers} is raised to one per "
                    f"stage for the schedule's {stages} stages)")


def config_from_args(args) -> RunConfig:
    """The RunConfig the command line asks for; see default_layers for a missing --layers."""
    config = _config_from_args(args, COMMAND_LINE_DEFAULTS["layers"] if args.layers is None else args.layers)
    if args.layers is None:
        config = config.with_(layers=default_layers(config)[0])
    return config


def _config_from_args(args, layers: int) -> RunConfig:
    custom = None
    if args.schedule == CUSTOM:
        if not args.custom:
            raise ConfigError.of("custom_needs_file")
        with open(args.custom) as f:
            custom = f.read()
    if (args.microbatches is None) == (args.global_microbatches is None):
        raise ConfigError.of("microbatches_flag")
    config = RunConfig(schedule=args.schedule, stages=args.stages, microbatches=args.microbatches or 1,
                     chunks=args.chunks, model=args.model, layers=layers, hidden=args.hidden,
                     heads=args.heads, seq_len=args.seq_len, microbatch_size=args.microbatch_size,
                     steps=args.steps, overlap_steps=args.overlap_steps, recompute=args.recompute,
                     clip_grad_norm=args.clip_grad_norm, inject_nonfinite=args.inject_nonfinite,
                     check=args.check, stash=args.stash,
                     partition=args.partition, lr=args.lr, seed=args.seed, device=args.device,
                     transport=args.transport, runtime=getattr(args, "runtime", "engine"), custom_schedule=custom,
                     timeout_s=args.timeout, data_parallel=args.data_parallel, reduce_at=args.reduce_at,
                     replicas=getattr(args, "replicas", None), stage_layers=getattr(args, "stage_layers", None))
    if args.global_microbatches is not None:
        config = config.for_global_batch(args.global_microbatches, args.data_parallel)
    return config
