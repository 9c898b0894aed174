"""bench/data_parallel.py: its quick mode runs here and writes a report whose every row comes
from a run (the figures themselves are the full run's, in bench/DATA_PARALLEL.md)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quick_report(module: str, out) -> dict:
    """``python -m bench.<module> --quick --rounds 1 --out out``: its JSON, after it exited cleanly."""
    done = subprocess.run([sys.executable, "-m", f"bench.{module}", "--quick", "--rounds", "1", "--out", str(out)],
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.with_suffix(".json").read_text())


@pytest.mark.slow
def test_the_quick_report_has_every_stage_of_every_layout_and_correct_gradients(tmp_path):
    out = tmp_path / "DATA_PARALLEL.md"
    data = quick_report("data_parallel", out)
    # 2 layouts x 2 placements, each with a row per stage (p = 2 and p = 4).
    assert sorted((r["p"], r["reduce_at"], len(r["stages"])) for r in data["exposed"]) == [
        (2, "backward", 2), (2, "flush", 2), (4, "backward", 4), (4, "flush", 4)]
    for row in data["exposed"]:
        for stage in row["stages"]:
            assert 0.0 <= stage["device"] <= 1.0 and stage["cost_ms"] > 0
    # Correctness is asserted; the timing figures only reported.
    assert {(r["schedule"], r["d"]) for r in data["gradients"]} == {("1f1b", 2), ("1f1b", 4), ("zb-v", 2), ("zb-v", 4)}
    assert all(r["worst"] <= 1e-5 and r["identical"] for r in data["gradients"])
    assert [r["replicas"] for r in data["replicated"]] == ["2-1-1", "1-2-1", "1-1-2"]
    assert all(r["worst"] <= 1e-5 and r["identical"] for r in data["replicated"])
    text = out.read_text()
    assert "## Each stage's exposed all-reduce" in text and "| p = 4, d = 2 | flush | 3 |" in text


@pytest.mark.slow
def test_the_planner_bench_predicts_and_measures_every_layout(tmp_path):
    out = tmp_path / "PLANNER.md"
    data = quick_report("planner", out)
    mlp, wide = data["models"]
    assert [r["config"] for r in mlp["rows"]] == ["1-1-1-1", "2-2", "4"]
    assert [r["label"] for r in wide["rows"]][1:] == ["straight", "2-1-1", "data parallel"]
    assert all(r["predicted_s"] > 0 and r["measured_s"] > 0 for m in data["models"] for r in m["rows"])
    assert "| 2 x 2 | 2-2 |" in out.read_text() and "## wide-first" in out.read_text()
