"""Global gradient-norm clipping and the non-finite check, with a barrier or without one.

Both need the whole model's gradient: its norm (clip the step when it exceeds
``RunConfig.clip_grad_norm``) and whether every gradient is finite (skip the step when not,
as mixed-precision training does). One step's verdict, from the global state:
``scale_for``.

- Steps with barriers: every rank reduces its partial state with the others (an all-reduce)
  after the flush, then every stage updates with the verdict (``reduce_across_ranks``).
- Overlapping steps: that all-reduce would be a barrier between steps again. Zero bubble's
  post-validation (arXiv 2401.10241, section 4) replaces it: each rank, at its update,
  receives the partial state of the ranks before it, adds its own and passes it on
  (``Chain.partial``); each stage updates optimistically (unclipped), unless the partial
  state already decides (a non-finite gradient skips the step, whatever comes after); the
  last rank then holds the global state and sends the verdict back along the pipeline
  (``Chain.verdict``) during the next step's warm-up. A stage whose optimistic update was
  wrong rolls it back and redoes it (``pipelab.engine.runtime.stage.Stage.redo``); since the next step's
  first forwards already used it, the executor replays that step's start
  (engine/runtime/executor.py). Clipping and non-finite gradients are rare in stable training, so
  the common step pays two small messages per rank and no wait.

The messages go through a gloo group of their own (they are not stage-boundary tensors, and
a group's point-to-point messages keep their order apart from the pipeline's), each with
its sender's device-clock stamp, as the pipeline's messages carry one (engine/runtime/comm.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist

NO_CLIP = math.inf
"""``RunConfig.clip_grad_norm`` that never clips: only the non-finite check runs."""


@dataclass(frozen=True)
class GradState:
    """What the verdict needs of some ranks' gradients."""

    sum_of_squares: float = 0.0
    nonfinite: bool = False
    optimistic: bool = False
    """Some rank already updated without knowing the verdict (overlapping steps)."""

    def __add__(self, other: "GradState") -> "GradState":
        return GradState(self.sum_of_squares + other.sum_of_squares, self.nonfinite or other.nonfinite,
                         self.optimistic or other.optimistic)

    @property
    def norm(self) -> float:
        return math.sqrt(self.sum_of_squares)


def grad_state(parameters) -> GradState:
    """Sum of squares (in float64) and finiteness of the parameters' current gradients."""
    total = 0.0
    nonfinite = False
    for p in parameters:
        if p.grad is None:
            continue
        g = p.grad.detach().double()
        if not torch.isfinite(g).all():
            nonfinite = True
        total += float((g * g).sum())
    return GradState(total, nonfinite)


def scale_for(state: GradState, clip: float) -> float | None:
    """The factor the step's gradients are multiplied by before the update, as
    torch.nn.utils.clip_grad_norm_ computes it (max_norm / (norm + 1e-6), at most 1); None
    skips the step (a gradient is not finite)."""
    if state.nonfinite or not math.isfinite(state.sum_of_squares):
        return None
    return min(1.0, clip / (state.norm + 1e-6))


def reduce_across_ranks(local: GradState, device: torch.device) -> GradState:
    """Steps with barriers: the global state by one all-reduce after the flush."""
    t = torch.tensor([local.sum_of_squares, float(local.nonfinite)], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return GradState(float(t[0]), bool(t[1] > 0))


@dataclass(frozen=True)
class StepCheck:
    """A run's step check, as the executor applies it."""
    clip: float
    """RunConfig.clip_grad_norm (NO_CLIP: only the non-finite check)."""
    inject_step: int | None = None
    """RunConfig.inject_nonfinite."""
    chain: "Chain | None" = None
    """Overlapping steps: the messages between neighbouring ranks."""


class Chain:
    """Overlapping steps: the partial state travels rank 0 -> p-1 at the updates, the verdict
    p-1 -> 0 during the next step's warm-up, over a gloo group of their own."""

    def __init__(self, rank: int, world: int, group):
        self.rank, self.world, self.group = rank, world, group
        self._sends: list = []

    def _send(self, state: GradState, stamp: float, dst: int) -> None:
        t = torch.tensor([state.sum_of_squares, float(state.nonfinite), float(state.optimistic), stamp],
                         dtype=torch.float64)
        self._sends.append((dist.isend(t, dst, group=self.group), t))  # the tensor lives until sent

    def _receive(self, src: int) -> tuple[GradState, float]:
        t = torch.empty(4, dtype=torch.float64)
        dist.recv(t, src, group=self.group)
        return GradState(float(t[0]), bool(t[1] > 0), bool(t[2] > 0)), float(t[3])

    def partial_in(self) -> tuple[GradState, float]:
        """The ranks before this one (nothing, and no stamp, on rank 0)."""
        return self._receive(self.rank - 1) if self.rank > 0 else (GradState(), -math.inf)

    def partial_out(self, state: GradState, stamp: float) -> None:
        if self.rank < self.world - 1:
            self._send(state, stamp, self.rank + 1)

    def verdict_in(self) -> tuple[GradState, float]:
        """The global state, from the rank after this one (not called on the last)."""
        return self._receive(self.rank + 1)

    def verdict_out(self, state: GradState, stamp: float) -> None:
        if self.rank > 0:
            self._send(state, stamp, self.rank - 1)

    def finish(self) -> None:
        for work, _ in self._sends:
            work.wait()
        self._sends.clear()
