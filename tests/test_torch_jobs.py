"""The server's runner (app/runner/jobs.py) runs a job on torch's runtime as it runs ours: a
RunConfig with runtime="torch" reaches engine/torch_bridge/launch.py through pipelab.engine.runtime.launch.run,
reports progress, and a cancelled one leaves no rank and no temp folder behind."""

from __future__ import annotations

import time

import pytest

from pipelab.app.runner.jobs import CANCELLED, DONE, JobRunner
from pipelab.engine.config import RunConfig
from pipelab.engine.torch_bridge.rank import TRANSPORT
from tests.conftest import run_leftovers, wait_until_gone
from tests.engine_runs import SMALL


@pytest.mark.slow
def test_a_torch_job_runs_on_torchs_runtime_and_a_cancelled_one_leaves_nothing(private_tmp):
    runner = JobRunner(max_concurrent=1)
    config = RunConfig(schedule="1f1b", stages=2, microbatches=4, runtime="torch", **SMALL)
    done = runner.submit(config)
    assert runner.wait([done], 120)
    status = runner.status(done)
    assert status.state == DONE, status.error
    assert status.result.transport == TRANSPORT and status.result.config.runtime == "torch"
    ours = runner.submit(config.with_(runtime="engine"))
    assert runner.wait([ours], 120)
    assert runner.status(ours).result.transport != TRANSPORT  # the same settings, our runtime
    # A long run, cancelled once its ranks report progress.
    long = runner.submit(config.with_(steps=20, timeout_s=120.0))
    deadline = time.monotonic() + 60
    while runner.status(long).fraction <= 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner.status(long).fraction > 0, runner.status(long)  # torch's ranks report progress
    runner.cancel(long)
    assert runner.wait([long], 30)
    assert runner.status(long).state == CANCELLED
    assert wait_until_gone() == []
    assert run_leftovers(private_tmp) == []
