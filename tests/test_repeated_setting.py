"""lessons/repeated_setting.py: a setting a page measured twice (its Run and its sweep's row)
is named with both figures and judged by the band the same run repeated moves by."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipelab.engine.config import RunConfig
from pipelab.lessons.repeated_setting import repeated_in_comparison_note, repeated_setting, repeated_setting_note
from pipelab.lessons.verdict import BUBBLE_NOISE


def ran(microbatches: int, bubble: float) -> SimpleNamespace:
    return SimpleNamespace(config=RunConfig(schedule="gpipe", stages=4, microbatches=microbatches),
                           metrics=SimpleNamespace(device_bubble_fraction=bubble))


def test_the_sweeps_row_with_the_runs_settings_is_found():
    run = [("this lesson", ran(8, 0.21))]
    sweep = [(m, ran(m, 0.1 * m)) for m in (1, 2, 4, 8)]
    value, own, row = repeated_setting(run, sweep)
    assert value == 8 and own is run[0][1] and row is sweep[-1][1]


@pytest.mark.parametrize("run, sweep", [
    ([], [(8, ran(8, 0.2))]),                          # no Run yet
    ([("this lesson", ran(8, 0.2))], []),              # no sweep yet
    ([("this lesson", ran(6, 0.2))], [(8, ran(8, 0.2))]),  # the Run at another m: nothing twice
])
def test_nothing_is_said_where_no_setting_ran_twice(run, sweep):
    assert repeated_setting(run, sweep) is None


@pytest.mark.parametrize("lang, run_bubble, sweep_bubble, says", [
    ("en", 0.212, 0.205, "bubble 0.212 and 0.205 (device clock). They differ by 0.007, within the 0.030"),
    ("en", 0.212, 0.150, "They differ by 0.062, more than the 0.030"),
    ("zh", 0.212, 0.205, "气泡分别为 0.212 和 0.205（设备时钟）。两者相差 0.007，在"),
])
def test_both_figures_their_gap_and_the_band_are_said(lang, run_bubble, sweep_bubble, says):
    note = repeated_setting_note(lang, "m", 8, ran(8, run_bubble), ran(8, sweep_bubble))
    assert says in note and "m = 8" in note
    assert f"{BUBBLE_NOISE:.3f}" in note


def launched(bubble: float, step_ms: float) -> SimpleNamespace:
    return SimpleNamespace(config=RunConfig(schedule="naive", stages=4, microbatches=8),
                           metrics=SimpleNamespace(device_bubble_fraction=bubble, device_step_time_s=step_ms / 1e3))


@pytest.mark.parametrize("lang, again, says", [
    # Lesson 1 as the walk saw it: 176.9 ms in Run, 172.05 ms in the comparison, 2.7 % apart.
    ("en", launched(0.740, 172.05), "step 176.9 ms and bubble 0.738 in Run above, 172.1 ms and 0.740 here"),
    ("en", launched(0.740, 172.05), "less than the same run repeated moves by on a shared host (3% of a step"),
    ("en", launched(0.740, 150.0), "differ by more than the same run repeated moves by"),
    ("en", launched(0.690, 176.0), "differ by more than"),  # the bubble moved past its band
    ("zh", launched(0.740, 172.05), "上面“运行”的一步为 176.9 毫秒、气泡 0.738，这里为 172.1 毫秒、气泡 0.740"),
])
def test_a_comparison_that_ran_the_runs_setting_again_says_both_launches(lang, again, says):
    run = [("this lesson", launched(0.738, 176.9))]
    found = repeated_setting(run, [("this lesson", again), ("gpipe", ran(8, 0.3))])
    assert found is not None and found[2] is again
    assert says in repeated_in_comparison_note(lang, found[1], found[2])
