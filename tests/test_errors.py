"""An engine error is a coded Message: the English line, its code and values, kept together."""

from __future__ import annotations

import pickle

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.errors import MESSAGES, Message, message_of
from pipelab.engine.runtime.rank_processes import RunFailed
from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate


def test_a_message_is_its_english_line_with_its_code_and_values():
    message = Message.of("multiple", schedule="interleaved", m=6, p=4)
    assert message == "interleaved needs micro-batches to be a multiple of stages (m % p == 0), got m=6, p=4"
    assert (message.code, dict(message.values)) == ("multiple", {"schedule": "interleaved", "m": 6, "p": 4})


@pytest.mark.parametrize("values", [{}, {"schedule": "x", "m": 1}, {"schedule": "x", "m": 1, "p": 2, "v": 3}])
def test_a_message_takes_exactly_its_template_values(values):
    with pytest.raises(TypeError, match="takes"):
        Message.of("multiple", **values)


def test_nested_messages_and_lists_read_as_one_line():
    waiting = (Message.of("rank_at", rank=0, action="0B0"), Message.of("rank_at", rank=1, action="1F1"))
    assert Message.of("deadlock", waiting=waiting) == \
        "deadlock: every remaining rank waits on another (rank 0 at 0B0, rank 1 at 1F1)"


@pytest.mark.parametrize("code", sorted(MESSAGES))
def test_every_template_is_one_line(code):
    assert "\n" not in MESSAGES[code]


def test_code_and_values_survive_pickling():
    message = Message.of("at_step", rank=1, step=2, rule=Message.of("twice", action="1F0"))
    again = pickle.loads(pickle.dumps(message))
    assert (again, again.code, again.values) == (message, message.code, message.values)


def test_message_of_finds_the_coded_reason():
    assert message_of(ScheduleError.of("empty_schedule")).code == "empty_schedule"
    assert message_of(RunFailed.of("rank_exited", rank=1, code=3)) == "rank 1 exited with code 3 mid-run"
    with pytest.raises(InvalidSchedule) as err:
        validate(parse_schedule("rank 0: 0B0 0F0"))
    assert message_of(err.value) == "rank 0, action 0: 0B0 comes before its forward 0F0"  # the rule, not the table
    assert message_of(err.value).code == "at_step"
    plain = message_of(ValueError("boom\nsecond line"))
    assert (plain, plain.code) == ("boom", "")
