"""bench/core_per_rank.py: its report says ours against torch's at p = 2 and the target's verdict."""

from bench import core_per_rank as C


def row(ours, theirs):
    return dict(ours_median=ours, theirs_median=theirs, ours_gloo_median=theirs, ratio=ours / theirs,
                ratio_gloo=1.0, bookkeeping_s=0.002, clock_s=0.0001, floor_s=0.08, floor_ratio=0.08 / theirs)


def test_the_report_gives_each_schedules_ratio_and_whether_it_meets_the_target():
    data = {"rows": {"gpipe": row(0.07, 0.1), "1f1b": row(0.09, 0.1)}, "clock_read_s": 6e-7, "rounds": 5}
    md = C.report_md(data, {"date": "today", "cpu": "a CPU", "cores": 2, "load": "1 1 1"})
    assert "| gpipe | 70.0 ms | 100.0 ms | 100.0 ms | 0.70 | met |" in md
    assert "| 1f1b | 90.0 ms | 100.0 ms | 100.0 ms | 0.90 | NOT met |" in md
    assert "600 ns" in md and "--rounds 5" in md
    # The floor (theory at our own costs) against torch's step: whether any overhead cut could meet it.
    assert md.count("| 80.0 ms | 0.80 |") == 2


def test_a_clock_read_is_timed_here_and_is_short():
    assert 0 < C.clock_read_s(2000) < 1e-4


def test_at_p4_the_report_names_its_depth_and_where_our_ranks_ran():
    data = {"rows": {"gpipe": {**row(0.07, 0.1), "placements": ["rank 0 on 0; rank 1 on 1; reference on 2"]}},
            "clock_read_s": 6e-7, "rounds": 2, "stages": 4}
    md = C.report_md(data, {"date": "today", "cpu": "a CPU", "cores": 16, "load": "1 1 1"})
    assert md.startswith("# Where the time goes with a core per rank (p = 4)")
    assert "--rounds 2 --stages 4" in md and "rank 0 on 0; rank 1 on 1; reference on 2" in md
