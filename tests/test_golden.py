"""Golden timelines: each schedule at p=4, m=8 on unit costs (T_F=1, T_B=2, or T_I=T_W=1 where
the backward is split), as in the papers' figures.

Read a row left to right: what that device does in each time slot; "." is the bubble. A wide
grid is printed as consecutive time windows, one under the other, each with its device labels.
"""
from typing import NamedTuple

import pytest

from pipelab.engine.results.timeline import format_grid
from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory.simulate import simulate


def windows(*parts: str) -> str:
    """The one grid that consecutive time windows show: each device's row, its label once."""
    rows = [part.splitlines() for part in parts]
    joined = []
    for first, *rest in zip(*rows):
        label = first.split(":", 1)[0]
        assert all(row.split(":", 1)[0] == label for row in rest), (first, rest)
        joined.append(first + "".join(row.split(":", 1)[1] for row in rest) + "\n")
    return "".join(joined)

GPIPE = windows("""\
device 0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 0F7   .   .   .   .   .   .   .   .   .
device 1:   . 1F0 1F1 1F2 1F3 1F4 1F5 1F6 1F7   .   .   .   .   .   . 1B0 1B0
device 2:   .   . 2F0 2F1 2F2 2F3 2F4 2F5 2F6 2F7   .   .   . 2B0 2B0 2B1 2B1
device 3:   .   .   . 3F0 3F1 3F2 3F3 3F4 3F5 3F6 3F7 3B0 3B0 3B1 3B1 3B2 3B2
""", """\
device 0: 0B0 0B0 0B1 0B1 0B2 0B2 0B3 0B3 0B4 0B4 0B5 0B5 0B6 0B6 0B7 0B7
device 1: 1B1 1B1 1B2 1B2 1B3 1B3 1B4 1B4 1B5 1B5 1B6 1B6 1B7 1B7   .   .
device 2: 2B2 2B2 2B3 2B3 2B4 2B4 2B5 2B5 2B6 2B6 2B7 2B7   .   .   .   .
device 3: 3B3 3B3 3B4 3B4 3B5 3B5 3B6 3B6 3B7 3B7   .   .   .   .   .   .
""")

ONE_F_ONE_B = windows("""\
device 0: 0F0 0F1 0F2 0F3   .   .   .   .   .   . 0B0 0B0 0F4 0B1 0B1 0F5 0B2
device 1:   . 1F0 1F1 1F2   .   .   .   . 1B0 1B0 1F3 1B1 1B1 1F4 1B2 1B2 1F5
device 2:   .   . 2F0 2F1   .   . 2B0 2B0 2F2 2B1 2B1 2F3 2B2 2B2 2F4 2B3 2B3
device 3:   .   .   . 3F0 3B0 3B0 3F1 3B1 3B1 3F2 3B2 3B2 3F3 3B3 3B3 3F4 3B4
""", """\
device 0: 0B2 0F6 0B3 0B3 0F7 0B4 0B4   . 0B5 0B5   . 0B6 0B6   . 0B7 0B7
device 1: 1B3 1B3 1F6 1B4 1B4 1F7 1B5 1B5   . 1B6 1B6   . 1B7 1B7   .   .
device 2: 2F5 2B4 2B4 2F6 2B5 2B5 2F7 2B6 2B6   . 2B7 2B7   .   .   .   .
device 3: 3B4 3F5 3B5 3B5 3F6 3B6 3B6 3F7 3B7 3B7   .   .   .   .   .   .
""")

INTERLEAVED_V2 = windows("""\
device 0: 0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 0F4 0F5 0F6   .   .   . 4B0 4B0 0F7 4B1 4B1
device 1:   . 1F0 1F1 1F2 1F3 5F0 5F1 5F2 5F3 1F4   .   . 5B0 5B0 1F5 5B1 5B1 1F6 5B2
device 2:   .   . 2F0 2F1 2F2 2F3 6F0 6F1 6F2   . 6B0 6B0 6F3 6B1 6B1 2F4 6B2 6B2 2F5
device 3:   .   .   . 3F0 3F1 3F2 3F3 7F0 7B0 7B0 7F1 7B1 7B1 7F2 7B2 7B2 7F3 7B3 7B3
""", """\
device 0:   . 4F4 4B2 4B2 4F5 4B3 4B3 4F6 0B0 0B0 4F7 0B1 0B1 0B2 0B2   . 0B3 0B3   .
device 1: 5B2 1F7 5B3 5B3 5F4 1B0 1B0 5F5 1B1 1B1 5F6 1B2 1B2 5F7 1B3 1B3   . 5B4 5B4
device 2: 6B3 6B3 2F6 2B0 2B0 2F7 2B1 2B1 6F4 2B2 2B2 6F5 2B3 2B3 6F6 6B4 6B4 6F7 6B5
device 3: 3F4 3B0 3B0 3F5 3B1 3B1 3F6 3B2 3B2 3F7 3B3 3B3 7F4 7B4 7B4 7F5 7B5 7B5 7F6
""", """\
device 0: 4B4 4B4   . 4B5 4B5   . 4B6 4B6   . 4B7 4B7 0B4 0B4 0B5 0B5 0B6 0B6 0B7 0B7
device 1:   . 5B5 5B5   . 5B6 5B6   . 5B7 5B7 1B4 1B4 1B5 1B5 1B6 1B6 1B7 1B7   .   .
device 2: 6B5   . 6B6 6B6   . 6B7 6B7 2B4 2B4 2B5 2B5 2B6 2B6 2B7 2B7   .   .   .   .
device 3: 7B6 7B6 7F7 7B7 7B7 3B4 3B4 3B5 3B5 3B6 3B6 3B7 3B7   .   .   .   .   .   .
""")


