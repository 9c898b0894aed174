"""Zero bubble's B/W split: a linear layer whose weight gradient can wait.

Backward through ``y = x @ W^T + b`` is two matmuls with different consumers
(zero bubble, arXiv 2401.10241, section 2):

- I: ``dx = dy @ W``, needed *now* by the previous stage, which is waiting for it;
- W: ``dW = dy^T @ x`` and ``db = sum(dy)``, needed only by the optimizer step.

Running I alone and queueing W lets a schedule fill bubbles with W work. The idea follows
``WeightGradStore.put/flush/pop`` in sail-sg/zero-bubble-pipeline-parallelism
(``megatron/core/zbpp_utils.py``); this is our own code with two changes: the store is an
object handed to the layers (no class-level singleton), and queued work is keyed (e.g. by
``(stage, microbatch)``) so W for any micro-batch can run in any order the schedule picks.

W never re-runs the graph: each queued closure holds the saved input ``x`` and the
incoming ``dy`` and performs just its two matmuls. That is why W-pending micro-batches still
cost memory (``pending_bytes``): the activations ``x`` stay alive until W runs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn


class WeightGradStore:
    """Queued weight-gradient work, keyed by whatever the caller chooses (e.g. (stage, mb))."""

    def __init__(self) -> None:
        self._key: Hashable | None = None  # key being captured, None when not deferring
        self._queues: dict[Hashable, list[tuple[Callable[[], None], tuple[torch.Tensor, ...]]]] = {}

    @property
    def deferring(self) -> bool:
        """True while a backward should queue its weight gradients instead of computing them."""
        return self._key is not None

    def begin(self, key: Hashable) -> None:
        """Start deferring: weight-grad work from backward passes is queued under ``key``."""
        if self._key is not None:
            raise RuntimeError(f"already capturing weight grads for {self._key!r}; call end() first")
        self._key = key

    def end(self) -> None:
        """Stop deferring; later backward passes compute weight gradients immediately."""
        self._key = None

    @contextmanager
    def capture(self, key: Hashable) -> Iterator[None]:
        """``with store.capture((stage, mb)): loss.backward()`` runs only the I half."""
        self.begin(key)
        try:
            yield
        finally:
            self.end()

    def put(self, work: Callable[[], None], tensors: tuple[torch.Tensor, ...]) -> None:
        """Queue ``work`` under the current key; ``tensors`` are what it holds alive."""
        if self._key is None:
            raise RuntimeError("put() outside begin()/capture(): nothing to queue under")
        self._queues.setdefault(self._key, []).append((work, tensors))

    def flush(self, key: Hashable) -> int:
        """Run (and forget) every closure queued under ``key``; returns how many ran."""
        queue = self._queues.pop(key, [])
        with torch.no_grad():
            for work, _ in queue:
                work()
        return len(queue)

    def pending_count(self, key: Hashable) -> int:
        """Number of queued closures (one per DeferrableLinear call) under ``key``."""
        return len(self._queues.get(key, []))

    def pending_bytes(self, key: Hashable) -> int:
        """Bytes the queued closures keep alive (saved inputs and output grads).

        Counted per storage, so a tensor shared by several closures (or views of one buffer)
        is counted once: this is memory that W-pending micro-batches really pin.
        """
        return queued_bytes(self.queued(key))

    def queued(self, key: Hashable) -> list:
        """The work queued under ``key`` now, as (closure, tensors) pairs: the list itself,
        which a later flush takes out of the store but never empties (a deferred memory
        count reads it after W ran: engine/runtime/memory.py)."""
        return self._queues.get(key, [])

    def pending_keys(self) -> list[Hashable]:
        """Keys with queued work, in the order they were first captured."""
        return list(self._queues)


def queued_bytes(queued: list) -> int:
    """Bytes of distinct storages that ``queued`` (WeightGradStore.queued) keeps alive."""
    seen: dict[int, int] = {}
    for _, tensors in queued:
        for t in tensors:
            storage = t.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


class _DeferrableLinearFn(torch.autograd.Function):
    """``F.linear`` whose backward may hand the weight-gradient matmuls to a store."""

    @staticmethod
    def forward(ctx, x, weight, bias, layer):  # x: (..., in), weight: (out, in), bias: (out,)
        ctx.save_for_backward(x, weight)
        # Keep the tensors actually used (functional_call may have swapped in others than
        # layer.weight) so W accumulates into them; the layer is needed only for its store.
        ctx.weight, ctx.bias, ctx.layer = weight, bias, layer
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):  # grad_out: (..., out)
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grad_x = grad_out @ weight if need_x else None  # (..., out) @ (out, in) -> (..., in)
        if not (need_w or need_b):
            return grad_x, None, None, None
        store: WeightGradStore | None = ctx.layer.grad_store
        # A non-leaf weight needs its gradient to flow on through autograd now; only leaf
        # parameters (the normal case) can take a late .grad accumulation.
        leaf = ctx.weight.grad_fn is None and (ctx.bias is None or ctx.bias.grad_fn is None)
        if store is not None and store.deferring and leaf:
            w, b = (ctx.weight if need_w else None), (ctx.bias if need_b else None)
            store.put(lambda: _accumulate(w, b, x, grad_out), (x, grad_out))
            return grad_x, None, None, None
        grad_w, grad_b = _weight_grads(x, grad_out)
        return grad_x, (grad_w if need_w else None), (grad_b if need_b else None), None


def _weight_grads(x: torch.Tensor, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """dW = dy^T @ x and db = sum(dy), with every leading dim (B, T, ...) flattened into rows."""
    x2 = x.reshape(-1, x.shape[-1])  # (N, in)
    g2 = grad_out.reshape(-1, grad_out.shape[-1])  # (N, out)
    return g2.t() @ x2, g2.sum(0)  # (out, in), (out,)


def _accumulate(weight, bias, x, grad_out) -> None:
    """The W step of one linear call: add its weight (and bias) gradient into ``.grad``."""
    grad_w, grad_b = _weight_grads(x, grad_out)
    for param, grad in ((weight, grad_w), (bias, grad_b)):
        if param is None:
            continue
        if param.grad is None:
            param.grad = grad.to(param.dtype)
        else:
            param.grad.add_(grad)


class DeferrableLinear(nn.Linear):
    """``nn.Linear`` whose weight gradient goes to ``grad_store`` while it is deferring.

    With no store it *is* ``nn.Linear`` (the engine attaches a store only to stages whose
    schedule splits the backward); with a store that is not deferring it computes the same.
    """

    grad_store: WeightGradStore | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.grad_store is None:
            # No store, nothing to defer: torch's own linear, whose backward runs in C++.
            # The Python Function below adds interpreter work to every call, forward and
            # backward, that schedules without a W action have no use for.
            return F.linear(x, self.weight, self.bias)
        return _DeferrableLinearFn.apply(x, self.weight, self.bias, self)


def attach_grad_store(module: nn.Module, store: WeightGradStore | None) -> int:
    """Point every DeferrableLinear inside ``module`` at ``store``; returns how many."""
    count = 0
    for sub in module.modules():
        if isinstance(sub, DeferrableLinear):
            sub.grad_store = store
            count += 1
    return count
