"""engine/runtime/post_validation.py and Stage.redo: the step check's verdict, and a rollback that
leaves exactly what the right update would have."""

import math

import pytest
import torch
from torch import nn

from pipelab.engine.runtime.memory import ActivationTracker
from pipelab.engine.runtime.post_validation import NO_CLIP, GradState, grad_state, scale_for
from pipelab.engine.runtime.stage import Stage
from pipelab.engine.runtime.weight_grad import WeightGradStore

#   global state (sum of squares, non-finite)   clip        scale (None: skip)
VERDICTS = [
    (GradState(4.0),                             1.0,        1.0 / (2.0 + 1e-6)),   # norm 2 > 1: clipped
    (GradState(0.25),                            1.0,        1.0),                  # norm 0.5: as is
    (GradState(4.0),                             NO_CLIP,    1.0),                  # inf: never clips
    (GradState(4.0, nonfinite=True),             1.0,        None),                 # skipped
    (GradState(math.inf),                        NO_CLIP,    None),                 # an overflowed norm too
]


@pytest.mark.parametrize("state, clip, scale", VERDICTS)
def test_the_verdict_is_torchs_clip_grad_norm_or_a_skip(state, clip, scale):
    assert scale_for(state, clip) == (pytest.approx(scale) if scale is not None else None)


def test_the_verdict_matches_torch_clip_grad_norm():
    params = [nn.Parameter(torch.randn(5)), nn.Parameter(torch.randn(3, 2))]
    for p in params:
        p.grad = torch.randn_like(p) * 3
    before_clip = [p.grad.clone() for p in params]
    scale = scale_for(grad_state(params), 0.5)
    torch.nn.utils.clip_grad_norm_(params, 0.5)
    for p, before in zip(params, before_clip):
        assert torch.allclose(before * scale, p.grad, rtol=1e-6)


def test_partial_states_add_up_and_remember_an_optimistic_update():
    total = GradState(1.0) + GradState(2.0, optimistic=True) + GradState(0.5, nonfinite=True)
    assert total == GradState(3.5, nonfinite=True, optimistic=True)


def stage_with_grads(seed):
    torch.manual_seed(seed)
    module = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    stage = Stage(0, module, is_first=True, is_last=False, loss_fn=None, grad_store=WeightGradStore(),
                  tracker=ActivationTracker(module.parameters()), lr=0.1)
    return stage


def set_grads(stage, step):
    torch.manual_seed(100 + step)
    for p in stage.module.parameters():
        p.grad = torch.randn_like(p)


@pytest.mark.parametrize("scale", [0.5, None])
def test_redo_leaves_what_the_right_update_would_have(scale):
    right, wrong = stage_with_grads(0), stage_with_grads(0)
    for step in range(3):  # momentum buffers exist from the first update on
        set_grads(right, step), set_grads(wrong, step)
        if step < 2:
            right.update(), wrong.update()
            continue
        right.update(scale)
        wrong.snapshot()
        wrong.update(1.0)  # optimistic
        wrong.redo(scale)
    for a, b in zip(right.module.parameters(), wrong.module.parameters()):
        assert torch.equal(a, b)
    for a, b in zip(right.module.parameters(), wrong.module.parameters()):
        assert torch.equal(right.optimizer.state[a]["momentum_buffer"], wrong.optimizer.state[b]["momentum_buffer"])
