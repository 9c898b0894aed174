"""The sentence beside the two runtimes' timelines (lessons/runtime_difference.py): its
figures are the runs' own, it says where the gap lies and why there, in both languages."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from pipelab.lessons.runtime_difference import NOISE, RuntimeFigures, runtime_difference
from tests.test_chinese_text import ascii_commas, latin_words


def figures(wall, busy, device=None, device_busy=None, link=0.05, transport="shared memory") -> RuntimeFigures:
    return RuntimeFigures(wall_step_ms=wall, wall_busy_ms=busy, device_step_ms=device or busy * 1.2,
                          device_busy_ms=device_busy or busy, link_ms=link, transport=transport)


OURS = figures(20.0, 15.0, device=18.0, device_busy=14.0, link=0.021)
BETWEEN = figures(31.0, 16.0, device=19.5, device_busy=15.0, link=0.130, transport="torch.distributed.pipelining, gloo")
INSIDE = figures(30.0, 24.0, device=27.0, device_busy=23.0, link=0.025)


def test_a_gap_between_the_actions_is_said_with_the_runs_own_figures():
    diff = runtime_difference(OURS, BETWEEN)
    assert diff.where == "between"
    text = diff.text
    assert "31.0 ms a step, ours 20.0 ms: 11.0 ms more" in text
    # 16 - 15 inside, (31 - 16) - (20 - 15) = 10 between: the wall clock's gap, split exactly.
    assert "+1.0 ms inside the actions, +10.0 ms between them" in text
    assert "Most of the difference lies between the actions" in text
    assert "0.130 ms" in text and "0.021 ms over shared memory" in text
    assert "REDUCE_GRAD" not in text and "divides the gradients by m in a pass of its own" in text
    assert "19.5 ms on torch's and 18.0 ms on ours" in text  # the device clock beside it


def test_a_gap_inside_the_actions_is_said_there():
    diff = runtime_difference(OURS, INSIDE)
    assert diff.where == "inside"
    assert "+9.0 ms inside the actions, +1.0 ms between them" in diff.text
    assert "Most of the difference lies inside the actions" in diff.text
    assert "24.0 ms a device on torch's and 15.0 ms on ours" in diff.text


def test_torch_faster_and_a_tie_are_said_as_such():
    faster = runtime_difference(BETWEEN, OURS)  # the roles swapped: torch's is now the shorter step
    assert "11.0 ms less" in faster.text and "−10.0 ms between them" in faster.text
    close = figures(20.0 * (1 + NOISE / 2), 15.2)
    tie = runtime_difference(OURS, close)
    assert tie.where is None and "within 3%" in tie.text and "Most of" not in tie.text


def test_the_figures_come_from_a_finished_runs_metrics():
    metrics = SimpleNamespace(wall_step_time_s=0.040, wall_bubble_fraction=0.25, device_step_time_s=0.030,
                              device_bubble_fraction=0.2, link_cost_s=0.0001)
    f = RuntimeFigures.of(SimpleNamespace(metrics=metrics, transport=None))
    assert (f.wall_step_ms, f.wall_busy_ms, f.device_step_ms, f.device_busy_ms) == pytest.approx((40, 30, 30, 24))
    assert f.link_ms == pytest.approx(0.1) and f.transport == "shared memory" and f.wall_between_ms == pytest.approx(10)


@pytest.mark.parametrize("torch", [BETWEEN, INSIDE, OURS], ids=["between", "inside", "tie"])
def test_the_chinese_says_the_same_figures_in_chinese(torch):
    en, zh = runtime_difference(OURS, torch, "en"), runtime_difference(OURS, torch, "zh")
    assert zh.where == en.where and len(zh.sentences) == len(en.sentences)
    number = re.compile(r"[+−]?\d+\.\d+")
    assert sorted(number.findall(zh.text)) == sorted(number.findall(en.text))
    assert latin_words(zh.text) == [] and ascii_commas(zh.text) == []
    assert "共享内存" in zh.text
