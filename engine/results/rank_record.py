"""What one rank measured, in plain Python values: rank 0 gathers these and the launching
process (a web server, say) unpickles them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipelab.engine.results.records import CudaPeakBreakdown, GradientCheck
from pipelab.engine.results.timeline import Event


@dataclass
class RankRecord:
    """What one rank measured; rank 0 gathers these into a RunResult."""
    rank: int
    """Pipeline rank: the index of the program it played (schedule.actions[rank])."""
    replica: int = 0
    """Which of the run's data-parallel pipelines it belongs to (engine/schedules/data_parallel.py)."""
    reduce_cost_s: dict[int, float] = field(default_factory=dict)
    """Per stage it holds: its gradient all-reduce's cost over the data-parallel group, measured
    at set-up (the fastest of a few rounds): what an R lasts on the device clock."""
    events: list[Event] = field(default_factory=list)
    """Filled when the run is over (pipelab.engine.runtime.executor.Executor.summarize)."""
    memory: list[tuple[float, int]] = field(default_factory=list)
    peak_activation_bytes: int = 0
    activation_bytes: dict[int, int] = field(default_factory=dict)
    """Per stage held here: bytes one micro-batch's forward keeps for its backward."""
    weight_grad_bytes: dict[int, int] = field(default_factory=dict)
    """Per stage held here: bytes a split backward (I) leaves alive until its W."""
    parameter_bytes: int = 0
    gradient_bytes: int = 0
    optimizer_bytes: int = 0
    weight_versions: int = 1
    peak_stashed_bytes: int = 0
    losses: list[float] = field(default_factory=list)
    microbatch_losses: list[list[float]] = field(default_factory=list)
    message_buffer_bytes: int | None = None
    """Bytes of the shared-memory channel slots this rank maps, its outgoing and incoming
    ones (engine/runtime/slots.py sizes them); None through torch.distributed, whose send and
    receive buffers come and go with the messages."""
    cuda_peak_bytes: int | None = None
    """torch.cuda.max_memory_allocated on GPU runs (everything: weights, activations, buffers)."""
    cuda_breakdown: CudaPeakBreakdown | None = None
    """What held cuda_peak_bytes (engine/runtime/cuda_memory.py); our runtime on a GPU only."""
    cpu_seconds: list[float] = field(default_factory=list)
    """Per step: CPU time of this rank's whole process (every thread: compute, messages,
    bookkeeping, the communication library's helpers) from the step's start to its last action."""
    messages_sent: int = 0
    bytes_sent: int = 0
    grads: GradientCheck | None = None
    """With RunConfig.check, filled on rank 0 (pipelab.engine.runtime.worker)."""
    steps_clipped: list[int] = field(default_factory=list)
    """Steps whose gradient was clipped to RunConfig.clip_grad_norm (engine/runtime/post_validation.py)."""
    steps_skipped: list[int] = field(default_factory=list)
    """Steps skipped for a non-finite gradient."""
    steps_replayed: list[int] = field(default_factory=list)
    """Overlapping steps: steps whose start was replayed after the previous step's
    optimistic update was rolled back."""
    cpus: tuple[int, ...] | None = None
    """The CPUs this rank's process could run on as it set up its steps (its affinity: a pinned
    rank's own core); None where the OS has no affinity call. Placement.ran_on in the result."""


@dataclass(frozen=True)
class RankPayload:
    """What rank 0 hands the launching process: every rank's record and the run's layout."""
    records: tuple[RankRecord, ...]
    link_cost_s: float
    """One-way message latency, measured once per run (pipelab.engine.runtime.executor.measure_link_cost)."""
    ranges: tuple[tuple[int, int], ...]
    """Per stage, its layers as (start, stop)."""
    shapes: tuple[tuple[int, ...], ...]
    """shape[s]: the activation entering stage s."""
    device: str
    """"cpu" or "cuda"."""
    transport: str
    """How messages moved: "shared memory" or the torch.distributed backend's name."""
    reduce_cost_s: tuple[float, ...] = ()
    """Per stage, its all-reduce's measured cost (empty without data parallelism)."""
