"""Activation memory: what autograd saves, each storage once, kept up to date per action."""

import torch
from torch import nn

from pipelab.engine.runtime.memory import ActivationTracker


def brute_force(tracker: ActivationTracker) -> int:
    """Bytes of distinct held storages plus extra, recounted from scratch."""
    unique = {}
    for held in tracker.held.values():
        unique.update(held)
    return sum(unique.values()) + sum(tracker.extra.values())


def test_saved_activations_are_counted_and_parameters_are_not():
    layer = nn.Linear(8, 8)
    tracker = ActivationTracker(layer.parameters())
    x = torch.randn(4, 8, requires_grad=True)
    with tracker.track(("s0", 0)):
        y = torch.relu(layer(x))  # saves x (input of the matmul) and y (relu's output)
    tracker.sample(1.0)
    assert tracker.live_bytes() == x.nbytes + y.nbytes
    assert tracker.peak == x.nbytes + y.nbytes
    tracker.release(("s0", 0))
    tracker.sample(2.0)
    assert tracker.live_bytes() == 0 and tracker.samples[-1] == (2.0, 0)


def test_the_hook_only_notes_what_autograd_saves_and_commit_counts_it():
    # Counting is the executor's work after the action (Stage.account), not the action's.
    layer = nn.Linear(8, 8)
    tracker = ActivationTracker(layer.parameters())
    x = torch.randn(4, 8, requires_grad=True)
    with tracker.track("a"):
        layer(x)
    assert tracker.held == {} and tracker.live == 0
    tracker.commit()
    assert tracker.held == {"a": {x.untyped_storage().data_ptr(): x.nbytes}}
    assert tracker.live == x.nbytes


def test_tracking_a_new_key_books_the_noted_tensors_to_the_old_one():
    tracker = ActivationTracker([])
    a, b = torch.randn(4, requires_grad=True), torch.randn(16, requires_grad=True)
    with tracker.track("a"):
        a.exp()  # saves its result
    with tracker.track("b"):
        b.exp()
    assert tracker.bytes_of("a") == a.nbytes and tracker.bytes_of("b") == b.nbytes
    tracker.release("a")
    assert tracker.live_bytes() == b.nbytes


def test_a_storage_held_by_two_keys_counts_once_until_both_release():
    tracker = ActivationTracker([])
    shared = torch.zeros(16)
    tracker.keep("a", shared)
    tracker.keep("b", shared[:4])  # a view: same storage
    assert tracker.live_bytes() == shared.nbytes
    tracker.release("a")
    assert tracker.live_bytes() == shared.nbytes
    tracker.release("b")
    assert tracker.live_bytes() == 0


def test_bytes_still_held_after_release_are_counted_until_released_again():
    tracker = ActivationTracker([])
    tracker.keep("a", torch.zeros(10))
    tracker.release("a", still_held=24)  # e.g. W's queued inputs
    assert tracker.live_bytes() == 24
    tracker.release("a")
    assert tracker.live_bytes() == 0


def test_running_total_matches_a_recount_after_any_sequence():
    gen = torch.Generator().manual_seed(0)
    tensors = [torch.zeros(int(n)) for n in torch.randint(1, 50, (12,), generator=gen)]
    tracker = ActivationTracker([])
    for step in range(300):
        key = int(torch.randint(0, 6, (1,), generator=gen))
        action = int(torch.randint(0, 3, (1,), generator=gen))
        if action == 0:
            tracker.keep(key, tensors[int(torch.randint(0, 12, (1,), generator=gen))])
        elif action == 1:
            tracker.release(key)
        else:
            tracker.release(key, still_held=int(torch.randint(0, 100, (1,), generator=gen)))
        assert tracker.live_bytes() == brute_force(tracker), step
