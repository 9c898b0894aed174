"""engine/user_run.py: ``run_pipeline`` trains a user's own nn.Sequential in every layout a job
runs (one pipeline, pipelines side by side, a replicated stage), matching one process, and
refuses a batch that does not split in one line."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pipelab.engine import run_pipeline
from pipelab.engine.config import ConfigError

pytestmark = pytest.mark.slow  # every run starts its ranks


def square(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """A loss of the user's own, defined at top level so the ranks can unpickle it."""
    return ((x - y) ** 2).mean()


def nested_loss():
    """A loss defined inside a function, as a script's main() might: the ranks cannot unpickle it."""
    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x - y).abs().mean()
    return loss


def users_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8), nn.ReLU(), nn.Linear(8, 1))


@pytest.mark.parametrize("layout, processes, layer_ranges", [
    (dict(stages=2, microbatches=2, data_parallel=2), 4, ((0, 1), (1, 5))),  # split by parameters
    (dict(stages=3, microbatches=4, replicas=(2, 1, 1), stage_layers=(2, 2, 1)), 4, ((0, 2), (2, 4), (4, 5))),
])
def test_run_pipeline_trains_a_users_model_as_one_process_would(layout, processes, layer_ranges):
    x = torch.randn(16, 8, generator=torch.Generator().manual_seed(1))
    result = run_pipeline(users_model(), x, x.sum(1, keepdim=True), loss=square, schedule="1f1b",
                          check=True, steps=2, **layout)
    assert result.check.grad_max_rel_diff <= 1e-5
    assert result.check.replica_weight_max_diff in (None, 0.0)  # replicas stay bit-identical
    assert result.all_processes_timeline().num_ranks == processes and result.layer_ranges == layer_ranges


def test_a_batch_that_does_not_split_over_the_replicas_is_refused_in_one_line():
    x = torch.randn(12, 8)
    with pytest.raises(ConfigError, match=r"a multiple of data_parallel x microbatches \(8\)"):
        run_pipeline(users_model(), x, x.sum(1, keepdim=True), loss=square, stages=2, microbatches=4,
                     data_parallel=2)


@pytest.mark.parametrize("call, says", [
    # Each was a traceback or a bare Python error before any rank started (ZeroDivisionError,
    # "object of type 'Linear' has no len()", an unexpected keyword).
    (lambda x: run_pipeline(nn.Linear(8, 1), x, x[:, :1], stages=2, microbatches=2),
     "run_pipeline splits an nn.Sequential into stages, got Linear: wrap it as nn.Sequential(...)"),
    (lambda x: run_pipeline(users_model(), x.tolist(), x[:, :1], stages=2, microbatches=2),
     "inputs and targets must be tensors, got list and Tensor"),
    (lambda x: run_pipeline(users_model(), x, x[:, :1], stages=2, microbatches=2, data_parallel=0),
     "data-parallel must be a whole number >= 1, got 0"),
    (lambda x: run_pipeline(users_model(), x, x[:, :1], stages=2, microbatches=0),
     "microbatches must be a whole number >= 1, got 0"),
    (lambda x: run_pipeline(users_model(), x, x[:, :1], loss=nested_loss(), stages=2, microbatches=2),
     "loss must be picklable, a function defined at the top level of a module (as torch's are), got "
     "nested_loss.<locals>.loss"),  # was pickle's own error, once the ranks were starting
    (lambda x: run_pipeline(users_model(), x, x[:, :1], stages=2, microbatches=2, stage=3),
     "unknown setting 'stage': run_pipeline takes RunConfig's fields (pipelab run --help)"),
    (lambda x: run_pipeline(users_model(), x, x[:, :1], stages=6, microbatches=2),
     "6 stages (p=6 x v=1) need at least as many layers, but the sequential model has 5: raise the layers or "
     "lower the stages"),
])
def test_a_call_that_cannot_run_is_refused_in_one_line_before_any_rank_starts(call, says):
    with pytest.raises(ConfigError) as refused:
        call(torch.randn(8, 8))
    assert str(refused.value) == says
