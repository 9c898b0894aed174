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
that reads it). Host tensors pass through unchanged. A message a rank sends itself (torch's
warm-up on a CUDA device greets each stage's neighbours, and in a V-shaped placement the
neighbour of the turning stage is on the same rank) is handed over in memory: gloo has no
pair from a rank to itself ("Pair is not connected", on the same H200).
"""

from __future__ import annotations

from collections import deque

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
            with torch.no_grad():  # torch's receive buffer can be a leaf that requires grad
                self.target.copy_(self.host)
            self.landed = True
        return done


class Done:
    """A finished operation: a message to oneself, handed over in memory."""

    def is_completed(self) -> bool:
        return True

    def wait(self, *args, **kwargs) -> bool:
        return True


class FromSelf:
    """A receive of a message this rank sends itself; it lands when waited on (every
    operation of a batch is posted before any is waited on, so the send is there)."""

    def __init__(self, queue: deque, target: torch.Tensor):
        self.queue, self.target = queue, target
        self.landed = False

    def is_completed(self) -> bool:
        return self.landed or bool(self.queue)

    def wait(self, *args, **kwargs) -> bool:
        if not self.landed:
            with torch.no_grad():
                self.target.copy_(self.queue.popleft())
            self.landed = True
        return True


def peer_of(args, kwargs, key: str) -> int | None:
    """The peer of a send (``key="dst"``) or receive ("src") as the caller named it: the
    second positional argument, the keyword, or the group-relative one (one group here)."""
    if len(args) > 0 and args[0] is not None:
        return args[0]
    if kwargs.get(key) is not None:
        return kwargs[key]
    return kwargs.get(f"group_{key}")


class HostRoute:
    """torch.distributed's four point-to-point calls, wrapped; ``undo`` puts them back."""

    def __init__(self, needs_host=on_gpu):
        self.needs_host = needs_host
        self.original = {name: getattr(c10d, name) for name in NAMES}
        self.copied_bytes = 0
        self.to_self: dict[int, deque] = {}  # tag -> tensors this rank sent itself, in order
        wrapped = {"send": self._send(self.original["send"]), "isend": self._send(self.original["isend"]),
                   "recv": self._recv(self.original["recv"], wait=True),
                   "irecv": self._recv(self.original["irecv"], wait=False)}
        for name, fn in wrapped.items():  # both names: P2POp checks ``op is isend`` against c10d's
            setattr(c10d, name, fn)
            setattr(dist, name, fn)

    def _own(self, args, kwargs, key: str) -> deque | None:
        """The queue of messages to oneself for this call's tag, if its peer is this rank."""
        if peer_of(args, kwargs, key) != dist.get_rank():
            return None
        tag = args[2] if len(args) > 2 else kwargs.get("tag", 0)
        return self.to_self.setdefault(tag, deque())

    def _send(self, original):
        def send(tensor, *args, **kwargs):
            own = self._own(args, kwargs, "dst")
            if own is not None:
                own.append(tensor.detach().clone())
                return Done()
            if self.needs_host(tensor):
                tensor = tensor.detach().to(CPU)  # blocking: the bytes are there when gloo reads them
                self.copied_bytes += tensor.nbytes
            return original(tensor, *args, **kwargs)
        return send

    def _recv(self, original, wait: bool):
        def recv(tensor, *args, **kwargs):
            own = self._own(args, kwargs, "src")
            if own is not None:
                landing = FromSelf(own, tensor)
                return landing.wait() and None if wait else landing
            if not self.needs_host(tensor):
                return original(tensor, *args, **kwargs)
            host = torch.empty_like(tensor, device=CPU)
            self.copied_bytes += host.nbytes
            out = original(host, *args, **kwargs)
            if wait:  # recv returns once the bytes are there (the sender's rank)
                with torch.no_grad():
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
