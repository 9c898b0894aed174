"""engine/runtime/planned_runs.py for real: a PlannedRequest through the runner's job (app/runner/jobs.py run_job)
profiles the model, plans, and runs its plans side by side, and the process that asked never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts engine ranks

ROOT = Path(__file__).resolve().parent.parent

ASK = """
import json, sys, threading
from pipelab.app.runner.jobs import run_job
from pipelab.engine.config import Limits, RunConfig
from pipelab.engine.runtime.planned_runs import CHOSEN, REPLICATED, STRAIGHT, PlannedRequest

model = RunConfig(schedule="1f1b", stages=1, microbatches=1, model="wide-first", layers=9, hidden=128,
                  microbatch_size=16)
lines = []
out = run_job(PlannedRequest(model, 4, 8, (2, 1, 1), pairs=2), Limits(), lambda f, s: lines.append(s),
              threading.Event())
runs = [out.run_of(i) for i in (STRAIGHT, REPLICATED, CHOSEN)]
print(json.dumps({
    "torch": "torch" in sys.modules, "lines": lines, "method": out.method, "ran": out.ran,
    "plans": [(p.config, list(p.stage_layers), p.workers, p.throughput) for p in out.plans],
    "runs": [(r.config.microbatches, list(r.config.stage_layers), list(r.schedule.stage_replicas),
              r.all_processes_timeline().num_ranks, r.metrics.device_step_time_s, r.metrics.launch_id) for r in runs],
    "stage0": sorted({(e.rank, e.microbatch) for e in runs[1].timeline.compute_events()
                      if e.stage == 0 and e.kind in "FB"}),
    "reduce_ranks": sorted({e.rank for e in runs[1].timeline.events if e.kind == "R"}),
}))
"""


def test_a_planned_request_profiles_plans_and_runs_its_plans_side_by_side():
    done = subprocess.run([sys.executable, "-c", ASK], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["torch"] is False  # profiled in a process of the forkserver's; the runs in their ranks
    phases = [line for line in got["lines"] if not line.startswith(("step", "round"))]
    assert phases[:3] == ["profiling each layer", "timing each stage in a short run", "measuring the link"]
    (straight, s_layers, s_workers, _), (replicated, r_layers, r_workers, _), (_, _, chosen_workers, _) = got["plans"]
    assert (straight, s_workers, replicated, r_workers) == ("1-1-1-1", 4, "2-1-1", 4)
    assert sum(s_layers) == sum(r_layers) == 9
    (s_m, s_cut, s_replicas, s_rows, s_step, launch), (r_m, r_cut, r_replicas, r_rows, r_step, r_launch), _ = \
        got["runs"]
    assert (s_m, s_cut, s_replicas, s_rows) == (8, s_layers, [], 4)  # each run plays its plan (no replicas: none)
    assert (r_m, r_cut, r_replicas, r_rows) == (8, r_layers, [2, 1, 1], 4)  # a row per worker
    assert s_step > 0 and r_step > 0
    if chosen_workers == 4:  # all four workers in every plan: one launch, steps in turn
        assert got["method"] == "steps in turn" and launch == r_launch
    # Stage 0's micro-batches go round-robin over its two workers (ranks 0 and 1), each reducing its gradients.
    assert got["stage0"] == sorted([j % 2, j] for j in range(8)), got["stage0"]
    assert got["reduce_ranks"] == [0, 1]
