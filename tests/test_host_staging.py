"""engine/torch_bridge/host_staging.py: torch's P2P operations swapped for ones on host copies
(gloo takes CPU tensors only), and what arrived copied onto the stage's own buffer before
the action that reads it. Here every tensor is on CPU; the swap and the landing are the same."""

from types import SimpleNamespace

import torch
import torch.distributed as dist

from pipelab.engine.device import Device
from pipelab.engine.torch_bridge.host_staging import HostStaging, stage_through_host


def op(kind, tensor, peer):
    """What torch's P2POp holds (a real one needs a process group)."""
    return SimpleNamespace(op=kind, tensor=tensor, peer=peer, group=None, tag=0, group_peer=peer)


class FakeStage:
    stage_index = 1

    def __init__(self):
        self.recv_buffer = torch.zeros(4)
        self.out = torch.arange(4.0)

    def get_fwd_recv_ops(self, j):
        return [op(dist.irecv, self.recv_buffer, 0)]

    def get_bwd_recv_ops(self, j):
        return []

    def get_fwd_send_ops(self, j):
        return [op(dist.isend, self.out, 2)]

    def get_bwd_send_ops(self, j):
        return []


def test_sends_go_from_a_copy_and_receives_land_on_the_stages_buffer_before_its_action():
    stage = FakeStage()
    staging = HostStaging(stage)
    [send] = stage.get_fwd_send_ops(3)
    assert send.op is dist.isend and send.group_peer == 2 and torch.equal(send.tensor, stage.out)
    assert send.tensor.device.type == "cpu"  # on a GPU a copy; here the tensor is there already
    [recv] = stage.get_fwd_recv_ops(3)
    assert recv.op is dist.irecv and recv.group_peer == 0 and recv.tensor.device.type == "cpu"
    assert recv.tensor.untyped_storage().data_ptr() != stage.recv_buffer.untyped_storage().data_ptr()
    recv.tensor.copy_(torch.tensor([5.0, 6.0, 7.0, 8.0]))  # what gloo would write
    staging.land("B", 3)  # another action's: nothing for it
    assert torch.equal(stage.recv_buffer, torch.zeros(4))
    staging.land("F", 3)
    assert torch.equal(stage.recv_buffer, torch.tensor([5.0, 6.0, 7.0, 8.0]))
    staging.land("F", 3)  # landed once
    assert staging.pending == {}


def test_only_cuda_ranks_on_gloo_stage_their_messages():
    stages = [FakeStage()]
    assert stage_through_host(stages, Device("cpu")) == {}
    assert stage_through_host(stages, Device("cuda", 0, shared=False)) == {}  # NCCL moves CUDA tensors itself
    assert set(stage_through_host(stages, Device("cuda", 0, shared=True))) == {1}
