"""One pipeline stage on one rank: its layers, its weights (and their versions), and the
four things a schedule can ask of it: forward, backward (B or I), weight gradient W, update U.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD
from pipelab.engine.runtime.memory import ActivationTracker, tensor_bytes
from pipelab.engine.runtime.weight_grad import queued_bytes


def momentum_sgd(params, lr: float) -> torch.optim.SGD:
    """The engine's optimizer: SGD with momentum 0.9, as one fused pass over the parameters
    where torch has that kernel (float tensors on CPU and CUDA). The for-loop version reads
    and writes each tensor in several passes; an update is memory-bound, and with
    overlapping steps each stage's update lies on the step's path (engine/schedules/stream.py).
    The single-process reference (engine/runtime/reference.py) builds the same one."""
    try:
        return torch.optim.SGD(params, lr=lr, momentum=0.9, fused=True)
    except (RuntimeError, ValueError):  # e.g. integer or unsupported-device parameters
        return torch.optim.SGD(params, lr=lr, momentum=0.9)


class Stage:
    def __init__(self, index: int, module: nn.Module, *, is_first: bool, is_last: bool,
                 loss_fn, grad_store, tracker: ActivationTracker, lr: float,
                 recompute: bool = False, versioned: bool = False, stash: bool = True):
        self.index = index
        self.module = module
        self.is_first, self.is_last = is_first, is_last
        self.loss_fn = loss_fn
        self.grad_store = grad_store
        self.tracker = tracker
        self.recompute = recompute
        self.lr = lr
        # Asynchronous schedules (PipeDream, 2BW) update the weights while micro-batches
        # are in flight. Each update makes a new set of weight tensors (never in place), so
        # a forward's graph keeps the exact version it used: weight stashing
        # (arXiv 1806.03377, section 3.3). Without stashing, B redoes F with the newest weights.
        self.versioned = versioned
        self.stash = stash
        self.names = [n for n, _ in module.named_parameters()]
        self.version = 0
        self.weights = {n: p for n, p in module.named_parameters()}  # current version
        self.pinned: dict[int, tuple[int, dict]] = {}  # micro-batch -> (version, weights used)
        self.grad_accum: dict[str, torch.Tensor] = {}
        self.momentum: dict[str, torch.Tensor] = {}
        params = list(module.parameters())  # a stage of only activations has none to update
        self.optimizer = momentum_sgd(params, lr) if params and not versioned else None
        self.inflight: dict[int, tuple] = {}  # micro-batch -> (input, output or loss)
        self.peak_versions = 1
        self._saved = None  # the last optimistic update's undo (snapshot / redo)
        # Sizes the simulator's memory model needs (engine/theory/simulate.py, activation_memory):
        self.activation_bytes = 0  # what one micro-batch's F keeps for its backward
        self.weight_grad_bytes = 0  # what a split backward (I) leaves alive for W

    # ---- forward ---------------------------------------------------------------------
    def _run(self, x: torch.Tensor, weights: dict | None) -> torch.Tensor:
        if weights is None:
            return self.module(x)
        return functional_call(self.module, weights, (x,))

    def forward(self, j: int, x: torch.Tensor, target: torch.Tensor | None, loss_scale: float):
        """Run F for micro-batch j; returns the activation to send on (or the loss value)."""
        if not self.is_first:
            x = x.detach().requires_grad_(True)
        weights = None
        if self.versioned:
            weights = self.weights
            self.pinned[j] = (self.version, weights)
        key = (self.index, j)
        if self.recompute:
            # Re-materialization (GPipe, arXiv 1811.06965, section 2.3): keep only the input.
            with torch.no_grad():
                out = self._run(x, weights)
        else:
            with self.tracker.track(key):
                out = self._run(x, weights)
        if self.is_last:
            if self.recompute:
                loss = self.loss_fn(out, target)
                self.inflight[j] = (x, None, target, loss_scale)
            else:
                with self.tracker.track(key):
                    loss = self.loss_fn(out, target)
                self.inflight[j] = (x, loss * loss_scale, target, loss_scale)
            out = loss
        else:
            self.inflight[j] = (x, out, target, loss_scale)
        return out.detach()

    # ---- backward --------------------------------------------------------------------
    def backward(self, j: int, grad_out: torch.Tensor | None, split: bool) -> torch.Tensor | None:
        """B (split=False) or I (split=True) for micro-batch j; returns the input gradient."""
        x, out, target, loss_scale = self.inflight.pop(j)
        key = (self.index, j)
        weights = None
        if self.versioned:
            version, weights = self.pinned.pop(j)
            if not self.stash:
                weights = self.weights  # the newest weights: the wrong-gradient variant
        if self.recompute or (self.versioned and not self.stash):
            with torch.enable_grad():
                out = self._run(x, weights)
                if self.is_last:
                    out = self.loss_fn(out, target) * loss_scale
        if split:
            with self.grad_store.capture(key):
                self._autograd(out, grad_out)
        else:
            self._autograd(out, grad_out)
        if self.versioned:
            self._collect_version_grads(weights)
        return x.grad if not self.is_first else None

    def _autograd(self, out: torch.Tensor, grad_out: torch.Tensor | None) -> None:
        if self.is_last:
            out.backward()
        else:
            out.backward(grad_out)

    def weight_grad(self, j: int) -> None:
        """W: run the weight-gradient matmuls that I queued (arXiv 2401.10241, section 2)."""
        self.grad_store.flush((self.index, j))

    # ---- memory bookkeeping ----------------------------------------------------------
    def account(self, kind: str, j: int, held=None) -> None:
        """Book the activation memory action ``kind`` on micro-batch j took or freed. The
        executor calls it after the action's stopwatch stops: counting is its own work, not
        the device's (engine/runtime/memory.py). ``held``: what ``held_now`` took right after
        the action, where the accounting was deferred (ActivationTracker.replay)."""
        key = (self.index, j)
        if kind == FORWARD:
            if self.recompute:
                self.tracker.keep(key, self.inflight[j][0] if held is None else held)  # the input, all F keeps
            self.activation_bytes = max(self.activation_bytes, self.tracker.bytes_of(key))
        elif kind in (BACKWARD, BACKWARD_INPUT):
            # A split backward (I) leaves W's inputs queued: those stay alive until W.
            held_for_w = 0
            if kind == BACKWARD_INPUT:
                held_for_w = self.grad_store.pending_bytes(key) if held is None else queued_bytes(held)
            self.weight_grad_bytes = max(self.weight_grad_bytes, held_for_w)
            self.tracker.release(key, held_for_w)
        elif kind == BACKWARD_WEIGHT:
            self.tracker.release(key)

    def held_now(self, kind: str, j: int):
        """What ``account(kind, j)`` reads that a later action changes, taken right after the
        action when its accounting is deferred: a recompute forward's input (B drops it), an
        I's queued W work (W runs it; the list keeps its tensors, and so their storages, alive).
        None for the rest."""
        if kind == BACKWARD_INPUT:
            return self.grad_store.queued((self.index, j))
        if kind == FORWARD and self.recompute:
            return self.inflight[j][0]
        return None

    # ---- updates ---------------------------------------------------------------------
    def _collect_version_grads(self, weights: dict) -> None:
        for n, w in weights.items():
            if w.grad is not None:
                acc = self.grad_accum.get(n)
                self.grad_accum[n] = w.grad if acc is None else acc + w.grad
                w.grad = None

    def update(self, scale: float | None = 1.0) -> None:
        """U: one SGD-with-momentum step. Synchronous stages step in place, their gradients
        first multiplied by ``scale`` (global-norm clipping; None skips the step: a
        gradient was not finite, engine/runtime/post_validation.py); versioned ones build new
        weight tensors so in-flight forwards keep the version they used."""
        if not self.versioned:
            if self.optimizer is not None:
                if scale is not None:
                    if scale != 1.0:
                        for p in self.module.parameters():
                            if p.grad is not None:
                                p.grad.mul_(scale)
                    self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
            return
        new = {}
        with torch.no_grad():
            for n, w in self.weights.items():
                g = self.grad_accum.pop(n, None)
                if g is None:
                    new[n] = w
                    continue
                buf = self.momentum.get(n)
                buf = g if buf is None else buf * 0.9 + g
                self.momentum[n] = buf
                new[n] = (w - self.lr * buf).requires_grad_(True)
        self.weights = new
        self.version += 1
        self.peak_versions = max(self.peak_versions, self.live_versions())

    # ---- post-validation (engine/runtime/post_validation.py) ----------------------------------------
    def grad_parameters(self):
        return list(self.module.parameters())

    def snapshot(self) -> None:
        """Keep what an optimistic update changes (weights, momentum) and the gradient it
        used, so ``redo`` can undo it (arXiv 2401.10241, section 4)."""
        state = self.optimizer.state if self.optimizer is not None else {}
        self._saved = [(p, p.detach().clone(), None if p.grad is None else p.grad.detach().clone(),
                        None if "momentum_buffer" not in state.get(p, {}) else state[p]["momentum_buffer"].clone())
                       for p in self.module.parameters()]

    def forget_snapshot(self) -> None:
        self._saved = None

    def redo(self, scale: float | None) -> None:
        """Roll back the last (optimistic) update and apply it again with ``scale``."""
        saved, self._saved = self._saved, None
        with torch.no_grad():
            for p, weight, grad, momentum in saved:
                p.copy_(weight)
                p.grad = grad
                if self.optimizer is not None:
                    if momentum is None:
                        self.optimizer.state[p].pop("momentum_buffer", None)
                    else:
                        self.optimizer.state[p]["momentum_buffer"] = momentum
        self.update(scale)

    def discard(self, j: int) -> None:
        """Forget micro-batch j's forward (its inputs and saved activations): the executor
        replays it after a rollback."""
        self.inflight.pop(j, None)
        self.pinned.pop(j, None)
        self.tracker.release((self.index, j))

    def live_versions(self) -> int:
        return len({v for v, _ in self.pinned.values()} | {self.version})

    def note_versions(self) -> None:
        self.peak_versions = max(self.peak_versions, self.live_versions())

    def stashed_bytes(self) -> int:
        """Bytes of weight versions kept only for in-flight micro-batches."""
        return (self.live_versions() - 1) * tensor_bytes(self.weights.values())

    def parameter_bytes(self) -> int:
        return tensor_bytes(self.module.parameters())

    def optimizer_bytes(self) -> int:
        if self.optimizer is None:
            return tensor_bytes(self.momentum.values())
        return sum(tensor_bytes(s.values()) if isinstance(s, dict) else 0
                   for s in self.optimizer.state.values() for s in [{k: v for k, v in s.items() if torch.is_tensor(v)}])
