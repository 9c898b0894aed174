"""Your own nn.Sequential on the engine, from a script: ``pipelab.engine.run_pipeline``.

The long form is ``pipelab.engine.runtime.launch.run(RunConfig(...), model=UserModel(layers,
data, loss))`` with a data function of your own; here one mini-batch of tensors is split into
the micro-batches, so a script needs no function of its own to pickle.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, fields
from typing import Callable

import torch
from torch import nn
from torch.nn import functional

from pipelab.engine.config import SEQUENTIAL, ConfigError, RunConfig
from pipelab.engine.errors import Message
from pipelab.engine.model.parts import UserModel
from pipelab.engine.runtime.launch import run


@dataclass(frozen=True)
class MiniBatch:
    """(step, micro-batch) -> that micro-batch's rows; every step trains on the same mini-batch.

    A top-level class, so the rank processes receive it by pickling (UserModel.data)."""

    inputs: torch.Tensor
    targets: torch.Tensor
    microbatches: int

    def __call__(self, step: int, microbatch: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.inputs.shape[0] // self.microbatches
        chosen = slice(microbatch * rows, (microbatch + 1) * rows)
        return self.inputs[chosen], self.targets[chosen]


def run_pipeline(layers: nn.Sequential, inputs: torch.Tensor, targets: torch.Tensor,
                 loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = functional.mse_loss, **settings):
    """Train ``layers`` on ``inputs`` -> ``targets`` with a pipeline schedule; returns the RunResult.

    ``settings`` are RunConfig's fields: ``schedule``, ``stages``, ``microbatches``, ``chunks``,
    ``steps``, ``check`` (compare with one process), ``data_parallel`` (d pipelines side by side,
    each training 1/d of the rows), ``replicas`` (PipeDream's replicated stages, (2, 1, 1): the
    rows split into ``microbatches`` that go round-robin over a stage's workers),
    ``stage_layers`` (layers per stage, as a plan cut them), ... (``pipelab run --help``). ``loss`` must
    be picklable (a top-level function such as torch's). Call it under
    ``if __name__ == "__main__":``: the ranks start from a forkserver, which imports your script.
    """
    if not isinstance(layers, nn.Sequential):  # its layers are what the stages split
        raise ConfigError(Message.plain(f"run_pipeline splits an nn.Sequential into stages, got "
                                        f"{type(layers).__name__}: wrap it as nn.Sequential(...)"))
    if not (isinstance(inputs, torch.Tensor) and isinstance(targets, torch.Tensor)):
        raise ConfigError(Message.plain(f"inputs and targets must be tensors, got {type(inputs).__name__} and "
                                        f"{type(targets).__name__}"))
    try:  # the ranks receive it pickled: a lambda or a nested function fails there, in pickle's words
        pickle.dumps(loss)
    except (pickle.PicklingError, AttributeError, TypeError):
        name = getattr(loss, "__qualname__", type(loss).__name__)
        raise ConfigError(Message.plain(f"loss must be picklable, a function defined at the top level of a module "
                                        f"(as torch's are), got {name}")) from None
    unknown = sorted(set(settings) - {f.name for f in fields(RunConfig)})
    if unknown:
        raise ConfigError(Message.plain(f"unknown setting {', '.join(map(repr, unknown))}: run_pipeline takes "
                                        "RunConfig's fields (pipelab run --help)"))
    config = RunConfig(**settings)
    config.with_(model=SEQUENTIAL, layers=len(layers)).check_values()  # a bad value in one line, before the split
    rows = inputs.shape[0]
    # With data_parallel=d the rows are the global batch: d replicas of m micro-batches each.
    split = config.global_microbatches
    if rows != targets.shape[0] or rows % split:
        raise ConfigError(Message.plain(f"inputs and targets need the same number of rows, a multiple of "
                                        f"data_parallel x microbatches ({split}); got {rows} and {targets.shape[0]}"))
    return run(config, model=UserModel(layers, MiniBatch(inputs, targets, split), loss))