ZB_H1 = windows("""\
device 0: 0F0 0F1 0F2 0F3   .   .   . 0I0 0W0 0F4 0I1 0W1 0F5 0I2
device 1:   . 1F0 1F1 1F2   .   . 1I0 1F3 1I1 1W0 1F4 1I2 1W1 1F5
device 2:   .   . 2F0 2F1   . 2I0 2F2 2I1 2F3 2I2 2W0 2F4 2I3 2W1
device 3:   .   .   . 3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4
""", """\
device 0: 0W2 0F6 0I3 0W3 0F7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7
device 1: 1I3 1W2 1F6 1I4 1W3 1F7 1I5 1W4 1I6 1W5 1I7 1W6 1W7
device 2: 2F5 2I4 2W2 2F6 2I5 2W3 2F7 2I6 2W4 2I7 2W5 2W6 2W7
device 3: 3W1 3F5 3I5 3W2 3F6 3I6 3W3 3F7 3I7 3W4 3W5 3W6 3W7
""")

ZB_H2 = windows("""\
device 0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 0I0 0W0 0I1 0F7 0I2 0W1 0I3
device 1:   . 1F0 1F1 1F2 1F3 1F4 1I0 1F5 1I1 1F6 1I2 1W0 1I3 1F7
device 2:   .   . 2F0 2F1 2F2 2I0 2F3 2I1 2F4 2I2 2F5 2I3 2F6 2I4
device 3:   .   .   . 3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3F4 3I4 3F5
""", """\
device 0: 0W2 0I4 0W3 0I5 0W4 0I6 0W5 0W6 0I7 0W7   .   .   .
device 1: 1I4 1W1 1I5 1W2 1I6 1W3 1W4 1I7 1W5 1W6 1W7   .   .
device 2: 2W0 2I5 2F7 2I6 2W1 2W2 2I7 2W3 2W4 2W5 2W6 2W7   .
device 3: 3I5 3F6 3I6 3W0 3F7 3I7 3W1 3W2 3W3 3W4 3W5 3W6 3W7
""")

ZB_V = windows("""\
device 0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 7F3
device 1:   . 1F0 1F1 1F2 1F3 1F4 6F0 1F5 6F1 6I0 6W0 6F2 6I1 6W1 6F3 6I2 6W2
device 2:   .   . 2F0 2F1 2F2 5F0 2F3 5F1 2F4 5F2 5I0 5W0 5F3 5I1 5W1 2F5 2I0
device 3:   .   .   . 3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4I0 4W0 3F4 3I0 3W0 4F4
""", """\
device 0: 7I3 7W3 0F7 0I0 0W0 7F4 7I4 7W4 0I1 0W1 7F5 7I5 7W5 0I2 0W2 7F6 7I6
device 1: 1F6 1I0 1W0 6F4 6I3 6W3 1F7 1I1 1W1 6F5 6I4 6W4 1I2 1W2 6F6 6I5 6W5
device 2: 2W0 5F4 5I2 5W2 2F6 2I1 2W1 5F5 5I3 5W3 2F7 2I2 2W2 5F6 5I4 5W4 2I3
device 3: 4I1 4W1 3F5 3I1 3W1 4F5 4I2 4W2 3F6 3I2 3W2 4F6 4I3 4W3 3F7 3I3 3W3
""", """\
device 0: 7W6 0I3 0W3 7F7 7I7 7W7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7   .   .   .
device 1: 1I3 1W3 6F7 6I6 6W6 1I4 6I7 1I5 1W4 1I6 1W5 1I7 1W6 6W7 1W7   .   .
device 2: 2W3 5F7 5I5 5W5 2I4 5I6 2I5 5I7 2I6 2W4 2I7 2W5 5W6 5W7 2W6 2W7   .
device 3: 4F7 4I4 4W4 3I4 4I5 3I5 4I6 3I6 4I7 3I7 3W4 4W5 4W6 4W7 3W5 3W6 3W7
""")

