"""Where a run's model comes from: the built-in gpt/mlp, or a user's nn.Sequential.

Both become the same three things every rank needs: a flat list of layers to split into
stages, a function giving (input, target) for (step, micro-batch) on any rank, and the loss.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from pipelab.engine.model.builtin import ModelConfig, build_layers, loss_fn, make_microbatch
from pipelab.engine.runtime.weight_grad import DeferrableLinear


@dataclass(frozen=True)
class UserModel:
    """A model of your own for ``pipelab.engine.runtime.launch.run(config, model=UserModel(...))``.

    The functions are sent to the rank processes, so they must be picklable (defined at the
    top level of a module, not lambdas).
    """

    layers: nn.Sequential
    """Split into stages in order; each rank takes a copy of its own layers."""
    data: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]
    """(step, micro-batch) -> (input, target); must give the same tensors on every rank."""
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    """(output, target) -> scalar loss of one micro-batch."""


@dataclass
class ModelParts:
    layers: list[nn.Module]
    batch: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def model_config(config) -> ModelConfig:
    return ModelConfig(kind=config.model, layers=config.layers, hidden=config.hidden, heads=config.heads,
                       seq_len=config.seq_len, microbatch_size=config.microbatch_size, seed=config.seed)


def model_parts(config, user: UserModel | None = None) -> ModelParts:
    """Fresh layers (same initial weights every call) and the data and loss functions."""
    if user is not None:
        layers = [make_deferrable(copy.deepcopy(layer)) for layer in user.layers]
        return ModelParts(layers, user.data, user.loss)
    mc = model_config(config)
    return ModelParts(build_layers(mc), lambda step, j: make_microbatch(mc, step, j), loss_fn(mc))


def make_deferrable(module: nn.Module) -> nn.Module:
    """Swap every plain nn.Linear inside ``module`` for a DeferrableLinear sharing its weights,
    so zero bubble's W can run the weight-gradient matmuls of a user's model too."""
    if type(module) is nn.Linear:
        return _as_deferrable(module)
    for name, child in module.named_children():
        setattr(module, name, make_deferrable(child))
    return module


def _as_deferrable(linear: nn.Linear) -> DeferrableLinear:
    new = DeferrableLinear.__new__(DeferrableLinear)
    nn.Module.__init__(new)
    new.in_features, new.out_features = linear.in_features, linear.out_features
    new.weight = linear.weight
    new.bias = linear.bias
    return new
