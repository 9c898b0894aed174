"""engine/torch_bridge/host_staging.py: in a rank whose messages must go through host memory,
torch.distributed's point-to-point calls send a host copy, and a receive lands on its target
when waited on. No GPU here: every tensor counts as one on the device for this test."""

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from pipelab.engine.device import Device
from pipelab.engine.torch_bridge import host_staging as H


class Work:
    def __init__(self, done=True):
        self.done = done
        self.waited = 0

    def is_completed(self):
        return self.done

    def wait(self, timeout=None):
        self.waited += 1
        return True


def test_a_send_goes_from_a_host_copy_and_a_receive_lands_on_its_target_when_waited(monkeypatch):
    seen = []

    def fake_isend(tensor, dst=None, group=None, tag=0, group_dst=None):
        seen.append(("isend", tensor, dst))
        return Work()

    def fake_irecv(tensor, src=None, group=None, tag=0, group_src=None):
        seen.append(("irecv", tensor, src))
        tensor.copy_(torch.tensor([5.0, 6.0]))  # what gloo writes
        return Work()

    monkeypatch.setattr(c10d, "isend", fake_isend)
    monkeypatch.setattr(c10d, "irecv", fake_irecv)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 2)  # neither peer below
    route = H.HostRoute(needs_host=lambda t: True)
    try:
        assert dist.isend is c10d.isend and dist.isend is not fake_isend  # both names, one wrapper
        out = torch.tensor([1.0, 2.0])
        dist.isend(out, 1)
        assert seen[0][0] == "isend" and seen[0][2] == 1 and torch.equal(seen[0][1], out)
        target = torch.zeros(2)
        work = dist.irecv(target, src=0)
        assert seen[1][1] is not target and torch.equal(target, torch.zeros(2))  # not before the wait
        assert work.is_completed() and work.wait()
        assert torch.equal(target, torch.tensor([5.0, 6.0])) and route.copied_bytes == 16
    finally:
        route.undo()
    assert c10d.isend is fake_isend and dist.isend is fake_isend  # put back


def test_only_cuda_ranks_on_gloo_route_through_host():
    assert H.route_through_host(Device("cpu")) is None
    assert H.route_through_host(Device("cuda", 0, shared=False)) is None  # NCCL moves CUDA tensors itself
    assert not H.on_gpu(torch.zeros(1))


def test_a_message_to_oneself_is_handed_over_in_memory(monkeypatch):
    # gloo has no pair from a rank to itself; torch's warm-up greets a V's turning stage there.
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 1)
    route = H.HostRoute(needs_host=lambda t: True)
    try:
        target = torch.zeros(2)
        work = dist.irecv(target, src=1)  # posted before the send, as a batch may
        assert not work.is_completed()
        assert dist.isend(torch.tensor([3.0, 4.0]), 1).wait()
        assert work.wait() and torch.equal(target, torch.tensor([3.0, 4.0]))
    finally:
        route.undo()