DUALPIPEV = windows("""\
device 0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 7F3
device 1:   . 1F0 1F1 1F2 1F3 1F4 6F0 1F5 6F1 6I0 6W0 6F2 6I1 6W1 6F3 1F6 6B2
device 2:   .   . 2F0 2F1 2F2 5F0 2F3 5F1 2F4 5F2 5I0 5W0 5F3 2F5 5B1 5B1 5F4
device 3:   .   .   . 3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 3F4 4B0 4B0 4F4 3B0 3B0
""", """\
device 0: 0F7 7B3 7B3 7F4 0B0 0B0 7B4 7B4 7F5   . 0B1 0B1 7B5 7B5 7F6   . 0B2
device 1: 6B2 6F4 1B0 1B0 1F7 6B3 6B3 6F5 1B1 1B1 6B4 6B4 6F6   . 1B2 1B2 6B5
device 2: 2B0 2B0 2F6 5B2 5B2 5F5 2B1 2B1 2F7 5B3 5B3 5F6 2B2 2B2 5B4 5B4 5F7
device 3: 3F5 4B1 4B1 4F5 3B1 3B1 3F6 4B2 4B2 4F6 3B2 3B2 3F7 4B3 4B3 4F7 3B3
""", """\
device 0: 0B2 7B6 7B6 7F7   . 0B3 0B3 7B7 7B7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7
device 1: 6B5 6F7   . 1B3 1B3 6B6 6B6 1B4 1B4 6I7 1I5 6W7 1I6 1W5 1I7 1W6 1W7
device 2:   . 2B3 2B3 5B5 5B5 2B4 2B4 5B6 5B6 2I5 5I7 2I6 2W5 2I7 5W7 2W6 2W7
device 3: 3B3 4B4 4B4 3B4 3B4 4B5 4B5 3B5 3B5 4I6 3I6 4I7 3I7 4W6 3W6 4W7 3W7
""")

V_HALF = windows("""\
device 0: 0F0 0F1   .   .   .   .   . 7F0 0F2 7I0 7W0 7F1 0F3 7I1 7W1
device 1:   . 1F0 1F1   .   .   . 6F0   .   . 1F2 6F1 6I0 6W0 1F3   .
device 2:   .   . 2F0   .   . 5F0 2F1   .   . 5F1 2F2   . 5I0 5W0 5F2
device 3:   .   .   . 3F0 4F0   .   . 3F1 4F1   .   . 3F2 4F2 4I0 3I0
""", """\
device 0:   . 7F2 0F4 0I0 0W0 7I2 7W2 7F3 0F5 0I1 0W1 7I3 7W3 7F4 0F6
device 1: 6F2 6I1 1I0 6W1 1F4 1W0 6F3 6I2 1I1 6W2 1F5 1W1 6F4 6I3 1I2
device 2: 2F3 2I0 2W0 5I1 5W1 5F3 2F4 2I1 2W1 5I2 5W2 5F4 2F5 2I2 2W2
device 3: 4W0 3F3 3W0 4F3 4I1 3I1 4W1 3F4 3W1 4F4 4I2 3I2 4W2 3F5 3W2
""", """\
device 0: 0I2 0W2 7I4 7W4 7F5 0F7 0I3 0W3 7I5 7W5 7F6   . 0I4 0W4 7I6
device 1: 6W3 1F6 1W2 6F5 6I4 1I3 6W4 1F7 1W3 6F6 6I5 1I4 6W5 1W4   .
device 2: 5I3 5W3 5F5 2F6 2I3 2W3 5I4 5W4 5F6 2F7 2I4 2W4 5I5 5W5 5F7
device 3: 4F5 4I3 3I3 4W3 3F6 3W3 4F6 4I4 3I4 4W4 3F7 3W4 4F7 4I5 3I5
""", """\
device 0: 7W6 7F7   . 0I5 0W5 7I7 7W7   . 0I6 0W6   .   . 0I7 0W7
device 1: 6F7 6I6 1I5 6W6 1W5   . 6I7 1I6 6W7 1W6   . 1I7 1W7   .
device 2: 2I5 2W5 5I6 5W6   . 2I6 2W6 5I7 5W7   . 2I7 2W7   .   .
device 3: 4W5 3W5   . 4I6 3I6 4W6 3W6   . 4I7 3I7 4W7 3W7   .   .
""")

