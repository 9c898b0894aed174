"""bench/pinning.py and bench/many_cores.py: their reports from fake clicks (no process starts)."""

from __future__ import annotations

from dataclasses import asdict

from bench import many_cores, pinning
from bench.clicks import Click

PINNED = "rank 0 on 0; rank 1 on 1; reference on 0-1"
NOT_PINNED = "not pinned (off): 2 cores for 2 ranks"


def click(ratio: float, placement: str) -> dict:
    rows = (("step time, ZB-H2 ÷ 1F1B", ratio, "x", 0.93), ("idle time per step, ZB-H1 ÷ 1F1B", 0.5, "x", 0.5))
    return asdict(Click("zero-bubble", "run", "holds", "idle time per step, ZB-H1 ÷ 1F1B", 0.5, "x", 10.0, rows,
                        "steps in turn", placement))


def test_the_pinning_report_gives_each_modes_step_ratio_spread_against_the_target():
    data = {"clicks": 2, "stages": 2, "modes": {"not pinned": "0", "pinned": "ranks"},
            "runs": {"not pinned": [click(0.90, NOT_PINNED), click(0.97, NOT_PINNED)],
                     "pinned": [click(0.92, PINNED), click(0.94, PINNED)]}}
    md = pinning.report_md(data, {"date": "today", "cpu": "a CPU", "cores": 2, "torch": "2", "load": "1 1 1"})
    assert "| zero-bubble | not pinned | ZB-H2 ÷ 1F1B | 0.900 / 0.935 / 0.970 | 0.070 | not met |" in md
    assert "| zero-bubble | pinned | ZB-H2 ÷ 1F1B | 0.920 / 0.930 / 0.940 | 0.020 | met |" in md
    assert "PIPELAB_PIN=ranks" in md and f"- zero-bubble, pinned: {PINNED}" in md
    assert "| zero-bubble | ZB-H2 ÷ 1F1B | 0.070 | 0.020 | 0.935 | 0.930 | 10.0 | 10.0 |" in md  # side by side
    # The headline (0.5 each click) beside its theory at each click's costs (0.5): nothing moved.
    assert "| zero-bubble | run | pinned | idle time per step, ZB-H1 ÷ 1F1B | 0.000 | 0.500 / 0.500 / 0.500 | " \
        "0.000 | +0.000 / +0.000 | 0.000 |" in md


def test_the_many_core_report_keeps_the_clicks_made_and_the_comparison(tmp_path):
    data = {"command": "bash bench/many_cores.sh",
            "topology": {"allowed_cpus": "0-15", "cpus": 16, "physical_cores": 8, "threads_per_core": 2,
                         "launch_of_4": "rank 0 on 0,8; ..."},
            "clicks": [click(0.92, PINNED), click(0.93, PINNED)],
            "core_per_rank": "# Where the time goes with a core per rank (p = 4)\n\n| a table |"}
    md = many_cores.report_md(data, {"date": "today", "cpu": "a CPU", "torch": "2", "load": "1 1 1"})
    assert "16 (0-15), on 8 physical cores of 2 hyperthread(s) each" in md
    assert "(2 clicks, 2-2 per button)" in md and f"- 2 clicks: {PINNED}" in md
    assert "## Where the time goes with a core per rank (p = 4)" in md  # the comparison's own report, one level down
    assert "0.920 / 0.925 / 0.930" in md  # bench/clicks.py's step-ratio table of the clicks made
    stopped = many_cores.report_md({**data, "clicks": [], "core_per_rank": ""}, {})
    assert "No click finished within the time limit." in stopped and "Not finished within its time limit." in stopped


def test_the_many_core_command_stays_under_eight_minutes():
    """Its parts' time limits (bench/many_cores.sh's defaults), each with the seconds a stopped part
    is given to clean up before it is killed, leave half a minute of the 8 for starting Python, the
    report and the machine's own start."""
    import os
    import re
    script = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "bench", "many_cores.sh")).read()
    parts = re.findall(r'timeout --foreground -s INT -k (\d+) "\$\{(\w+_LIMIT):-(\d+)\}"', script)
    assert {name for _, name, _ in parts} == {"CLICKS_LIMIT", "CPR_LIMIT", "OVERLAP_LIMIT", "EXECUTOR_LIMIT",
                                              "WAKE_LIMIT", "SPEED_LIMIT"}
    assert script.count("timeout ") == len(parts)  # every part stopped by SIGINT first: its cleanup runs
    assert sum(int(limit) + int(grace) for grace, _, limit in parts) <= 8 * 60 - 30
