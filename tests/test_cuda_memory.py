"""engine/runtime/cuda_memory.py: the parts of the CUDA allocator's peak, on a scripted
allocator (no GPU here): the parts add up to the peak, the activation share is the
allocator's counter beyond every named part, each storage counts once."""

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from pipelab.engine.runtime import cuda_memory as C
from pipelab.engine.runtime.memory import ActivationTracker

MIB = 2**20


def mib(n):
    return torch.zeros(int(n * MIB) // 4)  # float32: n MiB


def test_each_storage_counts_once_in_the_first_group_and_saved_ones_not_at_all():
    a, b, saved = mib(1), mib(2), mib(4)
    groups = {"x": [a, a[:10], None], "y": [a, b, saved, 3.0]}
    skip = {saved.untyped_storage().data_ptr()}
    assert C.unique_bytes(groups, skip) == {"x": MIB, "y": 2 * MIB}


PARTS = ("parameters", "gradients", "optimizer_state", "check_reference", "messages_and_inputs", "stage_outputs",
         "library_workspace", "setup_other", "activations", "temporaries")


def holding(allocated, saved=(), counted=0, **parts):
    """A moment's holding: ``parts`` name -> {storage: MiB}."""
    return C.Holding(allocated * MIB, {k: {p: n * MIB for p, n in parts.get(k, {}).items()} for k in C.KNOWN},
                     frozenset(saved), counted * MIB)


SETUP = {"library_workspace": 6 * MIB, "setup_other": 0}


@pytest.mark.parametrize("before, after, peak, received, backward, want", [
    # F: the peak stands after it. Its input (storage 2, a message before) is saved by then:
    # an activation, not a message too. 1 MiB of temporaries on top.
    (holding(18, parameters={1: 10}, messages_and_inputs={2: 2}),
     holding(21, saved={2, 3}, counted=3, parameters={1: 10}, stage_outputs={4: 2}), 22, {}, False,
     dict(activations=3, activations_counted=3, messages_and_inputs=0, stage_outputs=2, temporaries=1)),
    # B: the peak stands before it (its activations still held). Its gradients appear within
    # it; the gradient it received (storage 5) arrived during its interval and is used up.
    (holding(21, saved={2, 3}, counted=3, parameters={1: 10}, stage_outputs={4: 2}),
     holding(26, parameters={1: 10}, gradients={6: 10}), 38, {5: 2}, True,
     dict(activations=3, activations_counted=3, gradients=10, messages_and_inputs=2, stage_outputs=2,
          temporaries=5)),
])
def test_a_peak_is_split_into_parts_that_add_up_to_it(before, after, peak, received, backward, want):
    split = C.split_peak(before, after, peak * MIB, SETUP, "an action", {p: n * MIB for p, n in received.items()},
                         backward)
    assert sum(getattr(split, f) for f in PARTS) == split.peak == peak * MIB
    for name, value in want.items():
        assert getattr(split, name) == value * MIB, name


class Allocator:
    """torch.cuda's counters, scripted: ``now`` is what is allocated, ``high`` the peak."""

    def __init__(self, now):
        self.now = self.high = now

    def install(self, monkeypatch):
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: self.now)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: self.high)
        monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: setattr(self, "high", self.now))

    def to(self, now, high=0):
        self.now = now
        self.high = max(self.high, now, high)


