"""A rank that crashes or hangs, seen through a lesson page (AppTest, PIPELAB_TEST_FAULT).

The page must name the failing rank in one st.error, and the run must leave no rank process
and no pipelab-run-* folder behind. Cancel from the page must stop a run that is going.
"""

from __future__ import annotations

import time

import pytest

from pipelab.engine.runtime.faults import FAULT_ENV
from tests.conftest import rank_processes, run_leftovers, wait_until_gone
from tests.test_app import SMALL, chart_specs, open_page, set_knobs

pytestmark = pytest.mark.slow  # every test here starts processes (engine ranks, a server, a browser or a tool)

SLUG = "gpipe"
# 4 ranks so that rank 2 exists; 3 steps so that step 1 is mid-run.
KNOBS = {**SMALL, "stages": 4, "microbatches": 4, "steps": 3}


@pytest.fixture(scope="module", autouse=True)
def warm_forkserver():
    """Start this process's forkserver (it preloads torch) outside the timed part."""
    from pipelab.engine.config import RunConfig
    from pipelab.engine.runtime.launch import run
    run(RunConfig(schedule="gpipe", stages=2, microbatches=2, model="mlp", layers=2, hidden=16,
                  microbatch_size=2, steps=1))


def start_run(monkeypatch, fault: str):
    monkeypatch.setenv(FAULT_ENV, fault)  # read as the run's ranks start (engine/runtime/faults.py)
    at = open_page(SLUG)
    set_knobs(at, SLUG, KNOBS)
    at.button(key=f"{SLUG}:main:start").click().run()
    assert not at.exception, at.exception
    return at, time.monotonic()


def wait_for(at, predicate, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert not at.exception, at.exception
        if predicate(at):
            return True
        time.sleep(0.25)
        at.run()
    return predicate(at)


@pytest.mark.parametrize("fault,rank", [("crash:1:1", 1), ("hang:2:1", 2)])
def test_page_names_the_failing_rank(fault, rank, monkeypatch, private_tmp):
    at, clicked = start_run(monkeypatch, fault)
    wait_for(at, lambda a: len(a.error) > 0, timeout=40)
    took = time.monotonic() - clicked
    assert took < 15, took
    messages = [e.value for e in at.error]
    assert len(messages) == 1 and "\n" not in messages[0], messages
    assert f"rank {rank}" in messages[0], messages
    assert not chart_specs(at)
    assert wait_until_gone() == [], rank_processes()
    assert run_leftovers(private_tmp) == []
    print(f"\n{fault}: page shows {messages[0]!r} after {took:.1f} s")


def test_cancel_from_the_page_stops_a_running_run(monkeypatch, private_tmp):
    at, _ = start_run(monkeypatch, "hang:0:1")  # keeps the run going until cancelled
    assert wait_for(at, lambda a: any("running" in p.proto.text for p in a.get("progress")), timeout=10)
    cancel = at.button(key=f"{SLUG}:main:cancel")
    assert not cancel.disabled
    cancel.click().run()
    assert wait_for(at, lambda a: any("cancelled" in w.value for w in a.warning), timeout=10), \
        [w.value for w in at.warning]
    assert not at.error and not chart_specs(at)
    assert wait_until_gone() == [], rank_processes()
    assert run_leftovers(private_tmp) == []
