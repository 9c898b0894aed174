"""engine/comm.py: which sends a step keeps alive."""

import pytest
import torch

from engine.comm import Mailbox
from engine.schedules import build_schedule


class FakeSend:
    def __init__(self, delivered: bool):
        self.delivered = delivered

    def is_completed(self) -> bool:
        return self.delivered

    def wait(self) -> None:
        self.delivered = True


class FakeTransport:
    """Hands out sends that are delivered at once, or only when waited on."""
    receives_ahead = 0

    def __init__(self, delivered: bool):
        self.delivered = delivered
        self.sends: list[FakeSend] = []

    def isend(self, tensor, stamp, dst) -> FakeSend:
        self.sends.append(FakeSend(self.delivered))
        return self.sends[-1]


@pytest.mark.parametrize("delivered, held_after_8_sends", [
    (True,  1),  # only the newest, not yet looked at again
    (False, 8),  # none finished: every buffer stays until the step's end
])
def test_a_step_holds_only_the_sends_still_in_flight(delivered, held_after_8_sends):
    transport = FakeTransport(delivered)
    mailbox = Mailbox(0, build_schedule("gpipe", 2, 8), lambda stage: (2, 3), transport)
    for j in range(8):
        mailbox.send(("act", 1, j), torch.zeros(2, 3), 0.0, 1)
    assert len(mailbox.pending_sends) == held_after_8_sends
    mailbox.finish()
    assert mailbox.pending_sends == [] and all(s.delivered for s in transport.sends)
