"""bench/core_speed.py: the headlines theory gives at two cores' speeds, its report from fake windows,
its arguments, and one real window (slow tier)."""

from __future__ import annotations

import pytest

from bench import core_speed

MACHINE = {"date": "today", "cpu": "a CPU", "cores": 2, "torch": "2", "load": "1 1 1"}
INTERLEAVED, ZB_H1 = "interleaved ÷ 1F1B, bubble fraction", "ZB-H1 ÷ 1F1B, idle time per step"


#   speeds (rank 0, rank 1)   interleaved ÷ 1F1B         ZB-H1 ÷ 1F1B
HEADLINES = [
    ((1.0, 1.0),              (1 / 17) / (1 / 9),        1 / 3),  # the closed forms at p = 2, m = 8, v = 2
    ((2.0, 2.0),              (1 / 17) / (1 / 9),        1 / 3),  # one speed for both: the same ratios
]


@pytest.mark.parametrize("speeds, interleaved, zb_h1", HEADLINES)
def test_at_one_speed_the_headlines_are_the_formulas(speeds, interleaved, zb_h1):
    found = core_speed.headlines(speeds)
    assert found[INTERLEAVED] == pytest.approx(interleaved) and found[ZB_H1] == pytest.approx(zb_h1)


@pytest.mark.parametrize("speeds", [(1.0, 1.05), (1.05, 1.0)])
def test_five_percent_between_the_cores_moves_the_headlines_by_about_their_whole_allowed_spread(speeds):
    """Why the p = 2 headlines spread over clicks (bench/PINNING.md): 5 % of core speed, either way,
    moves interleaved's by over half of bench/clicks.py's spread (0.1) and ZB-H1's by over all of it."""
    even, uneven = core_speed.headlines((1.0, 1.0)), core_speed.headlines(speeds)
    assert abs(uneven[INTERLEAVED] - even[INTERLEAVED]) > core_speed.HEADLINE_SPREAD / 2
    assert uneven[ZB_H1] - even[ZB_H1] > core_speed.HEADLINE_SPREAD


def window(at: str, ms: list[float]) -> dict:
    return {"at": at, "ms": ms, "headlines": core_speed.headlines((1.0, ms[1] / ms[0]))}


DATA = {"cpus": [0, 1], "seconds": 1.5, "gap": 5.0,
        "windows": [window("10:00:00", [10.0, 10.0]), window("10:00:05", [10.0, 10.5]),
                    window("10:00:10", [11.0, 10.45])]}


def test_the_report_gives_each_cores_range_and_its_ratio_to_core_0():
    md = core_speed.report_md(DATA, MACHINE)
    assert "| cpu 0 | 10.000 - 11.000 | 10.000 | - | - |" in md
    assert "| cpu 1 | 10.000 - 10.500 | 10.450 | 0.950 - 1.050 | 0.100 |" in md
    assert "Slowest ÷ fastest core in a window: 1.000 - 1.053, median 1.050." in md
    assert "| 10:00:05 | 10.000 | 10.500 | 1.050 |" in md


def test_the_report_gives_the_headlines_theory_gives_at_each_windows_speeds():
    md = core_speed.report_md(DATA, MACHINE)
    values = [w["headlines"][INTERLEAVED] for w in DATA["windows"]]
    assert (f"| {INTERLEAVED} | {min(values):.3f} - {max(values):.3f} | {max(values) - min(values):.3f} | 0.1 |"
            in md)


def test_more_than_two_cores_report_no_p_2_headlines():
    data = {**DATA, "cpus": [0, 1, 2], "windows": [{"at": "10:00:00", "ms": [10.0, 10.2, 10.4]}]}
    md = core_speed.report_md(data, MACHINE)
    assert "| cpu 2 | 10.400 - 10.400 |" in md and "headlines" not in md


@pytest.mark.parametrize("args, message", [
    (["--windows", "0"], "--windows must be >= 1"),
    (["--seconds", "0"], "--seconds > 0"),
    (["--cores", "1"], "--cores must be 2 to"),
    (["--cores", "4096"], "--cores must be 2 to"),
])
def test_bad_arguments_are_one_line_errors(args, message, capsys):
    with pytest.raises(SystemExit) as stop:
        core_speed.main(args)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_one_real_window_times_every_core():
    from pipelab.engine.runtime.placement import allowed_cpus, physical_cores
    cpus = [core[0] for core in physical_cores(allowed_cpus() or ())[:2]]
    if len(cpus) < 2:
        pytest.skip("needs two physical cores")
    times = core_speed.window(cpus, 0.3)
    assert list(times) == cpus and all(0 < t < 1.0 for t in times.values())
