"""engine/results/windows.py: which steps a run's figures cover, and how each is cut out."""

from __future__ import annotations

import pytest

from pipelab.engine.results.windows import StepWindows, measured_steps
from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory.simulate import CostModel, simulate, simulate_run


@pytest.mark.parametrize("steps, overlapped, covered", [
    (1, False, (0,)), (2, False, (1,)), (3, False, (2,)), (5, False, (2, 3, 4)),  # after two warm-up steps
    (1, True, (0,)), (2, True, (1,)), (5, True, (1, 2, 3)),                       # steady: not the first nor last
])
def test_which_steps_a_run_s_figures_cover(steps, overlapped, covered):
    assert StepWindows.of_run(steps, overlapped).steps == covered
    if not overlapped:
        assert tuple(measured_steps(steps)) == covered


def test_a_barrier_step_is_its_own_window_without_the_update_after_the_flush():
    schedule = build_schedule("1f1b", 4, 8)
    cost = CostModel(forward=1.0, backward_input=1.0, backward_weight=1.0, update=5.0)
    timeline = simulate_run(schedule, cost, 3, False)
    windows = StepWindows.of_run(3, False)
    figures = windows.figures(windows.window(timeline, schedule))
    one = simulate(schedule, CostModel(forward=1.0, backward_input=1.0, backward_weight=1.0))
    assert figures.step_times == (pytest.approx(one.step_time()),)  # the update's 5 units are not in it
    assert figures.bubble == pytest.approx(3 / 11)  # (p-1)/(m+p-1): the formula's window
    assert figures.bubbles_per_step == (tuple(pytest.approx(b) for b in one.bubble_fractions()),)


def test_overlapping_steps_are_windowed_device_by_device_over_the_steady_steps():
    schedule = build_schedule("zb-h2", 4, 8)
    timeline = simulate_run(schedule, CostModel(forward=1.0, backward_input=1.0, backward_weight=1.0), 4, True)
    windows = StepWindows.of_run(4, True)
    figures = windows.figures(windows.window(timeline, schedule))
    assert windows.window(timeline, schedule) is timeline  # a stream's updates are part of it
    assert len(figures.step_times) == 2 and figures.bubbles_per_step is None
    assert figures.bubble < 3 / 11  # the two ends of a barrier step are gone
