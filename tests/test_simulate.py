"""The simulator's own contract: a deadlock is a typed error carrying where each rank is stuck,
and the simulator does not need the validator (pipelab.engine.theory.validate imports it, not the reverse)."""

import subprocess
import sys

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.theory.simulate import UNIT_COSTS, Deadlock, play, simulate
from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate

CROSSED = "0F0 0B0 0F1 0B1\n1F1 1B1 1F0 1B0"  # rank 0 waits for 1F0's gradient, rank 1 for 0F1


def test_a_deadlock_is_raised_with_the_blocked_state():
    schedule = parse_schedule(CROSSED)
    with pytest.raises(Deadlock) as err:
        simulate(schedule)
    assert isinstance(err.value, ScheduleError) and err.value.schedule is schedule
    assert err.value.blocked.stuck == {0: 1, 1: 0} == play(schedule, UNIT_COSTS)[1].stuck
    assert str(err.value) == "deadlock: every remaining rank waits on another (rank 0 at 0B0, rank 1 at 1F1)"


def test_the_validator_formats_it_with_the_stuck_step_marked():
    with pytest.raises(InvalidSchedule) as err:
        validate(parse_schedule(CROSSED))
    assert err.value.rule == "rank 0, action 1: deadlock: every remaining rank waits on another (rank 0 at 0B0, " \
                             "rank 1 at 1F1)"
    assert [line.split()[0] for line in err.value.table.splitlines() if "<-- here" in line] == ["1"]


@pytest.mark.slow
def test_the_simulator_imports_without_the_validator():
    code = "import sys, pipelab.engine.theory.simulate; print('pipelab.engine.theory.validate' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"

