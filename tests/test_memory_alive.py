"""Our activation count against the tensors a stage really keeps alive, between actions.

The tracker (engine/runtime/memory.py) counts what autograd saves during F and, after a
split backward's I, what W's queue holds. Here the truth is recounted from what the stage
holds: every tensor saved in the autograd graphs of its in-flight micro-batches (walked node
by node, the loss's nodes included) and every tensor W's queued closures capture (their
closure cells, not the list they declare), each storage once, parameters left out. On the
GPU the allocator's activation share is set beside the same count (bench/gpu_check.py)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD
from pipelab.engine.model.builtin import ModelConfig, build_layers
from pipelab.engine.runtime.memory import ActivationTracker
from pipelab.engine.runtime.stage import Stage
from pipelab.engine.runtime.weight_grad import WeightGradStore, attach_grad_store

HIDDEN, ROWS = 32, 8


def storage_of(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def graph_tensors(root: torch.Tensor):
    """Every tensor saved by the autograd graph behind ``root`` (custom Functions included)."""
    stack, seen = [root.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if name.startswith("_saved_"):
                value = getattr(node, name)
                yield from (value if isinstance(value, (tuple, list)) else [value])
        if hasattr(node, "saved_tensors"):  # a custom autograd.Function's ctx
            yield from node.saved_tensors
        stack += [f for f, _ in node.next_functions]


def queued_tensors(store: WeightGradStore):
    """Every tensor W's queued closures capture, read from the closures themselves."""
    for queue in store._queues.values():
        for work, _ in queue:
            for cell in work.__closure__ or ():
                yield cell.cell_contents


def alive_bytes(stage: Stage) -> int:
    params = {storage_of(p)[0] for p in stage.module.parameters()}
    found = {}
    held = [t for x, out, *_ in stage.inflight.values() if out is not None for t in graph_tensors(out)]
    kept = held + list(queued_tensors(stage.grad_store))
    # A stage input's gradient lives as long as the input does (parameters' are gradients, not activations).
    kept += [t.grad for t in kept if torch.is_tensor(t) and t.is_leaf and not isinstance(t, nn.Parameter)
             and t.grad is not None]
    for t in kept:
        if torch.is_tensor(t) and t.dim() > 0:  # not the loss scale, a wrapped Python number
            ptr, nbytes = storage_of(t)
            if ptr not in params:
                found[ptr] = nbytes
    return sum(found.values())


def make_stage(is_last: bool, split: bool) -> Stage:
    config = ModelConfig(kind="mlp", layers=4, hidden=HIDDEN, heads=2, seq_len=8, microbatch_size=ROWS, seed=0)
    module = nn.Sequential(*build_layers(config)[2:])
    store = WeightGradStore()
    if split:
        attach_grad_store(module, store)
    tracker = ActivationTracker(module.parameters())
    return Stage(1, module, is_first=False, is_last=is_last, loss_fn=F.mse_loss, grad_store=store,
                 tracker=tracker, lr=0.1)


def play(stage: Stage, order: str) -> list[tuple[str, int, int]]:
    """Run ``order`` (e.g. "F0 F1 B0") on ``stage``; after each action, (action, ours, alive)."""
    gen = torch.Generator().manual_seed(0)
    rows = []
    for action in order.split():
        kind, j = action[0], int(action[1:])
        if kind == FORWARD:
            x, target = torch.randn(ROWS, HIDDEN, generator=gen), torch.randn(ROWS, HIDDEN, generator=gen)
            stage.forward(j, x, target, 0.5)
        elif kind in (BACKWARD, BACKWARD_INPUT):
            grad = None if stage.is_last else torch.randn(ROWS, HIDDEN, generator=gen)
            stage.backward(j, grad, split=kind == BACKWARD_INPUT)
        elif kind == BACKWARD_WEIGHT:
            stage.weight_grad(j)
        stage.account(kind, j)
        rows.append((action, stage.tracker.live_bytes(), alive_bytes(stage)))
    return rows


@pytest.mark.parametrize(("schedule", "is_last", "split", "order"), [
    # schedule  last stage  split  one rank's actions
    ("1f1b",    True,       False, "F0 B0 F1 B1 F2 B2"),
    ("gpipe",   True,       False, "F0 F1 F2 B0 B1 B2"),
    ("zb-h1",   True,       True,  "F0 I0 F1 I1 W0 F2 I2 W1 W2"),
    ("zb-h1",   False,      True,  "F0 F1 I0 F2 I1 W0 I2 W1 W2"),
])
def test_our_count_is_what_the_stage_keeps_alive_after_every_action(schedule, is_last, split, order):
    rows = play(make_stage(is_last, split), order)
    assert max(alive for _, _, alive in rows) > 0  # the recount sees something to compare
    for action, ours, alive in rows:
        assert ours == alive, f"{schedule}, after {action}: counted {ours} B, alive {alive} B"
