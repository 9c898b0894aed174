"""What holds the CUDA allocator's peak on one rank (issue 37).

``torch.cuda.max_memory_allocated`` counts every byte a rank's process allocated on the GPU;
our own count (engine/runtime/memory.py) only what autograd saves for the backward plus the
parameters, gradients and optimizer state. On the first GPU run the allocator's peak was
2-4x our count. This ledger says what the rest is, by measuring:

- after every action it reads the allocator's counter and its peak since the last action,
  then starts the peak afresh (``reset_peak_memory_stats``): the largest of those peaks is
  the run's peak, and it fell inside one action;
- two amounts come from the allocator at set-up: what it held before the first action
  beyond the parameters, and what one tiny forward and backward matmul added, cuBLAS's
  workspace (one per thread that runs matmuls, kept for the process's life);
- the tensors the engine itself holds are found by identity (parameters, gradients,
  optimizer state, the check's copy of step 0's gradients, received messages and prefetched
  inputs, the transport's wire buffers (receives posted ahead, sends in flight), a
  backward's input gradient not yet sent, stage
  outputs kept for a backward), each storage once; storages autograd saved for a backward
  are left to the activation share;
- around the peak's action, the allocator's counter beyond all of that is its activation
  share, set beside our saved-tensor count at the same moment; what the action allocated
  beyond what lived before or after it is its temporaries.

The parts add up to the peak by construction; the activation share agreeing with our count
is what says nothing else was left unnamed (bench/gpu_check.py reports both).
Nothing here runs on CPU: the executor makes a ledger only for a CUDA device.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from pipelab.engine.results.records import CudaPeakBreakdown

KNOWN = ("parameters", "gradients", "optimizer_state", "check_reference", "messages_and_inputs", "stage_outputs")
"""The parts found by identity, in the order a storage is given to the first that holds it."""


@dataclass(frozen=True)
class Holding:
    """The device at one moment between two actions."""
    allocated: int
    """The allocator's counter."""
    parts: dict[str, dict[int, int]]
    """Per part found by identity: storage data pointer -> bytes."""
    saved: frozenset
    """Storages autograd saved for a backward (our activation count's)."""
    activations_counted: int

    def known_bytes(self) -> int:
        return sum(sum(part.values()) for part in self.parts.values())


def storages(groups: dict[str, list], skip: set[int]) -> dict[str, dict[int, int]]:
    """Per group, its tensors' storages (data pointer -> bytes), each storage in the first
    group that holds it only, and none in ``skip``."""
    seen = set(skip)
    out = {}
    for name, tensors in groups.items():
        found = {}
        for t in tensors:
            if t is None or not torch.is_tensor(t):
                continue
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            if ptr in seen or not storage.nbytes():
                continue
            seen.add(ptr)
            found[ptr] = storage.nbytes()
        out[name] = found
    return out


def unique_bytes(groups: dict[str, list], skip: set[int]) -> dict[str, int]:
    """Bytes per group, as ``storages`` counts them."""
    return {name: sum(found.values()) for name, found in storages(groups, skip).items()}


def split_peak(before: Holding, after: Holding, peak: int, setup: dict[str, int], at: str,
               received: dict[int, int] | None = None, backward: bool = False) -> CudaPeakBreakdown:
    """The breakdown of a peak inside one action, from the holdings around it.

    The peak stands on the moment before a backward (B, I, W: its activations are freed as it
    ends, its gradients are made within it) and after any other action (a forward's
    activations are made within it). A part found by identity
    holds every storage it held on either side (a backward's first gradients appear within
    it; a received message is used up within it) and the messages that arrived during the
    action's interval (``received``), each storage once, except those autograd had saved on
    the standing side: an input the forward saved is an activation there, not a message.
    The activation share is the allocator's counter on the standing side beyond that side's
    known parts and set-up's; the temporaries are the rest of the peak."""
    base = before if backward else after
    seen = set(base.saved)
    known = {}
    for name in KNOWN:
        merged = {**before.parts[name], **after.parts[name]}
        if name == "messages_and_inputs":
            merged.update(received or {})
        known[name] = sum(n for ptr, n in merged.items() if ptr not in seen)
        seen |= merged.keys()
    activations = base.allocated - base.known_bytes() - sum(setup.values())
    temporaries = peak - sum(known.values()) - sum(setup.values()) - activations
    return CudaPeakBreakdown(peak=peak, at=at, **known, **setup, activations=activations,
                             activations_counted=base.activations_counted, temporaries=temporaries)


