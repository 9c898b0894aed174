"""bench/cold_calls.py: its report from given figures, and one real run of the tiny stage."""

from __future__ import annotations

import json

from bench import cold_calls

MACHINE = {"date": "today", "cores": 2, "load": "1 1 1", "torch": "2"}


def test_each_call_reads_its_warm_and_after_an_action_medians_and_the_rounds_range():
    data = {"rounds": 3, "quick": False, "repeats": 300,
            "us": {"frombuffer": {"warm": [7.0, 6.0, 8.0], "after an action": [60.0, 50.0, 70.0]}}}
    md = cold_calls.report_md(data, MACHINE)
    assert "| frombuffer | 7.00 | 60.00 | 50.00-70.00 |" in md
    assert "--rounds 3" in md and "a stage of the command line's defaults" in md


def test_a_quick_run_times_every_call_both_ways(tmp_path):
    out = tmp_path / "COLD.md"
    cold_calls.main(["--rounds", "1", "--quick", "--out", str(out)])
    data = json.loads((tmp_path / "COLD.json").read_text())
    assert data["quick"] and len(data["us"]) == 7
    for sides in data["us"].values():
        assert len(sides["warm"]) == len(sides["after an action"]) == 1
        assert all(v > 0 for v in sides["warm"] + sides["after an action"])
    assert "checks the script, measures nothing" in out.read_text()
