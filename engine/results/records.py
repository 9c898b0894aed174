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
    activation_timeline: tuple[tuple[float, int], ...]
    """(device-clock seconds, live activation bytes) samples."""

    def to_dict(self) -> dict:
        return record_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> RankMemory:
        return load_record(cls, data, {"peak_activation_bytes_per_step": seq, "activation_timeline": seqs}, "memory")


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
        return cls(grad_max_rel_diff=max(c.grad_max_rel_diff for c in checks),
                   weight_max_rel_diff=max(c.weight_max_rel_diff for c in checks), **losses)
