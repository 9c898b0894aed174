"""bench/core_per_rank.py: its report says ours against torch's at p = 2 and the target's verdict."""

import pytest

from bench import core_per_rank as C


def row(ours, theirs):
    return dict(ours_median=ours, theirs_median=theirs, ours_gloo_median=theirs, ratio=ours / theirs,
                ratio_gloo=1.0, bookkeeping_s=0.002, clock_s=0.0001, floor_s=0.08, floor_ratio=0.08 / theirs,
                over_floor=ours / 0.08)


def test_the_report_gives_each_schedules_ratio_and_whether_it_meets_the_target():
    data = {"rows": {"gpipe": row(0.07, 0.1), "1f1b": row(0.09, 0.1)}, "clock_read_s": 6e-7, "rounds": 5}
    md = C.report_md(data, {"date": "today", "cpu": "a CPU", "cores": 2, "load": "1 1 1"})
    assert "| gpipe | 70.0 ms | 100.0 ms | 100.0 ms | 0.70 | met |" in md
    assert "| 1f1b | 90.0 ms | 100.0 ms | 100.0 ms | 0.90 | NOT met |" in md
    assert "600 ns" in md and "--rounds 5" in md
    # The floor (theory at our own costs) against torch's step: whether any overhead cut could meet it.
    assert md.count("| 80.0 ms | 0.80 |") == 2
    # Ours against the floor, the target where the floor itself is above 0.75 of torch's.
    assert "| 80.0 ms | 0.80 | 0.875 | met |" in md and "| 80.0 ms | 0.80 | 1.125 | NOT met |" in md
    assert "Where ours / floor goes" not in md  # a report written before the device clock was kept


def test_the_report_splits_ours_over_the_floor_into_device_over_floor_and_wall_over_device():
    data = {"rows": {"1f1b": {**row(0.09, 0.1), "ours_device_median": 0.084}}, "clock_read_s": 6e-7, "rounds": 5}
    md = C.report_md(data, {"date": "today", "cpu": "a CPU", "cores": 2, "load": "1 1 1"})
    # 90 ms on the wall clock, 84 on the device clock, a floor of 80: 1.05 x 1.071 = 1.125.
    assert "| 1f1b | 90.0 ms | 84.0 ms | 80.0 ms | 1.050 | 1.071 | 1.125 |" in md


@pytest.mark.slow  # two ranks, a tiny model
def test_the_floor_is_the_run_played_without_the_executors_time_between_actions():
    from dataclasses import replace

    from pipelab.engine.config import RunConfig
    from pipelab.engine.results.result import measured_costs, schedule_only
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.theory.simulate import simulate
    r = run(RunConfig(schedule="1f1b", stages=2, microbatches=4, steps=4))
    floor = C.floor_step_s(r)
    # RunMetrics' simulated step adds each action's host_after, which a CPU run always has.
    assert 0 < floor < r.metrics.simulated_step_time_s
    cost = measured_costs(r.timeline, schedule_only(r.timeline, r.schedule), r.schedule, r.metrics.link_cost_s,
                          list(r.measured_steps()), [])
    assert any(cost.host_after)
    assert simulate(r.schedule, cost).step_time() == pytest.approx(r.metrics.simulated_step_time_s)
    assert floor == pytest.approx(simulate(r.schedule, replace(cost, host_after=0.0)).step_time())


def test_a_clock_read_is_timed_here_and_is_short():
    assert 0 < C.clock_read_s(2000) < 1e-4


def test_at_p4_the_report_names_its_depth_and_where_our_ranks_ran():
    data = {"rows": {"gpipe": {**row(0.07, 0.1), "placements": ["rank 0 on 0; rank 1 on 1; reference on 2"]}},
            "clock_read_s": 6e-7, "rounds": 2, "stages": 4}
    md = C.report_md(data, {"date": "today", "cpu": "a CPU", "cores": 16, "load": "1 1 1"})
    assert md.startswith("# Where the time goes with a core per rank (p = 4)")
    assert "--rounds 2 --stages 4" in md and "rank 0 on 0; rank 1 on 1; reference on 2" in md
