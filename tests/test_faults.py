"""engine/runtime/faults.py: the one place a test's fault enters a launch."""

import pytest

from pipelab.engine.runtime.faults import FAULT_ENV, injected, planned_fault


@pytest.mark.parametrize("spec, fault", [
    ("", None),
    ("crash:1:1", ("crash", 1, 1)),
    (" hang:3:2 ", ("hang", 3, 2)),
])
def test_the_variable_names_the_fault(spec, fault, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, spec)
    assert planned_fault() == fault


@pytest.mark.parametrize("spec", ["boom:1:1", "crash:1", "crash:a:1", "hang:1:-1"])
def test_a_malformed_fault_is_refused_in_one_line(spec, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, spec)
    with pytest.raises(ValueError, match="crash:RANK:STEP or hang:RANK:STEP") as err:
        planned_fault()
    assert "\n" not in str(err.value)


def test_injected_holds_for_its_block_only(monkeypatch):
    monkeypatch.delenv(FAULT_ENV, raising=False)
    with injected("hang", 2, 1):
        assert planned_fault() == ("hang", 2, 1)
    assert planned_fault() is None
    monkeypatch.setenv(FAULT_ENV, "crash:0:0")
    with injected("hang", 1, 1):
        assert planned_fault() == ("hang", 1, 1)
    assert planned_fault() == ("crash", 0, 0)


def test_no_engine_or_app_function_takes_a_fault():
    """The launcher reads the variable; nothing passes a fault along (issue 46)."""
    import inspect

    from pipelab.app.runner import jobs
    from pipelab.engine.runtime import alternating, launch, paired
    for fn in (launch.run, launch.start_ranks, alternating.run_alternating, paired.run_request, jobs.run_job):
        assert "fault" not in inspect.signature(fn).parameters, fn.__qualname__
