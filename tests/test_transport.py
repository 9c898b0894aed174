"""The shared-memory transport moves each message intact, in order, through a ring of slots."""

import mmap
import multiprocessing as mp
import resource

import pytest
import torch

from pipelab.engine.runtime.comm import Mailbox, channel_sizes, channels, message_plan
from pipelab.engine.runtime.transport import SharedMemoryTransport
from pipelab.engine.schedules import build_schedule

CHANNELS = [(0, 1), (1, 0)]


def pair(tmp_path, slots=3, numel=8, timeout_s=5.0, poll_s=0.0):
    """Ranks 0 and 1 of one run, in this process: each maps the other's channel file."""
    sems = {c: mp.get_context("fork").Semaphore(0) for c in CHANNELS}
    ends = [SharedMemoryTransport(r, str(tmp_path), sems, {c: slots for c in CHANNELS},
                                  {c: numel for c in CHANNELS}, timeout_s, poll_s=poll_s) for r in (0, 1)]
    for end in ends:
        end.create_outgoing()
    for end in ends:
        end.open_incoming()
    return ends


def test_messages_arrive_intact_and_in_order_across_slot_reuse(tmp_path):
    zero, one = pair(tmp_path, slots=3)
    received = []
    for k in range(7):  # 7 messages through 3 slots: every slot reused
        zero.isend(torch.full((2, 4), float(k)), 0.5 + k, 1)
        tensor, stamp = one.irecv((2, 4), 0).wait()
        assert tensor.shape == (2, 4) and stamp == 0.5 + k
        received.append(tensor[0, 0].item())
    assert received == [0, 1, 2, 3, 4, 5, 6]


def test_a_slot_reused_with_the_same_shape_hands_out_the_tensor_made_for_it_first(tmp_path):
    # Made per receive, the slot's tensor (torch.frombuffer) and numpy's read of its stamp were
    # most of the time a receive took between two actions (docs/measuring.md).
    zero, one = pair(tmp_path, slots=2)
    got = []
    for k in range(4):
        zero.isend(torch.full((2, 4), float(k)), 0.25 + k, 1)
        tensor, stamp = one.irecv((2, 4), 0).wait()
        assert torch.equal(tensor, torch.full((2, 4), float(k))) and stamp == 0.25 + k and type(stamp) is float
        got.append(tensor)
    assert got[0] is got[2] and got[1] is got[3] and got[0] is not got[1]


def test_a_step_of_messages_can_be_sent_before_any_is_read(tmp_path):
    zero, one = pair(tmp_path, slots=4)
    for k in range(4):  # a send never waits for its receiver
        zero.isend(torch.arange(8.0) + k, float(k), 1)
    works = [one.irecv((8,), 0) for _ in range(4)]
    assert [work.wait()[0][0].item() for work in works] == [0, 1, 2, 3]


def test_a_shorter_message_uses_the_front_of_its_slot(tmp_path):
    zero, one = pair(tmp_path, numel=8)
    zero.isend(torch.tensor([5.0, 6.0]), 1.0, 1)
    assert one.irecv((2,), 0).wait()[0].tolist() == [5.0, 6.0]


def test_messages_of_changing_shapes_and_layouts_arrive_intact_through_reused_slots(tmp_path):
    # A sender keeps a view of each slot per message shape: a slot that carried one shape
    # carries another next time round, and a non-contiguous tensor is copied by value.
    zero, one = pair(tmp_path, slots=2, numel=8)
    messages = [torch.arange(8.0).view(2, 4), torch.arange(3.0) + 10, torch.arange(8.0).view(4, 2).t(),
                torch.arange(8.0).view(2, 4) + 20, torch.arange(3.0) + 30, torch.arange(6.0).view(3, 2)]
    for k, message in enumerate(messages):
        zero.isend(message, float(k), 1)
        tensor, stamp = one.irecv(tuple(message.shape), 0).wait()
        assert torch.equal(tensor, message) and stamp == float(k)


def test_a_received_tensor_is_its_slot_in_place_until_the_next_step_reuses_it(tmp_path):
    zero, one = pair(tmp_path, slots=2, numel=8)  # a step of 2 messages
    zero.isend(torch.tensor([5.0, 6.0]), 1.0, 1)
    zero.isend(torch.full((8,), 7.0), 2.0, 1)
    first, second = one.irecv((2,), 0).wait()[0], one.irecv((8,), 0).wait()[0]
    # Each has a storage of exactly its own bytes, as a copy would: activation memory counts it so.
    assert first.untyped_storage().nbytes() == 2 * 4 and second.untyped_storage().nbytes() == 8 * 4
    assert first.tolist() == [5.0, 6.0] and second.tolist() == [7.0] * 8
    zero.isend(torch.tensor([9.0, 9.0]), 3.0, 1)  # the next step's first message, into slot 0
    assert first.tolist() == [9.0, 9.0]  # no copy was made: valid within its step only


