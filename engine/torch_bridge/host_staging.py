"""Messages of torch's runtime through host memory, for ranks that share one GPU.

NCCL refuses two ranks of one communicator on one GPU, so ranks sharing a GPU join through
gloo (engine/device.py, ``Device.shared``), and gloo's send and receive read and write the
tensor's memory as host memory: they take CPU tensors only (ProcessGroupGloo::send hands
``data_ptr()`` to its TCP transport). Our own runtime stages such messages itself
(engine/runtime/transport.py). torch's ``PipelineStage`` posts its sends and receives on
its own CUDA buffers, so here each P2P operation it asks for is swapped for one on a host
copy: a send copies the tensor off the GPU first, a receive lands in a host buffer that is
copied onto the stage's CUDA buffer just before the action that reads it (torch's runtime
waits a receive right before that action: RECV_F before FORWARD, RECV_B before the backward).
"""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist

CPU = torch.device("cpu")


class HostStaging:
    """Wraps one stage's get_*_ops; ``land(kind, j)`` copies what arrived for action
    ``kind`` ("F" or "B") of micro-batch j onto the GPU."""

    def __init__(self, stage):
        self.pending: dict[tuple[str, int], list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self.copied_bytes = 0
        for name, kind in (("get_fwd_recv_ops", "F"), ("get_bwd_recv_ops", "B")):
            setattr(stage, name, self._receiving(getattr(stage, name), kind))
        for name in ("get_fwd_send_ops", "get_bwd_send_ops"):
            setattr(stage, name, self._sending(getattr(stage, name)))

    def _receiving(self, original, kind: str):
        def ops(j: int) -> list[dist.P2POp]:
            staged = []
            for op in original(j):
                host = torch.empty_like(op.tensor, device=CPU)
                self.pending.setdefault((kind, j), []).append((host, op.tensor))
                staged.append(on_tensor(op, host))
            return staged
        return ops

    def _sending(self, original):
        def ops(j: int) -> list[dist.P2POp]:
            staged = []
            for op in original(j):
                host = op.tensor.detach().to(CPU)  # a blocking copy: the bytes are there when gloo reads them
                self.copied_bytes += host.nbytes
                staged.append(on_tensor(op, host))
            return staged
        return ops

    def land(self, kind: str, j: int) -> None:
        for host, target in self.pending.pop((kind, j), ()):
            target.copy_(host)
            self.copied_bytes += host.nbytes


def on_tensor(op: dist.P2POp, tensor: torch.Tensor) -> dist.P2POp:
    """The same operation (peer, group, tag as torch set them) on another tensor."""
    staged = copy.copy(op)
    staged.tensor = tensor
    return staged


def stage_through_host(stages, device) -> dict[int, HostStaging]:
    """Per stage index, its HostStaging where messages must go through host memory (CUDA
    ranks on gloo); empty where the backend moves the tensors itself (gloo on CPU, NCCL)."""
    if device.kind != "cuda" or device.backend != "gloo":
        return {}
    return {stage.stage_index: HostStaging(stage) for stage in stages}
