"""bench/executor_costs.py and bench/executor_probe.py: the per-part figures from fake rows and a
fake clock (no rank starts), and one real probed run of the tiny model (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from bench import executor_costs, executor_probe
from bench.executor_costs import REST, report_md, summarize
from bench.executor_probe import IN_WAITS, PARTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MACHINE = {"date": "today", "cores": 2, "load": "1 1 1", "torch": "2"}


def row(kind, stage, host_after, **parts):
    return {"kind": kind, "stage": stage, "step": 2, "host_after": host_after,
            **{name.replace("_", " "): v for name, v in parts.items()}}


ROWS = [row("F", 0, 100e-6, send=40e-6, memory_accounting=20e-6),
        row("B", 0, 60e-6, memory_accounting=10e-6, progress_report=2e-6),
        row("F", 0, 80e-6, send=30e-6, memory_accounting=20e-6)]


@pytest.mark.parametrize("part, mean_us, median_where_us, share", [
    ("send", 70 / 3, 35.0, 2 / 3),  # its mean over every action; its median where a send follows
    ("memory accounting", 50 / 3, 20.0, 1.0),
    ("progress report", 2 / 3, 2.0, 1 / 3),
    ("event record", 0.0, None, 0.0),
    (REST, (40 + 48 + 30) / 3, 40.0, 1.0),  # host_after less the parts
])
def test_each_part_has_its_mean_per_action_and_its_median_where_it_happens(part, mean_us, median_where_us, share):
    got = summarize([90e-6, 70e-6, 20e-6], ROWS)["parts"][part]
    assert got["mean_us"] == pytest.approx(mean_us)
    assert got["median_where_us"] == (None if median_where_us is None else pytest.approx(median_where_us))
    assert got["share_of_actions"] == pytest.approx(share)


def test_the_figure_the_target_judges_is_the_plain_runs_median():
    got = summarize([90e-6, 70e-6, 20e-6], ROWS)
    assert got["median_us"] == pytest.approx(70.0) and got["probed_median_us"] == pytest.approx(80.0)
    assert got["by_action_us"]["F of stage 0"]["send"] == pytest.approx(35.0)


def test_the_report_puts_the_baseline_before_each_figure_and_judges_the_target():
    now = {"1f1b, p=2": summarize([20e-6, 25e-6, 40e-6], ROWS)}
    was = {"1f1b, p=2": summarize([90e-6, 95e-6, 99e-6], ROWS)}
    md = report_md({"rounds": 3, "runs": now, "baseline": {"revision": "abc123", "runs": was}}, MACHINE)
    assert "--baseline abc123" in md and "the executor at abc123" in md
    assert "| 1f1b, p=2 | 95.0 -> 25.0 | 94.7 -> 28.3 | - -> - | met |" in md
    assert "| send | 23.3 -> 23.3 | 35.0 -> 35.0 | 67% |" in md
    alone = report_md({"rounds": 1, "runs": now}, MACHINE)
    assert "| 1f1b, p=2 | 25.0 | 28.3 | - | met |" in alone and "->" not in alone


def test_the_report_says_how_far_one_rounds_median_moves_from_the_next():
    # The target's margin is judged against this: a figure that moves 30 µs between launches on
    # a quiet host cannot settle a 2 µs miss (bench/EXECUTOR.md).
    now = {"1f1b, p=2": summarize([20e-6, 25e-6, 40e-6], ROWS, round_medians=[31e-6, 58.25e-6, 40e-6])}
    was = {"1f1b, p=2": summarize([90e-6], ROWS, round_medians=[90e-6])}
    assert now["1f1b, p=2"]["round_median_min_us"] == pytest.approx(31.0)
    md = report_md({"rounds": 3, "runs": now, "baseline": {"revision": "abc123", "runs": was}}, MACHINE)
    assert "| 1f1b, p=2 | 90.0 -> 25.0 | 90.0 -> 28.3 | 90.0-90.0 -> 31.0-58.2 | met |" in md


def test_a_probed_part_counts_its_own_time_only_and_only_between_two_actions(monkeypatch):
    ticks = iter([0.0, 1.0, 3.0, 10.0])  # outer starts, inner starts, inner ends, outer ends
    monkeypatch.setattr(executor_probe.time, "thread_time", lambda: next(ticks))
    action = object()
    rank = SimpleNamespace(host=SimpleNamespace(since=0.0), _last_action=action)
    monkeypatch.setitem(executor_probe._state, "executor", rank)
    monkeypatch.setitem(executor_probe._state, "rows", {})
    inner = executor_probe._timed("event record", lambda: "event")
    outer = executor_probe._timed("send", lambda: inner())
    assert outer() == "event"
    assert executor_probe._state["rows"][id(action)] == {"event record": 2.0, "send": 8.0}
    rank.host.since = None  # inside an action or a receive's wait: not the executor's time between actions
    assert outer() == "event" and executor_probe._state["rows"][id(action)]["send"] == 8.0


def test_accounting_that_outlasted_its_wait_moves_to_memory_accounting():
    row = {"memory accounting in a wait (not in host_after)": 30e-6}
    executor_probe.move_to_host_after(row, 10e-6)
    assert row == {"memory accounting in a wait (not in host_after)": pytest.approx(20e-6),
                   "memory accounting": pytest.approx(10e-6)}


@pytest.mark.slow  # starts ranks: the tiny model, a few seconds
def test_no_part_of_a_real_probed_run_is_negative(tmp_path):
    # Every part is time spent, so none is below zero. When _settle_host came to book through
    # _book_host, the probe took every settle for accounting that outlasted its wait and moved
    # it out of "in a wait" again: that part went negative after four actions in ten.
    out = tmp_path / "raw.json"
    done = subprocess.run([sys.executable, "-m", "bench.executor_costs", "--quick", "--rounds", "1", "--raw", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr[-3000:]
    raw = json.loads(out.read_text())
    assert set(raw) == {"1f1b, p=2", "zb-h2, p=4"}
    for run, got in raw.items():
        assert got["rows"], run
        for row in got["rows"]:
            assert all(row.get(part, 0.0) >= 0 for part in [*PARTS, *IN_WAITS]), (run, row)


@pytest.mark.slow  # asks git
def test_a_baseline_must_name_a_commit():
    with pytest.raises(SystemExit) as exit_info:
        executor_costs.main(["--baseline", "no-such-revision-anywhere"])
    assert exit_info.value.code == 2


def test_the_report_puts_the_device_clock_step_beside_the_figure():
    # A lighter executor must not buy its figure with a longer step: both sides' plain runs say theirs.
    now = {"1f1b, p=2": summarize([20e-6], ROWS, steps=[0.100, 0.102, 0.110])}
    was = {"1f1b, p=2": summarize([90e-6], ROWS, steps=[0.104, 0.105, 0.103])}
    assert now["1f1b, p=2"]["step_ms_median"] == pytest.approx(102.0)
    md = report_md({"rounds": 1, "runs": now, "baseline": {"revision": "abc123", "runs": was}}, MACHINE)
    assert "| 1f1b, p=2 | 104.0 -> 102.0 | 104.0 -> 104.0 | 3 |" in md
    assert "## The step on the device clock" not in report_md({"rounds": 1, "runs": {"x": summarize([20e-6], ROWS)}},
                                                               MACHINE)


def test_the_report_puts_the_floor_under_the_figure_and_judges_it_against_the_target():
    # Where the clocks, the send's copy and the transport alone take more than 30 µs, no executor
    # with this transport meets the target on that host: the report says so beside ours.
    now = {"1f1b, p=2": summarize([70e-6], ROWS), "zb-h2, p=4": summarize([90e-6], ROWS)}
    floors = {"1f1b, p=2": {"clocks only": 5.6, "clocks and the send's copy": 9.1, "clocks and the transport": 14.0},
              "zb-h2, p=4": {"clocks only": 20.6, "clocks and the send's copy": 25.6, "clocks and the transport": 44.5}}
    md = report_md({"rounds": 1, "runs": now, "floor_us": floors}, MACHINE)
    assert "| 1f1b, p=2 | 5.6 | 9.1 | 14.0 | 70.0 | 56.0 | met |" in md
    assert "| zb-h2, p=4 | 20.6 | 25.6 | 44.5 | 90.0 | 45.5 | not met |" in md
    assert "ours above clocks and the transport (µs)" in md
    assert "## The floor under it" not in report_md({"rounds": 1, "runs": now}, MACHINE)
    # A report measured before the transport's floor existed renders its two floors and no verdict.
    older = {label: {k: v for k, v in by.items() if k != "clocks and the transport"} for label, by in floors.items()}
    assert "| 1f1b, p=2 | 5.6 | 9.1 | - | 70.0 | - | - |" in report_md({"rounds": 1, "runs": now, "floor_us": older},
                                                                      MACHINE)


def test_a_baseline_tree_gets_every_bench_module_this_bench_imports():
    # A baseline's round runs this bench's file in the older tree: a module it imports that the
    # older tree lacks (executor_floor.py, before it existed) stopped the run at its import.
    import re
    source = open(os.path.join(ROOT, "bench", "executor_costs.py"), encoding="utf-8").read()
    imported = set(re.findall(r"^from bench import (\w+)", source, re.M))
    imported |= set(re.findall(r"^from bench\.(\w+) import", source, re.M))
    assert {f"{name}.py" for name in imported} - {"report.py"} <= set(executor_costs.BASELINE_COPIES)
    assert "executor_floor" in imported


@pytest.mark.parametrize("name, last, message", [
    ("F0 -> B0", 1, "send, take"),  # F of stage 0 sends its activation; B of stage 0 takes its gradient
    ("B0 -> F0", 1, "-"),  # the first stage's backward sends nothing; its forward takes data
    ("F1 -> B1", 1, "-"),  # the last stage's forward ends in the loss; its backward starts from it
    ("B1 -> F1", 1, "send, take"),
    ("B1 -> U1", 1, "send"),  # the update takes nothing
    ("U0 -> end", 1, "-"),
    ("I2 -> W2", 3, "send"),  # an input gradient sends as B does; W takes nothing
    ("W1 -> F1", 3, "take"),
])
def test_a_gap_holds_the_send_of_the_action_before_it_and_the_take_of_the_one_after(name, last, message):
    assert executor_costs.message_of(name, last) == message


def test_ours_gaps_are_named_by_the_action_before_and_after_on_its_rank_in_its_step():
    def ev(rank, step, kind, stage, start, host_after):
        return SimpleNamespace(rank=rank, step=step, kind=kind, stage=stage, start=start, end=start + 1,
                               host_after=host_after)
    events = [ev(0, 2, "B", 0, 5, 40e-6), ev(0, 2, "F", 0, 1, 90e-6), ev(0, 2, "U", 0, 9, 0.0),
              ev(0, 2, "send", 0, 3, 0.0), ev(1, 2, "F", 1, 2, 30e-6), ev(0, 1, "F", 0, 0, 1.0)]  # step 1 is warm-up
    result = SimpleNamespace(measured_steps=lambda: [2], timeline=SimpleNamespace(events=events))
    assert sorted(executor_costs._plain_gaps(result)) == [
        ["B0 -> U0", 40e-6], ["F0 -> B0", 90e-6], ["F1 -> end", 30e-6], ["U0 -> end", 0.0]]


def test_the_report_names_each_gap_of_ours_beside_the_floors_and_the_message_it_holds():
    gaps = [["F1 -> B1", 25e-6], ["F1 -> B1", 27e-6], ["B1 -> F1", 150e-6], ["U1 -> end", 0.0]]
    now = {"1f1b, p=2": summarize([25e-6, 27e-6, 150e-6, 0.0], ROWS, [0.1], None, gaps)}
    assert now["1f1b, p=2"]["by_gap_us"]["F1 -> B1"] == {"median_us": pytest.approx(26.0), "count": 2}
    floors = {"1f1b, p=2": {"F1 -> B1": 7.0, "B1 -> F1": 85.0}}
    md = report_md({"rounds": 1, "runs": now, "floor_by_gap_us": floors}, MACHINE)
    section = md.split("## What the median is made of", 1)[1]
    assert section.index("| U1 -> end |") < section.index("| F1 -> B1 | 2 | 26.0 | 7.0 | - |") \
        < section.index("| B1 -> F1 | 1 | 150.0 | 85.0 | send, take |")  # sorted by ours
    assert "## What the median is made of" not in report_md({"rounds": 1, "runs": {"x": summarize([20e-6], ROWS)}},
                                                           MACHINE)