def test_a_message_into_a_slot_never_used_before_takes_no_page_fault(tmp_path):
    # Every page of a channel is mapped at set-up (engine/runtime/transport.py, fault_in): a first
    # message, and the link-cost ping-pong, cost what a later one does.
    numel = 64 * 1024  # 256 KiB: 64 pages a message
    zero, one = pair(tmp_path, slots=4, numel=numel)
    messages = [torch.full((numel,), float(k)) for k in range(4)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for k, message in enumerate(messages):  # each into a slot of its own
        zero.isend(message, float(k), 1)
        assert one.irecv((numel,), 0).wait()[0][::1024].sum().item() == 64 * k
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    pages = 4 * numel * 4 // mmap.PAGESIZE
    assert faults < pages // 8, (faults, pages)


def test_a_receive_knows_whether_its_message_is_there(tmp_path):
    zero, one = pair(tmp_path)
    work = one.irecv((8,), 0)
    assert not work.is_completed()
    zero.isend(torch.ones(8), 2.0, 1)
    assert work.is_completed()
    tensor, stamp = work.wait()
    assert tensor.sum().item() == 8 and stamp == 2.0


def test_a_missing_message_times_out_with_the_sender_named(tmp_path):
    _, one = pair(tmp_path, timeout_s=0.2)
    with pytest.raises(RuntimeError, match="no message from rank 0 within 0.2 s"):
        one.irecv((8,), 0).wait()


def test_a_mailbox_takes_each_channels_messages_in_order_without_a_receive_object(tmp_path):
    # The mailbox's way on shared memory (has_message, take_next): a message seen in holds its
    # token until taken, one asked for out of channel order waits behind the earlier ones,
    # buffered, and a missing one times out with its sender named.
    zero, one = pair(tmp_path, slots=3, timeout_s=0.2)
    mailbox = Mailbox(1, message_plan(build_schedule("gpipe", 2, 3), 1), lambda stage: (2, 4), one)
    keys = [("act", 1, j) for j in range(3)]
    assert not mailbox.ready(keys[0], 0)
    for j in range(2):
        zero.isend(torch.full((2, 4), float(j)), 10.0 + j, 1)
    assert mailbox.ready(keys[0], 0) and mailbox.ready(keys[0], 0)  # seen twice, its token taken once
    assert not mailbox.ready(keys[1], 0)  # in, but behind keys[0] on the channel
    tensor, stamp = mailbox.receive(keys[1], 0)  # takes keys[0] first, buffered
    assert tensor[0, 0].item() == 1.0 and stamp == 11.0 and mailbox.ready(keys[0], 0)
    assert mailbox.receive(keys[0], 0)[1] == 10.0 and mailbox.received == 2
    with pytest.raises(RuntimeError, match="no message from rank 0 within 0.2 s"):
        mailbox.receive(keys[2], 0)
    assert not one.irecv((2, 4), 0).is_completed()  # nothing in flight: the channel is where it was


def test_a_mailbox_takes_a_message_that_is_in_in_one_call_and_leaves_one_that_is_not(tmp_path):
    # take_if_in: the executor's receive when nothing waits (Executor._receive). None leaves the
    # channel as it was, for receive to wait; a token ready() saw is the one it takes.
    zero, one = pair(tmp_path, slots=3, timeout_s=0.2)
    mailbox = Mailbox(1, message_plan(build_schedule("gpipe", 2, 3), 1), lambda stage: (2, 4), one)
    keys = [("act", 1, j) for j in range(3)]
    assert mailbox.take_if_in(keys[0], 0) is None
    for j in range(3):
        zero.isend(torch.full((2, 4), float(j)), 10.0 + j, 1)
    assert mailbox.take_if_in(keys[1], 0) is None  # in, but behind keys[0] on the channel: not taken
    assert mailbox.ready(keys[0], 0)  # its token held (has_message) ...
    tensor, stamp = mailbox.take_if_in(keys[0], 0)  # ... and taken with it, no second token
    assert tensor[0, 0].item() == 0.0 and stamp == 10.0 and mailbox.received == 1
    assert mailbox.take_if_in(keys[1], 0)[1] == 11.0 and mailbox.take_if_in(keys[2], 0)[1] == 12.0
    assert mailbox.received == 3 and mailbox.taken[0] == 3
    assert not one.irecv((2, 4), 0).is_completed()  # every token taken once: none left over


@pytest.mark.parametrize("name, p, m", [("1f1b", 4, 8), ("interleaved", 2, 4), ("zb-v", 2, 4), ("naive", 3, 2)])
def test_every_channel_is_sized_for_its_largest_message_and_at_most_a_step_of_them(name, p, m):
    schedule = build_schedule(name, p, m)
    shapes = [(2, 3)] * (schedule.num_stages + 1)
    sizes = channel_sizes(schedule, lambda s: shapes[s], ping_numel=6)
    assert sorted(sizes) == channels(schedule)
    for (src, dst), (slots, numel) in sizes.items():
        sent = sum(1 for a in schedule.actions[src] if a.kind in "FBI"
                   and _peer(schedule, a) == dst)
        assert 1 <= slots <= max(sent, 1)  # how many: tests/test_slots.py
        assert numel == 6


def _peer(schedule, a):
    if a.kind == "F" and a.stage < schedule.num_stages - 1:
        return schedule.stage_to_rank[a.stage + 1]
    if a.kind in "BI" and a.stage > 0:
        return schedule.stage_to_rank[a.stage - 1]
    return None


def test_a_receiver_on_another_device_gets_the_message_there(tmp_path):
    # Ranks sharing a GPU receive onto it (engine/device.py, Device.shared); "meta" stands in
    # for the GPU here, where there is none: the message must leave the slot for that device.
    sems = {c: mp.get_context("fork").Semaphore(0) for c in CHANNELS}
    zero, one = (SharedMemoryTransport(r, str(tmp_path), sems, {c: 2 for c in CHANNELS}, {c: 8 for c in CHANNELS},
                                       5.0, device)
                 for r, device in ((0, torch.device("cpu")), (1, torch.device("meta"))))
    for end in (zero, one):
        end.create_outgoing()
    for end in (zero, one):
        end.open_incoming()
    zero.isend(torch.arange(6.0).view(2, 3), 1.5, 1)
    tensor, stamp = one.irecv((2, 3), 0).wait()
    assert tensor.device.type == "meta" and tensor.shape == (2, 3) and stamp == 1.5


def test_gloo_messages_of_gpu_ranks_travel_in_host_memory():
    from pipelab.engine.runtime.transport import DistTransport
    assert DistTransport("gloo", torch.device("cuda", 0)).wire == torch.device("cpu")  # gloo sends CPU tensors only
    assert DistTransport("nccl", torch.device("cuda", 0)).wire == torch.device("cuda", 0)


class CountingSemaphore:
    """A channel's semaphore that counts the acquires that would put its caller to sleep, and
    shows a message only from its ``arrives_after``-th poll on (it lands while the receiver polls)."""

    def __init__(self, semaphore, arrives_after: int = 0):
        self.semaphore, self.arrives_after, self.sleeps, self.polls = semaphore, arrives_after, 0, 0

    def acquire(self, block=True, timeout=None):
        if not block:
            self.polls += 1
            return self.polls >= self.arrives_after and self.semaphore.acquire(False)
        self.sleeps += 1
        return self.semaphore.acquire(True, timeout)


#     poll_s   the message shows at poll   -> the receive slept
POLLING = [
    (0.0,     0,                             1),  # no polling: a wait sleeps on the semaphore at once
    (5.0,     50,                            0),  # polling: a message that lands while it polls is taken awake
]


@pytest.mark.parametrize("poll_s, arrives_after, sleeps", POLLING)
def test_a_receive_with_a_core_of_its_own_polls_before_it_sleeps(tmp_path, poll_s, arrives_after, sleeps):
    zero, one = pair(tmp_path, poll_s=poll_s)
    counting = one.arrived[0] = CountingSemaphore(one.arrived[0], arrives_after)
    zero.isend(torch.ones(8), 1.0, 1)
    tensor, stamp = one.irecv((8,), 0).wait()
    assert counting.sleeps == sleeps and tensor.sum().item() == 8 and stamp == 1.0


def test_a_polling_receive_sleeps_once_its_poll_runs_out_and_still_times_out(tmp_path):
    _, one = pair(tmp_path, timeout_s=0.2, poll_s=0.05)
    counting = one.arrived[0] = CountingSemaphore(one.arrived[0])
    with pytest.raises(RuntimeError, match="no message from rank 0 within 0.2 s"):
        one.irecv((8,), 0).wait()
    assert counting.polls > 1 and counting.sleeps == 1