V_MIN = windows("""\
device 0: 0F0 0F1   .   .   .   .   . 7F0 7I0 7W0 0F2   .   . 7F1 7I1
device 1:   . 1F0   .   .   .   . 6F0 1F1   . 6I0 6W0   . 6F1 1F2 1I0
device 2:   .   . 2F0   .   . 5F0   .   . 2F1   . 5I0 5F1 5W0 2I0 2F2
device 3:   .   .   . 3F0 4F0   .   .   .   . 3F1 4F1 4I0 3I0 4W0 3W0
""", """\
device 0: 0I0 7W1 0W0 0F3 7F2 7I2 0I1 7W2 0W1 0F4 7F3 7I3 0I2 7W3 0W2
device 1: 6I1 6W1 1W0 6F2 1F3 1I1 6I2 6W2 1W1 6F3 1F4 1I2 6I3 6W3 1W2
device 2: 2W0 5I1 5F2 5W1 2I1 2F3 2W1 5I2 5F3 5W2 2I2 2F4 2W2 5I3 5F4
device 3: 3F2 4F2 4I1 3I1 4W1 3W1 3F3 4F3 4I2 3I2 4W2 3W2 3F4 4F4 4I3
""", """\
device 0: 0F5 7F4 7I4 0I3 7W4 0W3 0F6 7F5 7I5 0I4 7W5 0W4 0F7 7F6 7I6
device 1: 6F4 1F5 1I3 6I4 6W4 1W3 6F5 1F6 1I4 6I5 6W5 1W4 6F6 1F7 1I5
device 2: 5W3 2I3 2F5 2W3 5I4 5F5 5W4 2I4 2F6 2W4 5I5 5F6 5W5 2I5 2F7
device 3: 3I3 4W3 3W3 3F5 4F5 4I4 3I4 4W4 3W4 3F6 4F6 4I5 3I5 4W5 3W5
""", """\
device 0: 0I5 7W6 0W5   . 7F7 7I7 0I6 7W7 0W6   .   .   . 0I7 0W7
device 1: 6I6 6W6 1W5 6F7   . 1I6 6I7 6W7 1W6   .   . 1I7 1W7   .
device 2: 2W5 5I6 5F7 5W6 2I6 2W6   . 5I7 5W7   . 2I7 2W7   .   .
device 3: 3F7 4F7 4I6 3I6 4W6 3W6   .   . 4I7 3I7 4W7 3W7   .   .
""")


class SameAs(NamedTuple):
    """A schedule whose grid is another's, and why."""
    name: str
    why: str


class NoGrid(NamedTuple):
    """A schedule without a grid here, why, and the test that checks its shape instead."""
    why: str
    test: str


# Every built-in schedule at p=4, m=8: its grid, another's it equals, or why it has none.
# A literal table on purpose: tests/test_schedule_contract.py asks every built-in schedule
# (its BUILT_IN) for a row here, so a schedule that ships brings its picture; a new file
# passes the fast tier before it has one.
GOLDEN = {
    "naive":         NoGrid("96 slots wide, one device busy in each", "test_naive_keeps_one_device_busy"),
    "gpipe":         GPIPE,
    "1f1b":          ONE_F_ONE_B,
    "interleaved":   INTERLEAVED_V2,
    "pipedream":     SameAs("1f1b", "an update (U) takes no slot; what differs is the weight versions kept"),
    "pipedream-2bw": SameAs("1f1b", "the same, with an update per p micro-batches"),
    "zb-h1":         ZB_H1,
    "zb-h2":         ZB_H2,
    "zb-1p":         SameAs("zb-h1", "at T_F = T_I = T_W the cost-aware search builds ZB-H1's order"),
    "zb-2p":         SameAs("zb-h2", "at T_F = T_I = T_W the cost-aware search builds ZB-H2's order"),
    "zb-v":          ZB_V,
    "dualpipev":     DUALPIPEV,
    "v-half":        V_HALF,
    "v-min":         V_MIN,
}


def grid(name):
    """The schedule at p=4, m=8 with its default chunks (v=2 for interleaved and the Vs)."""
    return format_grid(simulate(build_schedule(name, 4, 8)), slot=1.0) + "\n"


@pytest.mark.parametrize("name", [name for name, row in GOLDEN.items() if not isinstance(row, NoGrid)])
def test_golden(name):
    row = GOLDEN[name]
    if isinstance(row, SameAs):
        assert isinstance(GOLDEN[row.name], str), f"{name} points at {row.name}, which has no grid"
        assert grid(name) == GOLDEN[row.name], row.why
    else:
        assert grid(name) == row


def test_every_reason_names_a_test_of_this_file():
    assert all(row.test in globals() for row in GOLDEN.values() if isinstance(row, NoGrid))


def test_naive_keeps_one_device_busy():
    # One micro-batch at a time: in each slot exactly one device works, m x (F + B) x p slots.
    rows = [row.split(":", 1)[1] for row in grid("naive").splitlines()]
    cells = [[row[k:k + 4].strip() for k in range(0, len(row), 4)] for row in rows]
    busy = [sum(device[slot] != "." for device in cells) for slot in range(len(cells[0]))]
    assert busy == [1] * (8 * (1 + 2) * 4)