def test_the_ledger_finds_the_peaks_action_and_names_what_the_engine_holds(monkeypatch):
    module = nn.Linear(512, 512)  # 1 MiB + 2 KiB of parameters
    params = sum(p.numel() * 4 for p in module.parameters())
    tracker = ActivationTracker(module.parameters())
    stage = SimpleNamespace(module=module, grad_accum={}, momentum={}, optimizer=None, inflight={})
    executor = SimpleNamespace(device=SimpleNamespace(torch_device=torch.device("cpu")), stages={0: stage},
                               tracker=tracker, captured_grads={}, _inputs={}, _targets={}, _mailbox=None)
    alloc = Allocator(params + 512)  # the parameters and 512 B more from set-up
    alloc.install(monkeypatch)
    monkeypatch.setattr(C, "measure_workspace", lambda device: alloc.to(alloc.now + 8 * MIB) or 8 * MIB)
    ledger = C.CudaMemoryLedger(executor)
    assert ledger.setup == {"library_workspace": 8 * MIB, "setup_other": 512}
    base = alloc.now
    executor._inputs[0] = x = mib(2)  # prefetched
    # F: saves its input and 1 MiB more, keeps a 1 MiB output, and had 5 MiB of temporaries.
    executor._inputs.pop(0)
    with tracker.track((0, 0)):
        tracker._saved.extend([x, mib(1)])
    stage.inflight[0] = (x, mib(1), None, 1.0)
    alloc.to(base + 4 * MIB, high=base + 9 * MIB)
    tracker.sample(0.0)
    ledger.mark("F 0")
    # B: frees the activations and output, makes the gradients; a smaller peak.
    stage.inflight.pop(0)
    for p in module.parameters():
        p.grad = torch.zeros_like(p)
    tracker.release((0, 0))
    alloc.to(base + params, high=base + 5 * MIB)
    ledger.mark("B 0", backward=True)
    peak, split = ledger.finish()
    assert split.at == "F 0" and peak == split.peak == base + 9 * MIB
    assert (split.parameters, split.activations, split.activations_counted) == (params, 3 * MIB, 3 * MIB)
    assert (split.stage_outputs, split.messages_and_inputs, split.gradients, split.temporaries) == (MIB, 0, 0, 5 * MIB)


def empty_stage_ledger(monkeypatch, mailbox=None):
    """(tracker, scripted allocator, ledger) of one stage with no parameters, nothing allocated."""
    tracker = ActivationTracker([])
    stage = SimpleNamespace(module=nn.Sequential(), grad_accum={}, momentum={}, optimizer=None, inflight={})
    executor = SimpleNamespace(device=SimpleNamespace(torch_device=torch.device("cpu")), stages={0: stage},
                               tracker=tracker, captured_grads={}, _inputs={}, _targets={}, _mailbox=mailbox)
    alloc = Allocator(0)
    alloc.install(monkeypatch)
    monkeypatch.setattr(C, "measure_workspace", lambda device: 0)
    return tracker, alloc, C.CudaMemoryLedger(executor)


def test_buffers_the_transport_holds_between_actions_are_messages_not_activations(monkeypatch):
    # A receive posted ahead (engine/runtime/comm.py, Mailbox.ahead) and a send not yet
    # completed each hold a message-sized wire buffer (engine/runtime/transport.py, _DistReceive,
    # _DistSend) that autograd never saw: on the GPU the last stage's share was one such buffer
    # above our count.
    posted, sending = SimpleNamespace(buf=mib(1)), SimpleNamespace(buf=mib(0.5))
    mailbox = SimpleNamespace(buffered={}, local={}, posted={0: [(("act", 1, 1), posted)]},
                              in_flight={0: [(3, sending)]})
    tracker, alloc, ledger = empty_stage_ledger(monkeypatch, mailbox)
    with tracker.track((0, 0)):
        tracker._saved.append(mib(2))  # what F saved
    alloc.to(3.5 * MIB)  # F's activations and the two wire buffers
    ledger.mark("F 0")
    _, split = ledger.finish()
    assert (split.messages_and_inputs, split.activations, split.activations_counted) == (1.5 * MIB, 2 * MIB, 2 * MIB)


def test_a_backwards_input_gradient_read_before_it_is_sent_is_a_message_not_an_activation(monkeypatch):
    # The executor reads the allocator right after an I, before it sends the input gradient
    # I made; the next backward (W) stands on that reading. Left unnamed, the gradient sat in
    # W's activation share: on the GPU, zero-bubble ranks held more between I and W than we count.
    tracker, alloc, ledger = empty_stage_ledger(monkeypatch)
    with tracker.track((0, 0)):
        tracker._saved.append(mib(2))  # what W still needs after I
    grad_in = mib(1)
    alloc.to(3 * MIB)  # W's 2 MiB and the input gradient, not sent yet
    ledger.mark("I 0", backward=True, outgoing=grad_in)
    alloc.to(2 * MIB, high=6 * MIB)  # sent; W's peak stands on the reading after I
    ledger.mark("W 0", backward=True)
    _, split = ledger.finish()
    assert split.at == "W 0"
    assert (split.messages_and_inputs, split.activations, split.activations_counted) == (MIB, 2 * MIB, 2 * MIB)
