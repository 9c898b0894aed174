"""Golden timelines: each schedule at p=4, m=8 on unit costs (T_F=1, T_B=2), as in the papers' figures.

Read a row left to right: what that device does in each time slot; "." is the bubble. A wide
grid is printed as consecutive time windows, one under the other, each with its device labels.
"""
from engine.schedules import build_schedule
from engine.simulate import simulate
from engine.timeline import format_grid


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


def grid(name, chunks=None):
    return format_grid(simulate(build_schedule(name, 4, 8, chunks)), slot=1.0) + "\n"


def test_gpipe_golden():
    assert grid("gpipe") == GPIPE


def test_1f1b_golden():
    assert grid("1f1b") == ONE_F_ONE_B


def test_interleaved_golden():
    assert grid("interleaved", 2) == INTERLEAVED_V2
