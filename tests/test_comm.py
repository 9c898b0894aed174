"""engine/runtime/comm.py: which sends a step keeps alive."""

import pytest
import torch

from pipelab.engine.runtime.comm import Mailbox, message_plan
from pipelab.engine.schedules import build_schedule


class FakeSend:
    def __init__(self, delivered: bool):
        self.delivered = delivered

    def is_completed(self) -> bool:
        return self.delivered

    def wait(self) -> None:
        self.delivered = True


class FakeReceive:
    def __init__(self, shape):
        self.shape = shape

    def is_completed(self) -> bool:
        return True

    def wait(self):
        return torch.zeros(self.shape), 0.0


class FakeTransport:
    """Sends that report completion at once (as NCCL's finished kernels do), or only when
    waited on (as gloo's do); receives that are always there."""
    receives_ahead = 0

    def __init__(self, delivered: bool):
        self.delivered = delivered
        self.sends: list[FakeSend] = []

    def isend(self, tensor, stamp, dst) -> FakeSend:
        self.sends.append(FakeSend(self.delivered))
        return self.sends[-1]

    def irecv(self, shape, src) -> FakeReceive:
        return FakeReceive(shape)


@pytest.mark.parametrize("delivered, held_after_8_sends", [
    (True,  0),  # finished as posted (shared memory): never held
    (False, 8),  # none finished and nothing received: every buffer stays until the step's end
])
def test_a_step_lets_go_of_finished_sends(delivered, held_after_8_sends):
    transport = FakeTransport(delivered)
    mailbox = Mailbox(0, message_plan(build_schedule("gpipe", 2, 8), 0), lambda stage: (2, 3), transport)
    for j in range(8):
        mailbox.send(("act", 1, j), torch.zeros(2, 3), 0.0, 1)
    assert mailbox.sends_in_flight() == held_after_8_sends
    mailbox.finish()
    assert mailbox.sends_in_flight() == 0 and all(s.delivered for s in transport.sends)


def test_a_send_the_peer_has_certainly_taken_is_let_go_even_if_it_never_says_so():
    # 1F1B, p=2, m=4, rank 0: F0 F1 B0 F2 B1 F3 B2 B3. Rank 1 runs F_j then B_j, so the
    # gradient of micro-batch j comes from an action after the F that took activation j.
    schedule = build_schedule("1f1b", 2, 4)
    transport = FakeTransport(delivered=False)  # gloo: a send says it finished only when waited on
    mailbox = Mailbox(0, message_plan(schedule, 0), lambda stage: (2, 3), transport)
    held = []
    for a in schedule.actions[0]:
        if a.kind == "F":
            mailbox.send(("act", 1, a.microbatch), torch.zeros(2, 3), 0.0, 1)
        else:
            mailbox.receive(("grad", 0, a.microbatch), 1)
        held.append(mailbox.sends_in_flight())
    assert held == [1, 2, 1, 2, 1, 2, 1, 0]  # at most p in flight, not all m
    assert [s.delivered for s in transport.sends] == [True] * 4
