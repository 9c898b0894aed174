"""Messages of torch's runtime through host memory, for ranks that share one GPU.

NCCL refuses two ranks of one communicator on one GPU, so ranks sharing a GPU join through
gloo (engine/device.py, ``Device.shared``), and gloo's send and receive hand the tensor's
``data_ptr()`` to its TCP transport: they take host memory only (a CUDA tensor fails there
with "writev ... Bad address", as the first try on an H200 showed). Our own runtime stages
such messages itself (engine/runtime/transport.py). torch's pipelining posts point-to-point
operations on CUDA tensors from several places (each action's sends and receives, its
set-up's warm-up and shape messages, which differ between torch versions), so in such a
rank's process ``route_through_host`` wraps torch.distributed's send, recv, isend and irecv
themselves: a CUDA tensor is sent from a host copy, and received into a host buffer that is
copied onto it when the receive is waited on (torch's runtime waits right before the action
that reads it). Host tensors pass through unchanged.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

CPU = torch.device("cpu")
NAMES = ("send", "recv", "isend", "irecv")


def on_gpu(tensor: torch.Tensor) -> bool:
    return tensor.device.type != "cpu"


class Landing:
    """A receive into a host buffer: waiting on it also copies the bytes onto the target."""

    def __init__(self, work, host: torch.Tensor, target: torch.Tensor):
        self.work, self.host, self.target = work, host, target
        self.landed = False

    def is_completed(self) -> bool:
        return self.work.is_completed()

    def wait(self, *args, **kwargs) -> bool:
        done = self.work.wait(*args, **kwargs)
        if not self.landed:
            self.target.copy_(self.host)
            self.landed = True
        return done


class HostRoute:
    """torch.distributed's four point-to-point calls, wrapped; ``undo`` puts them back."""

    def __init__(self, needs_host=on_gpu):
        self.needs_host = needs_host
        self.original = {name: getattr(c10d, name) for name in NAMES}
        self.copied_bytes = 0
        wrapped = {"send": self._send(self.original["send"]), "isend": self._send(self.original["isend"]),
                   "recv": self._recv(self.original["recv"], wait=True),
                   "irecv": self._recv(self.original["irecv"], wait=False)}
        for name, fn in wrapped.items():  # both names: P2POp checks ``op is isend`` against c10d's
            setattr(c10d, name, fn)
            setattr(dist, name, fn)

    def _send(self, original):
        def send(tensor, *args, **kwargs):
            if self.needs_host(tensor):
                tensor = tensor.detach().to(CPU)  # blocking: the bytes are there when gloo reads them
                self.copied_bytes += tensor.nbytes
            return original(tensor, *args, **kwargs)
        return send

    def _recv(self, original, wait: bool):
        def recv(tensor, *args, **kwargs):
            if not self.needs_host(tensor):
                return original(tensor, *args, **kwargs)
            host = torch.empty_like(tensor, device=CPU)
            self.copied_bytes += host.nbytes
            out = original(host, *args, **kwargs)
            if wait:  # recv returns once the bytes are there (the sender's rank)
                tensor.copy_(host)
                return out
            return Landing(out, host, tensor)
        return recv

    def undo(self) -> None:
        for name, fn in self.original.items():
            setattr(c10d, name, fn)
            setattr(dist, name, fn)


def route_through_host(device) -> HostRoute | None:
    """Wrap the calls where messages must go through host memory (CUDA ranks on gloo);
    None where the backend moves the tensors itself (gloo on CPU, NCCL)."""
    if device.kind != "cuda" or device.backend != "gloo":
        return None
    return HostRoute()
