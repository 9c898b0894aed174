"""Activation memory, measured: bytes autograd saves for backward, per stage-micro-batch.

A saved-tensor hook (torch.autograd.graph.saved_tensors_hooks) sees every tensor the
forward keeps for its backward. We count each storage once (views share storage) and skip
parameters, which are weights, not activations.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch


def storage_key(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


class ActivationTracker:
    def __init__(self, parameters):
        self.param_storages = {storage_key(p)[0] for p in parameters}
        self.held: dict[tuple, dict[int, int]] = {}  # key -> {storage ptr: bytes}
        self.extra: dict[tuple, int] = {}  # bytes held outside autograd (e.g. W's queue)
        self.samples: list[tuple[float, int]] = [(0.0, 0)]
        self.peak = 0

    def add_parameters(self, parameters) -> None:
        self.param_storages |= {storage_key(p)[0] for p in parameters}

    @contextmanager
    def track(self, key):
        held = self.held.setdefault(key, {})

        def pack(t: torch.Tensor):
            ptr, nbytes = storage_key(t)
            if ptr not in self.param_storages and nbytes:
                held[ptr] = nbytes
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            yield

    def keep(self, key, tensor: torch.Tensor) -> None:
        """Count a tensor kept by hand (a recompute stage's input)."""
        ptr, nbytes = storage_key(tensor)
        self.held.setdefault(key, {})[ptr] = nbytes

    def release(self, key, still_held: int = 0) -> None:
        self.held.pop(key, None)
        if still_held:
            self.extra[key] = still_held
        else:
            self.extra.pop(key, None)

    def live_bytes(self) -> int:
        unique: dict[int, int] = {}
        for held in self.held.values():
            unique.update(held)
        return sum(unique.values()) + sum(self.extra.values())

    def sample(self, t: float) -> None:
        live = self.live_bytes()
        self.samples.append((t, live))
        self.peak = max(self.peak, live)


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)
