"""The single-process baseline every synchronous schedule must match (torchgpipe's
test_transparency idea): the whole model, the same m micro-batches, loss divided by m,
gradients accumulated."""

from __future__ import annotations

import torch

from engine.model_parts import ModelParts


def reference_step(parts: ModelParts, microbatches: int, step: int = 0) -> tuple[float, list[dict[str, torch.Tensor]]]:
    """Mean micro-batch loss of one step and, per layer, its parameters' gradients.
    ``parts`` must be fresh (initial weights), as engine.model_parts.model_parts makes them."""
    layers = parts.layers
    total = 0.0
    for j in range(microbatches):
        x, target = parts.batch(step, j)
        for layer in layers:
            x = layer(x)
        loss = parts.loss(x, target)
        (loss / microbatches).backward()
        total += loss.item()
    grads = [{n: p.grad.detach().clone() for n, p in layer.named_parameters() if p.grad is not None}
             for layer in layers]
    return total / microbatches, grads
