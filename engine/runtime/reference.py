"""The single-process baseline every synchronous schedule must match (torchgpipe's
test_transparency idea): the whole model, the same m micro-batches, loss divided by m,
gradients accumulated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from pipelab.engine.model.parts import ModelParts


@dataclass(frozen=True)
class ReferenceRun:
    """What the whole model in one process gives the check to compare each rank with
    (engine/runtime/worker.py). Per-layer tensors are indexed like ``ModelParts.layers`` and keyed by
    the parameter's name within its layer."""
    losses: tuple[float, ...]
    """Every step's loss: the mean over its micro-batches."""
    step0_grads: tuple[Mapping[str, torch.Tensor], ...]
    """Per layer: the gradient accumulated over step 0's micro-batches, before clipping."""
    final_weights: tuple[Mapping[str, torch.Tensor], ...]
    """Per layer: each parameter after the last step's update."""


def reference_run(parts: ModelParts, microbatches: int, steps: int, lr: float, clip: float | None = None,
                  inject: tuple[int, int] | None = None, on_microbatch=None) -> ReferenceRun:
    """The whole run in one process: every step's mean loss, step 0's gradients, and each
    layer's weights after the last step, with the engine's optimizer (SGD, momentum 0.9)
    and step check: gradients clipped to global norm ``clip``, a step with a non-finite
    gradient skipped (engine/runtime/post_validation.py). ``inject=(step, layer)``: a NaN in that
    layer's first gradient at that step, as RunConfig.inject_nonfinite puts it in the last
    stage's first layer. ``on_microbatch(k)`` is called after each of its micro-batches, k
    counting from 1 over the whole run: a rank running it reports progress there."""
    from pipelab.engine.runtime.post_validation import grad_state, scale_for
    from pipelab.engine.runtime.stage import momentum_sgd
    layers = parts.layers
    params = [p for layer in layers for p in layer.parameters()]
    optimizer = momentum_sgd(params, lr)
    losses, step0_grads = [], ()
    for step in range(steps):
        total = 0.0
        for j in range(microbatches):
            x, target = parts.batch(step, j)
            for layer in layers:
                x = layer(x)
            loss = parts.loss(x, target)
            (loss / microbatches).backward()
            total += loss.item()
            if on_microbatch is not None:
                on_microbatch(step * microbatches + j + 1)
        losses.append(total / microbatches)
        if step == 0:
            step0_grads = tuple({n: p.grad.detach().clone() for n, p in layer.named_parameters()
                                 if p.grad is not None} for layer in layers)
        if inject is not None and inject[0] == step:
            next(p.grad for p in layers[inject[1]].parameters() if p.grad is not None).view(-1)[0] = float("nan")
        scale = 1.0 if clip is None else scale_for(grad_state(params), clip)
        if scale is not None:
            if scale != 1.0:
                for p in params:
                    if p.grad is not None:
                        p.grad.mul_(scale)
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    final_weights = tuple({n: p.detach().clone() for n, p in layer.named_parameters()} for layer in layers)
    return ReferenceRun(tuple(losses), step0_grads, final_weights)
