"""bench/wake.py: its report from fake figures (no process starts) and its arguments."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from bench import wake
from bench.clicks import Click

MACHINE = {"date": "today", "cpu": "a CPU", "cores": 2, "torch": "2", "load": "1 1 1"}


def click(ratio: float) -> dict:
    rows = (("step time, re-materialized ÷ GPipe", ratio, "x", 1.3),)
    return asdict(Click("gpipe", "compare", "holds", "peak activations", 0.059, "x", 4.0, rows, "steps in turn"))


def run(link_us: float, waits_s: list[float]) -> dict:
    return {"link_us": link_us, "wall_step_ms": 100.0, "device_step_ms": 95.0, "waits_s": waits_s, "polls": True}


DATA = {"poll_s": 0.005,
        "pings": {"sleeping": {"send_us": 26.6, "round_trip_us": 82.9, "pings": 100, "own_cores": True},
                  "polling": {"send_us": 5.7, "round_trip_us": 13.5, "pings": 100, "own_cores": True}},
        "runs": {"sleeping": [run(26.7, [0.0001, 0.0002, 0.006]), run(30.0, [0.0003])],
                 "polling": [run(4.8, [0.0001, 0.0001, 0.0001, 0.0001])]},
        "clicks": {"sleeping": [click(1.30), click(1.32)], "polling": [click(1.25), click(1.36)]}}


def test_the_report_gives_each_part_sleeping_and_polling():
    md = wake.report_md(DATA, MACHINE)
    assert "| sleeping | 26.6 | 82.9 | 100 |" in md and "| polling | 5.7 | 13.5 | 100 |" in md
    # link cost min / median / max over runs; a quarter of the sleeping waits outlasted the 5 ms poll
    assert "| sleeping | 26.7 / 28.4 / 30.0 | 100.0 | 95.0 | 250 | 300 | 25.0% | 2 |" in md
    assert "| polling | 4.8 / 4.8 / 4.8 |" in md and "waits over 5 ms" in md


def test_the_report_judges_each_step_ratios_spread_over_the_clicks():
    md = wake.report_md(DATA, MACHINE)
    assert "| gpipe | re-materialized ÷ GPipe | polling | 1.250 / 1.305 / 1.360 | 0.110 | not met | 2 |" in md
    assert "| gpipe | re-materialized ÷ GPipe | sleeping | 1.300 / 1.310 / 1.320 | 0.020 | met | 2 |" in md


@pytest.mark.parametrize("args", [["--pings", "0"], ["--runs", "0"], ["--clicks", "0"]])
def test_a_count_below_one_is_a_one_line_error(args, capsys):
    with pytest.raises(SystemExit) as stop:
        wake.main(args)
    assert stop.value.code == 2 and "must be >= 1" in capsys.readouterr().err
