"""A stage's actions compute; its memory bookkeeping waits for Stage.account, which the
executor calls after the action's stopwatch stops (engine/runtime/memory.py)."""

import pytest
import torch
from torch import nn

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD
from pipelab.engine.model.parts import make_deferrable
from pipelab.engine.runtime.memory import ActivationTracker
from pipelab.engine.runtime.stage import Stage
from pipelab.engine.runtime.weight_grad import WeightGradStore, attach_grad_store


def middle_stage(recompute: bool = False, split: bool = False, hidden: int = 8) -> Stage:
    """A stage between two others: Linear(8, hidden), GELU, Linear(hidden, 8)."""
    torch.manual_seed(0)
    module = make_deferrable(nn.Sequential(nn.Linear(8, hidden), nn.GELU(), nn.Linear(hidden, 8)))
    store = WeightGradStore()
    if split:
        attach_grad_store(module, store)
    return Stage(1, module, is_first=False, is_last=False, loss_fn=None, grad_store=store,
                 tracker=ActivationTracker(module.parameters()), lr=0.1, recompute=recompute)


@pytest.mark.parametrize("recompute", [False, True])
def test_forward_books_its_activations_only_when_accounted(recompute):
    stage = middle_stage(recompute)
    x = torch.randn(4, 8)
    stage.forward(0, x, None, 1.0)
    assert stage.tracker.held == {} and stage.activation_bytes == 0
    stage.account(FORWARD, 0)
    saved = stage.tracker.bytes_of((1, 0))
    # Recompute keeps only the input; otherwise autograd keeps more than the input.
    assert saved == x.nbytes if recompute else saved > x.nbytes
    assert stage.activation_bytes == saved == stage.tracker.live_bytes()


@pytest.mark.parametrize("kinds, held_at_end", [
    ((BACKWARD,), False),                          # B frees the micro-batch's activations
    ((BACKWARD_INPUT,), True),                     # I leaves W's inputs queued ...
    ((BACKWARD_INPUT, BACKWARD_WEIGHT), False),    # ... until W runs
])
def test_backward_and_w_free_what_forward_held_when_accounted(kinds, held_at_end):
    stage = middle_stage(split=BACKWARD_INPUT in kinds)
    stage.forward(0, torch.randn(4, 8), None, 1.0)
    stage.account(FORWARD, 0)
    held = stage.tracker.live_bytes()
    stage.backward(0, torch.ones(4, 8), split=kinds[0] == BACKWARD_INPUT)
    assert stage.tracker.live_bytes() == held  # nothing is counted inside the action
    stage.account(kinds[0], 0)
    assert stage.weight_grad_bytes == (stage.tracker.live_bytes() if kinds[0] == BACKWARD_INPUT else 0)
    for kind in kinds[1:]:
        stage.weight_grad(0)
        stage.account(kind, 0)
    assert (stage.tracker.live_bytes() > 0) == held_at_end


def test_an_update_is_one_fused_momentum_sgd_step_with_the_for_loop_s_result():
    # One pass over the parameters (the update is memory-bound, and on an overlapped
    # step's path); the same arithmetic as torch's for-loop SGD, to float rounding.
    stage = middle_stage()
    assert stage.optimizer.defaults["fused"]
    plain = [p.detach().clone().requires_grad_(True) for p in stage.module.parameters()]
    loop = torch.optim.SGD(plain, lr=0.1, momentum=0.9)
    for _ in range(3):
        for p, q in zip(stage.module.parameters(), plain):
            q.grad = torch.randn_like(q)
            p.grad = q.grad.clone()
        stage.update()
        loop.step()
        loop.zero_grad(set_to_none=True)
    for p, q in zip(stage.module.parameters(), plain):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
        assert p.grad is None  # zeroed (set to None) by the update
