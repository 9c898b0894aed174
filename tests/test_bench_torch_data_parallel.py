"""bench/torch_data_parallel.py: PP x DP on torch's runtime (pipelining + DDP) and on ours.

The slow test runs the script's --quick mode and checks correctness only: both runtimes'
gradients match one process. How fast each is belongs in the report, never in a test."""

import os
import re
import subprocess
import sys

import pytest

from bench import torch_data_parallel as T

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def table_rows(md: str) -> dict[str, list[str]]:
    """The report's table: schedule -> its cells."""
    rows = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] in T.SCHEDULES:
            rows[cells[0]] = cells
    return rows


@pytest.mark.slow
def test_quick_run_reports_both_runtimes_a_ratio_and_matching_gradients(tmp_path):
    out = tmp_path / "TORCH_DATA_PARALLEL.md"
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "torch_data_parallel.py"), "--quick",
                           "--out", str(out)], capture_output=True, text=True, timeout=150, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = out.read_text(encoding="utf-8")
    assert T.RUNTIME_NAMES["ours"] in md and T.RUNTIME_NAMES["torch"] in md
    rows = table_rows(md)
    assert set(rows) == set(T.QUICK.schedules)
    for schedule, cells in rows.items():
        assert float(cells[3]) > 0, f"{schedule}: no ratio in {cells}"  # ours / torch's
        grads = T.GRAD_PATTERN.findall(" | ".join(cells))
        assert len(grads) == 2, f"{schedule}: both runtimes' gradient checks, got {cells}"
        for value, word in grads:  # ours, then torch's: each against one process
            assert float(value) <= 1e-4 and word == "matches", f"{schedule}: {cells}"
        assert cells[10] in T.COMPOSITIONS, f"{schedule}: which data parallelism torch's side used: {cells}"


def fake_row(ours, theirs, ours_grad=1e-7, torch_grad=2e-7):
    row = T.empty_row()
    row.update(ours=ours, torch=theirs, ours_rounds=[ours], torch_rounds=[theirs], ours_device=[0.01],
               ours_grad=ours_grad, ours_replicas=0.0, torch_grad=torch_grad, torch_replicas=0.0, compose="ddp",
               counts={0: [2, 1, 1], 1: [1, 1, 1], 2: [2, 1, 1], 3: [1, 1, 1]})
    return row


MACHINE = {"date": "today", "cpu": "a CPU", "cores": 2, "load": "1 1 1"}


def test_the_report_gives_medians_the_ratio_its_verdict_and_the_gradient_checks():
    data = {"rows": {"1f1b": fake_row([0.08, 0.08], [0.1, 0.1]), "gpipe": fake_row([0.1], [0.1], torch_grad=0.5)}}
    md = T.report_md(data, T.Settings(), MACHINE, "cmd")
    rows = table_rows(md)
    assert rows["1f1b"][1:5] == ["80.0 ms", "100.0 ms", "0.80", "met"]
    assert rows["gpipe"][3:5] == ["1.00", "not met"]
    assert "5.0e-01 (DIFFERS)" in rows["gpipe"] and "1.0e-07 (matches)" in rows["gpipe"]
    # DDP's all-reduces per stage: step 0 (the warm-up) apart, then once per step.
    assert rows["1f1b"][10:] == ["ddp", "step 0: 2/1; then: 1/1"]
    assert "no_sync()" in md and "init_device_mesh" in md and "in step 0 only" in md
    assert "rebuild asserts" not in md  # no composition failed here


def test_a_failed_composition_is_reported_with_its_error_and_the_fallback_used():
    gpipe = fake_row([0.1], [0.1])
    why = ("rank 0: RuntimeError: params_.size() == rebuilt_param_indices_.size() INTERNAL ASSERT FAILED: "
           "rebuilt parameter indices size is not same as original model parameters size.")
    gpipe.update(compose="ddp_unused", failed=[("ddp", why)])
    data = {"rows": {"gpipe": gpipe, "1f1b": {**T.empty_row(), "error": "RuntimeError: boom"}}}
    md = T.report_md(data, T.Settings(), MACHINE, "cmd")
    assert f"- gpipe with `ddp`: `{why}`" in md and "rebuild asserts" in md
    assert table_rows(md)["gpipe"][10] == "ddp_unused"
    assert re.search(r"\| 1f1b \|.*not measured: RuntimeError: boom", md)


def test_an_error_is_summarized_by_its_telling_lines():
    text = ("torch gpipe failed: rank 2: RuntimeError: \n  [Stage 0] failed to run forward:\n  args: (...)\n"
            "Traceback (most recent call last):\n  File x\nRuntimeError: params_.size() == 8 INTERNAL ASSERT\n")
    assert T.error_summary(text) == ("[Stage 0] failed to run forward: / "
                                     "RuntimeError: params_.size() == 8 INTERNAL ASSERT")