class CudaMemoryLedger:
    """One rank's allocator readings; ``mark`` after every action, ``finish`` at the end."""

    def __init__(self, executor):
        self.executor = executor
        self.device = executor.device.torch_device
        params = [p for st in executor.stages.values() for p in st.module.parameters()]
        self.parameter_bytes = unique_bytes({"p": params}, set())["p"]
        self.peak = torch.cuda.max_memory_allocated(self.device)  # set-up's own, before the first reset
        start = torch.cuda.memory_allocated(self.device)
        workspace = measure_workspace(self.device)
        self.setup = {"library_workspace": workspace, "setup_other": start - self.parameter_bytes}
        torch.cuda.reset_peak_memory_stats(self.device)
        self.outgoing: torch.Tensor | None = None  # the marked action's result, still to be sent
        self.last = self.holding()
        self.breakdown: CudaPeakBreakdown | None = None
        self.received: list[torch.Tensor] = []  # messages received since the last mark

    def note_received(self, tensor: torch.Tensor) -> None:
        self.received.append(tensor)

    def holding(self) -> Holding:
        ex = self.executor
        tracker = ex.tracker
        tracker.commit()
        stages = ex.stages.values()
        mailbox = getattr(ex, "_mailbox", None)
        messages = list(ex._inputs.values()) + list(ex._targets.values())
        if mailbox is not None:
            messages += [t for t, _ in mailbox.buffered.values()] + [t for t, _ in mailbox.local.values()]
            # Wire buffers the transport holds between actions: receives posted ahead and sends
            # not yet completed (engine/runtime/transport.py keeps each one's ``buf`` alive).
            messages += [getattr(work, "buf", None) for queue in mailbox.posted.values() for _, work in queue]
            messages += [getattr(work, "buf", None) for flight in mailbox.in_flight.values() for _, work in flight]
        # A backward's input gradient, read here before the executor sends it: left unnamed it
        # stood in the next backward's activation share (I then W on a zero-bubble rank).
        messages.append(self.outgoing)
        groups = {
            "parameters": [p for st in stages for p in st.module.parameters()],
            "gradients": [p.grad for st in stages for p in st.module.parameters()]
            + [g for st in stages for g in st.grad_accum.values()],
            "optimizer_state": [v for st in stages if st.optimizer is not None for s in st.optimizer.state.values()
                                for v in s.values()] + [m for st in stages for m in st.momentum.values()],
            "check_reference": list(ex.captured_grads.values()),
            "messages_and_inputs": messages,
            "stage_outputs": [t for st in stages for held in st.inflight.values() for t in held[:3]],
        }
        saved = frozenset(tracker.holders)
        return Holding(torch.cuda.memory_allocated(self.device), storages(groups, saved), saved, tracker.live)

    def mark(self, at: str, backward: bool = False, outgoing: torch.Tensor | None = None) -> None:
        """After an action (``at`` names it; ``backward``: B, I or W): read the allocator,
        start its peak afresh. ``outgoing``: the gradient a B or I made for the previous
        stage, alive until it is sent: a message, not an activation."""
        peak = torch.cuda.max_memory_allocated(self.device)
        self.outgoing = outgoing
        now = self.holding()
        self.outgoing = None
        torch.cuda.reset_peak_memory_stats(self.device)
        received = storages({"r": self.received}, set())["r"]
        self.received.clear()
        if self.breakdown is None or peak > self.breakdown.peak:
            self.breakdown = split_peak(self.last, now, peak, self.setup, at, received, backward)
        self.peak = max(self.peak, peak)
        self.last = now

    def finish(self) -> tuple[int, CudaPeakBreakdown | None]:
        """(the run's allocator peak, what held it)."""
        self.mark("after the last action")
        if self.breakdown is not None and self.breakdown.peak < self.peak:  # the peak was in set-up
            return self.peak, replace(self.breakdown, at="set-up")
        return self.peak, self.breakdown


def measure_workspace(device: torch.device) -> int:
    """Bytes one small linear layer's forward and backward leave allocated: cuBLAS's
    workspaces for this thread and autograd's (torch keeps one per handle and stream, in
    its caching allocator). The run's own matmuls would allocate them at their first use."""
    before = torch.cuda.memory_allocated(device)
    with torch.enable_grad():
        w = torch.zeros(16, 16, device=device, requires_grad=True)
        b = torch.zeros(16, device=device, requires_grad=True)
        torch.nn.functional.linear(torch.zeros(4, 16, device=device), w, b).sum().backward()
    del w, b
    return torch.cuda.memory_allocated(device) - before
