"""The simulator's own contract: a deadlock is a typed error carrying where each rank is stuck,
the spans the cost-aware schedules compare are the timeline's, and the simulator does not need the
validator (pipelab.engine.theory.validate imports it, not the reverse)."""

import subprocess
import sys

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules.registry import build_schedule
from pipelab.engine.theory.simulate import UNIT_COSTS, CostModel, Deadlock, play, simulate, simulated_own_spans
from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate

CROSSED = "0F0 0B0 0F1 0B1\n1F1 1B1 1F0 1B0"  # rank 0 waits for 1F0's gradient, rank 1 for 0F1


def test_a_deadlock_is_raised_with_the_blocked_state():
    schedule = parse_schedule(CROSSED)
    with pytest.raises(Deadlock) as err:
        simulate(schedule)
    assert isinstance(err.value, ScheduleError) and err.value.schedule is schedule
    assert err.value.blocked.stuck == {0: 1, 1: 0} == play(schedule, UNIT_COSTS)[1].stuck
    assert str(err.value) == "deadlock: every remaining rank waits on another (rank 0 at 0B0, rank 1 at 1F1)"


def test_simulated_own_spans_deadlock_as_simulate_does():
    with pytest.raises(Deadlock) as err:
        simulated_own_spans(parse_schedule(CROSSED), UNIT_COSTS)
    assert err.value.blocked.stuck == {0: 1, 1: 0}


UNEVEN = CostModel(forward=1.0, backward_input=1.3, backward_weight=0.6, link=0.05,
                   host_after=(0.01, 0.02, 0.0, 0.03))


#  schedule      p  m   chunks  costs
@pytest.mark.parametrize("name, p, m, chunks, cost", [
    ("1f1b",        4, 8,  None,  UNEVEN),
    ("zb-h2",       4, 8,  None,  UNEVEN),
    ("interleaved", 2, 4,  2,     UNEVEN),
    ("zb-v",        4, 8,  None,  UNIT_COSTS),
    ("gpipe",       3, 5,  None,  CostModel(forward=2.0, backward=3.0, link=0.5)),
])
def test_simulated_own_spans_are_the_timelines_first_start_to_last_end_per_rank(name, p, m, chunks, cost):
    # cost_search keeps the candidate order with the shortest longest span without building the
    # timeline: the same play, so the same spans to the last bit.
    schedule = build_schedule(name, p, m, chunks)
    events = simulate(schedule, cost).events
    expected = [max(e.end for e in events if e.rank == r) - min(e.start for e in events if e.rank == r)
                for r in range(schedule.num_ranks)]
    assert simulated_own_spans(schedule, cost) == expected


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

