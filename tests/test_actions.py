import json
import pickle

import pytest

from pipelab.engine.actions import (
    BACKWARD,
    BACKWARD_INPUT,
    BACKWARD_WEIGHT,
    FORWARD,
    KINDS,
    REDUCE_GRAD,
    UPDATE,
    Action,
    ActionKind,
    ScheduleError,
)
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.theory.validate import parse_schedule, schedule_to_text

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


LETTERS = [
    # member                       letter
    (ActionKind.FORWARD,           "F"),
    (ActionKind.BACKWARD,          "B"),
    (ActionKind.BACKWARD_INPUT,    "I"),
    (ActionKind.BACKWARD_WEIGHT,   "W"),
    (ActionKind.UPDATE,            "U"),
]


@pytest.mark.parametrize("kind, letter", LETTERS)
def test_a_kind_is_its_letter_wherever_a_letter_went(kind, letter):
    action = Action(0, letter, 0)
    assert action.kind is kind and action.kind == letter
    assert (str(kind), f"{kind}", json.dumps({kind: [kind]})) == (letter, letter, f'{{"{letter}": ["{letter}"]}}')
    assert {letter: 1}[kind] == 1 and pickle.loads(pickle.dumps(action)) == action


def test_the_module_level_names_are_the_kinds():
    assert (FORWARD, BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, UPDATE, REDUCE_GRAD) == tuple(ActionKind) == KINDS


def test_an_unknown_kind_names_the_valid_ones():
    with pytest.raises(ScheduleError, match="unknown action kind 'X'; valid kinds: F, B, I, W, U, R$"):
        Action(0, "X", 0)
