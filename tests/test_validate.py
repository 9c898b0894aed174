import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate

BROKEN = [
    # what is wrong                       schedule text (one line per rank)            words in the rule
    ("backward before forward",          "0B0 0F0\n1F0 1B0",                           "before its forward"),
    ("computed twice",                    "0F0 0F0 0B0\n1F0 1B0",                       "twice"),
    ("stage on two ranks",                "0F0 0B0 1F0\n1F0 1B0",                       "each stage lives on one rank"),
    ("W before I",                        "0F0 0W0 0I0\n1F0 1B0",                       "before its input-gradient"),
    ("missing backward",                  "0F0\n1F0 1B0",                               "missing"),
    ("deadlock: waits on each other",     "0F0 0B0 0F1 0B1\n1F1 1B1 1F0 1B0",           "deadlock"),
    ("B and I for one micro-batch",       "0F0 0I0 0B0 0W0\n1F0 1B0",                   "already"),
]


@pytest.mark.parametrize("what,text,words", BROKEN)
def test_broken_schedules_are_rejected_with_the_marked_table(what, text, words):
    with pytest.raises(InvalidSchedule) as err:
        validate(parse_schedule(text))
    assert words in err.value.rule, what
    assert "\n" not in err.value.rule
    assert "<-- here" in err.value.table and "*" in err.value.table


def test_the_marker_points_at_the_bad_step():
    with pytest.raises(InvalidSchedule) as err:
        validate(parse_schedule("0F0 0F1 0B0 0B0\n1F0 1B0 1F1 1B1"))
    marked = [line for line in err.value.table.splitlines() if "<-- here" in line]
    assert len(marked) == 1 and marked[0].split()[0] == "3" and "*0B0" in marked[0]


def test_a_valid_custom_schedule_passes():
    schedule = parse_schedule("rank 0: 0F0 0F1 0B0 0B1  # GPipe\nrank 1: 1F0 1B0 1F1 1B1")
    assert [[str(a) for a in program] for program in schedule.actions] == [["0F0", "0F1", "0B0", "0B1"],
                                                                           ["1F0", "1B0", "1F1", "1B1"]]
    assert validate(schedule) is None  # sound: no InvalidSchedule
    # The same lines with one backward before its forward are refused: the pass above is a check.
    with pytest.raises(InvalidSchedule):
        validate(parse_schedule("rank 0: 0F0 0F1 0B0 0B1\nrank 1: 1B0 1F0 1F1 1B1"))


@pytest.mark.parametrize("text,words", [("", "empty"), ("0F0 0Q1", "cannot parse"), ("0F0 0B0\n2F0 2B0", "stage 1")])
def test_unparseable_text_is_one_line(text, words):
    with pytest.raises(ScheduleError) as err:
        schedule = parse_schedule(text)
        validate(schedule)
    assert words in str(err.value).splitlines()[0]


def test_every_builder_output_is_valid_and_a_mutation_is_not():
    s = build_schedule("1f1b", 4, 8)
    validate(s)
    programs = [list(p) for p in s.actions]
    programs[2] = programs[2][1:]  # drop rank 2's first forward
    with pytest.raises(InvalidSchedule):
        validate(s.with_actions(programs))
