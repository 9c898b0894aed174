"""What one rank measured, in plain Python values: rank 0 gathers these and the launching
process (a web server, say) unpickles them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RankRecord:
    """What one rank measured; rank 0 gathers these into a RunResult."""
    rank: int
    events: list[dict] = field(default_factory=list)
    """engine.timeline.Event fields; during the run, lists in executor.EVENT_FIELDS order."""
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
    ones (engine/slots.py sizes them); None through torch.distributed, whose send and
    receive buffers come and go with the messages."""
    cuda_peak_bytes: int | None = None
    """torch.cuda.max_memory_allocated on GPU runs (everything: weights, activations, buffers)."""
    cpu_seconds: list[float] = field(default_factory=list)
    """Per step: CPU time of this rank's whole process (every thread: compute, messages,
    bookkeeping, the communication library's helpers) from the step's start to its last action."""
    messages_sent: int = 0
    bytes_sent: int = 0
    grads: dict | None = None
    steps_clipped: list[int] = field(default_factory=list)
    """Steps whose gradient was clipped to RunConfig.clip_grad_norm (engine/post_validation.py)."""
    steps_skipped: list[int] = field(default_factory=list)
    """Steps skipped for a non-finite gradient."""
    steps_replayed: list[int] = field(default_factory=list)
    """Overlapping steps: steps whose start was replayed after the previous step's
    optimistic update was rolled back."""
