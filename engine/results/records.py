"""A finished run's memory per device and its gradient check, typed.

Each field keeps its name in the result JSON ("memory" per rank, "check"; docs/results.md).
Fields with a default were added after the first results were saved: a result saved before
reads them back as None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipelab.engine.results.schema import load_record, record_dict, seq, seqs


@dataclass(frozen=True, kw_only=True)
class CudaPeakBreakdown:
    """What held the CUDA allocator's peak on one rank, in bytes (engine/runtime/cuda_memory.py).

    ``peak`` is the sum of every other byte field. The allocator's counter is read after
    every action; the peak fell inside one action, and the parts are what lived on the
    device around it: known tensors found by identity (each storage once), two set-up
    amounts measured on the allocator (the library's workspace, the rest of set-up), the
    allocator's activation share (what its counter holds beyond all those) and the
    action's temporaries (its peak beyond what lived before or after it)."""
    peak: int
    at: str
    """The action the peak fell in, e.g. "F stage 0, micro-batch 3, step 2"."""
    parameters: int
    gradients: int
    optimizer_state: int
    check_reference: int
    """--check: the copy of step 0's gradients each rank keeps until the run's end."""
    messages_and_inputs: int
    """Received messages not yet used, prefetched inputs and targets."""
    stage_outputs: int
    """Each in-flight micro-batch's stage output, kept for its backward, not saved by autograd."""
    library_workspace: int
    """cuBLAS's workspaces (one per thread that runs matmuls: the forward's and autograd's)."""
    setup_other: int
    """What the allocator held after set-up beyond the parameters."""
    activations: int
    """The allocator's activation share: its counter beyond every part above."""
    activations_counted: int
    """Our count (saved-tensor hooks, engine/runtime/memory.py) at the same moment."""
    temporaries: int
    """Allocated and freed again within the action."""

    def to_dict(self) -> dict:
        return record_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> CudaPeakBreakdown:
        return load_record(cls, data, {}, "cuda_breakdown")


@dataclass(frozen=True, kw_only=True)
class RankMemory:
    """What one device held, in bytes, as its rank measured it."""
    peak_activation_bytes: int
    parameter_bytes: int
    peak_activation_bytes_per_step: tuple[int, ...] | None = None
    """The most live activation bytes within each step's window on this device."""
    gradient_bytes: int
    optimizer_bytes: int
    weight_versions: int
    """Most weight versions a stage here kept at once (PipeDream's stashing)."""
    theory_weight_versions: int | None
    peak_stashed_weight_bytes: int
    cuda_peak_bytes: int | None = None
    """torch.cuda.max_memory_allocated on a GPU run; None on CPU."""
    message_buffer_bytes: int | None = None
    """The shared-memory channel slots this rank maps; None through torch.distributed."""
    cuda_breakdown: CudaPeakBreakdown | None = None
    """What held cuda_peak_bytes (our runtime on a GPU); None on CPU and on torch's runtime."""
    activation_timeline: tuple[tuple[float, int], ...]
    """(device-clock seconds, live activation bytes) samples."""

    def to_dict(self) -> dict:
        return record_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> RankMemory:
        return load_record(cls, data, {"peak_activation_bytes_per_step": seq, "activation_timeline": seqs,
                                        "cuda_breakdown": CudaPeakBreakdown.from_dict}, "memory")


@dataclass(frozen=True, kw_only=True)
class GradientCheck:
    """The run against one process running the same steps (RunConfig.check): largest
    relative differences, and on the last stage's rank its losses beside the reference's."""
    grad_max_rel_diff: float
    """Step 0's gradients, relative to each tensor's largest entry."""
    weight_max_rel_diff: float | None = None
    """The weights after the last step."""
    loss: float | None = None
    reference_loss: float | None = None
    loss_rel_diff: float | None = None
    losses: tuple[float, ...] | None = None
    reference_losses: tuple[float, ...] | None = None
    losses_max_rel_diff: float | None = None
    replica_weight_max_diff: float | None = None
    """With data parallelism: the largest absolute difference between any replica's weights
    after the last step and replica 0's; 0.0 when the replicas stayed bit-identical, as
    averaging the same gradients on every replica keeps them."""

    def to_dict(self) -> dict:
        """Only the fields the check has: the loss fields come from the last stage's rank."""
        return {k: v for k, v in record_dict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping) -> GradientCheck:
        return load_record(cls, data, {"losses": seq, "reference_losses": seq}, "check")

    @classmethod
    def of_ranks(cls, checks: Sequence[GradientCheck]) -> GradientCheck:
        """The whole run's check from each rank's: the largest differences, and the losses
        of the rank that has them."""
        with_loss = next((c for c in checks if c.loss is not None), None)
        losses = {} if with_loss is None else {
            k: getattr(with_loss, k) for k in ("loss", "reference_loss", "loss_rel_diff", "losses",
                                               "reference_losses", "losses_max_rel_diff")}
        replicas = [c.replica_weight_max_diff for c in checks if c.replica_weight_max_diff is not None]
        return cls(grad_max_rel_diff=max(c.grad_max_rel_diff for c in checks),
                   weight_max_rel_diff=max(c.weight_max_rel_diff for c in checks), **losses,
                   replica_weight_max_diff=max(replicas) if replicas else None)


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where a run's rank processes ran (engine/runtime/placement.py): each on a physical core of
    its own, or left to the OS and why. In the result JSON as metrics.placement."""
    PINNED = "pinned"
    """Each rank on its own core, the reference run on another."""
    SHARED_REFERENCE = "pinned, reference shares"
    """Each rank on its own core (PIPELAB_PIN=ranks); the reference ran on the ranks' cores after their steps."""
    FEW_CORES = "few cores"
    """Not pinned: fewer free physical cores than ranks plus one for the reference."""
    OFF = "off"
    """Not pinned: PIPELAB_PIN=0."""
    UNSUPPORTED = "unsupported"
    """Not pinned: the OS has no CPU affinity call (not Linux)."""
    GPU = "gpu"
    """Not pinned: a GPU run. Its device clock is CUDA events, which a rank's core does not move,
    and its CUDA, NCCL and torch threads get the cores the OS (or torchrun's NUMA binding) gives."""
    HOST = "host"
    """rank_cpus are the launch's processes, all on one host."""
    PER_HOST = "per host"
    """Under torchrun: rank_cpus are the local ranks of rank 0's host, each host pinning its own alike."""

    pinned: bool
    reason: str
    cores: int
    """Free physical cores the launch could use (within its CPU affinity, none held by another launch)."""
    ranks: int
    """Processes to place (d x p with data parallelism; local ones under torchrun)."""
    rank_cpus: tuple[tuple[int, ...], ...] = ()
    """Per rank (process), its CPUs: one physical core's hyperthread siblings; empty when not pinned."""
    reference_cpus: tuple[int, ...] = ()
    """Where the gradient check's one-process run went; empty when not pinned."""
    scope: str = HOST
    polls: bool = False
    """Its ranks waited for a shared-memory message by polling before they slept
    (engine/runtime/placement.py: pinned, with a core to spare, or PIPELAB_POLL=1)."""
    ran_on: tuple[tuple[int, ...], ...] = ()
    """Per rank (process), the CPUs it could run on as it set up its steps: its affinity, read
    by the rank itself (rank_cpus is the plan; this is what the OS held it to). Empty where the
    OS has no affinity call, and in a result saved before runs recorded it."""

    def cpus_of(self, rank: int) -> tuple[int, ...]:
        """Rank ``rank``'s CPUs; empty when not pinned."""
        return self.rank_cpus[rank] if self.pinned else ()

    def to_dict(self) -> dict:
        return record_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> Placement:
        return load_record(cls, data, {"rank_cpus": seqs, "reference_cpus": seq, "ran_on": seqs},
                           "placement")
