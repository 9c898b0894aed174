import pytest

from engine.actions import Action, ScheduleError
from engine.schedules import REGISTRY, build_schedule
from engine.validate import parse_schedule, schedule_to_text

ROUND_TRIP = [
    # text    stage kind microbatch
    ("0F0", 0, "F", 0),
    ("2F13", 2, "F", 13),
    ("11B3", 11, "B", 3),
    ("1I2", 1, "I", 2),
    ("1W2", 1, "W", 2),
    ("3U7", 3, "U", 7),
]


@pytest.mark.parametrize("text,stage,kind,mb", ROUND_TRIP)
def test_text_form_round_trips(text, stage, kind, mb):
    action = Action.parse(text)
    assert action == Action(stage, kind, mb)
    assert str(action) == text


@pytest.mark.parametrize("bad", ["", "F0", "0X1", "0F", "-1F0", "0 F 0 0", "abc"])
def test_bad_text_is_one_line_error(bad):
    with pytest.raises(ScheduleError) as err:
        Action.parse(bad)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_schedule_round_trips_through_text(name):
    schedule = build_schedule(name, 4, 8)
    again = parse_schedule(schedule_to_text(schedule), stage_to_rank=schedule.stage_to_rank)
    assert again.actions == schedule.actions
