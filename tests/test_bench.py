"""The benchmark's pure parts: verdicts, tables, the README's few lines and their rewrite, overhead arithmetic.

No timing assertions. The end-to-end smoke run (a tiny --quick, about half a minute) runs
every figure's code once on real runs: the pure parts alone once missed a reader left on
the old metrics dict.
"""

import os
import re
import subprocess
import sys
from types import SimpleNamespace as E

import pytest

from bench import report as R
from bench.torch_pipelining import SCHEDULES, stage_indices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("value, target, sense, expected", [
    (0.85, 0.9, "<=", "met"),
    (0.90, 0.9, "<=", "met"),
    (0.95, 0.9, "<=", "not met"),
    (None, 0.9, "<=", "not measured"),
    (float("nan"), 0.9, "<=", "not measured"),
    (1.2, 1.0, ">=", "met"),
    (0.8, 1.0, ">=", "not met"),
])
def test_verdict(value, target, sense, expected):
    assert R.verdict(value, target, sense) == expected


def test_verdict_rejects_unknown_sense():
    with pytest.raises(ValueError):
        R.verdict(1.0, 1.0, "<")


@pytest.mark.parametrize("verdicts, expected", [
    (["met", "met"], "met"),
    (["met", "not met"], "not met"),
    (["met", "not measured"], "met"),
    (["not measured"], "not measured"),
    ([], "not measured"),
])
def test_all_met(verdicts, expected):
    assert R.all_met(verdicts) == expected


def test_count_met():
    assert R.count_met(["met", "not met", "met"]) == "2/3 met"


def test_prose_joins_a_docstrings_lines_and_keeps_a_lists_items_apart():
    text = """A paragraph
    over two lines:

    - one item
      that goes on;
    - another.

    The end."""
    assert R.prose(text) == "A paragraph over two lines:\n\n- one item that goes on;\n- another.\n\nThe end."


def test_table_is_markdown_and_escapes_pipes():
    assert R.table(["a", "b"], [[1, "x|y"]]) == (
        "| a | b |\n"
        "|---|---|\n"
        "| 1 | x\\|y |")


def test_formatters():
    assert R.ms(0.0123) == "12.3 ms"
    assert R.pct(0.051) == "5.1%"
    assert R.num(None) == "—"
    assert R.mib(2**20) == "1.00 MiB"
    assert R.spread([0.01, 0.03, 0.02]) == "10.0-30.0 ms"


@pytest.mark.parametrize("err, expected", [
    (RuntimeError("rank 1 failed\ntraceback follows"), "RuntimeError: rank 1 failed"),  # first line only
    (TimeoutError(), "TimeoutError: "),                                                  # no message at all
])
def test_error_text_is_one_line(err, expected):
    assert R.error_text(err) == expected


@pytest.mark.parametrize("ours, theirs, expected", [
    ([0.27, 0.30, 0.28], [0.30, 0.31, 0.35], "0.80-0.97"),  # pair by pair, not min/min
    ([0.30], [0.30], "1.00-1.00"),
    ([], [], "—"),
    ([0.3], [0.0], "—"),  # a zero time is no ratio
])
def test_ratio_spread_pairs_round_i_with_round_i(ours, theirs, expected):
    assert R.ratio_spread(ours, theirs) == expected


def test_replace_section_keeps_everything_outside_the_markers():
    text = f"intro\n{R.START}\nold table\n{R.END}\noutro\n"
    assert R.replace_section(text, "new table") == f"intro\n{R.START}\nnew table\n{R.END}\noutro\n"


@pytest.mark.parametrize("text", ["no markers", f"{R.END}\n{R.START}", f"{R.START} only"])
def test_replace_section_without_markers_returns_none(text):
    assert R.replace_section(text, "x") is None


def test_update_readme_rewrites_a_temp_file(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"# t\n{R.START}\nold\n{R.END}\nend\n")
    assert "rewritten" in R.update_readme(str(path), "| new |")
    assert path.read_text() == f"# t\n{R.START}\n| new |\n{R.END}\nend\n"


def test_a_report_into_a_folder_not_made_yet_makes_it(tmp_path, monkeypatch):
    # bench/many_cores.sh and a user's --out name folders of their own: a bench that measured for
    # minutes ended on FileNotFoundError there.
    monkeypatch.setattr(R, "machine_description", lambda: {"cores": 2})  # it asks the host (a process)
    out = tmp_path / "new" / "REPORT.md"
    R.write_report(str(out), {"figure": 1}, lambda data, machine: f"figure {data['figure']}\n")
    assert out.read_text() == "figure 1\n"
    assert '"figure": 1' in (tmp_path / "new" / "REPORT.json").read_text()


def test_update_readme_leaves_a_file_without_markers_alone(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("# no markers\n")
    assert "left alone" in R.update_readme(str(path), "x")
    assert path.read_text() == "# no markers\n"
    assert "does not exist" in R.update_readme(str(tmp_path / "missing.md"), "x")


@pytest.mark.parametrize("cell, expected", [
    ("met", R.MET),
    ("met (5/5 met)", R.MET),
    ("not met (8/10 met)", R.NOT_MET),
    ("not measured", R.NOT_MEASURED),
    ("—", None),  # a reference row: no target
])
def test_verdict_of_reads_a_summary_cell(cell, expected):
    assert R.verdict_of(cell) == expected


SUMMARY_ROWS = [
    ["Step time ours / torch", "GPipe 0.66", "<= 0.90 each", "met (5/5 met)"],
    ["Same, through gloo", "GPipe 0.80", "reference, no target", "—"],
    ["Bubble: device vs wall clock", "0.069", "<= 0.05 each", "not met (8/10 met)"],
    ["App latency (browser)", "no chromium", "median <= 5 s", "not measured"],
    ["Executor overhead", "4.3%", "<= 5%", "met"],
]


def test_readme_summary_is_a_few_lines_with_the_counts_the_misses_and_the_link():
    assert R.readme_summary("Measured on a host.", SUMMARY_ROWS) == (
        "Measured on a host.\n"
        "\n"
        "**2 of 4 targets met** (1 not measured); not met:\n"
        "- Bubble: device vs wall clock: 0.069 (target <= 0.05 each)\n"
        "\n"
        "Every figure, its target and how it is measured: [bench/RESULTS.md](bench/RESULTS.md).")


def test_readme_summary_stays_short_however_many_targets_are_missed():
    rows = [[f"figure {i}", "1", "<= 0", "not met"] for i in range(10)] + [["ok", "0", "<= 0", "met"]]
    text = R.readme_summary("m", rows)
    assert "**1 of 11 targets met**; not met:" in text
    assert [line for line in text.splitlines() if line.startswith("- ")] == [
        "- figure 0: 1 (target <= 0)", "- figure 1: 1 (target <= 0)", "- figure 2: 1 (target <= 0)", "- and 7 more"]
    assert "| figure |" not in text  # the table is bench/RESULTS.md's, not the README's
    assert R.readme_summary("m", rows[-1:]).splitlines()[2] == "**1 of 1 targets met**."


def test_machine_parsing():
    cpuinfo = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n"
    assert R.cpu_model(cpuinfo) == "Intel(R) Xeon(R) CPU @ 2.20GHz"
    assert R.mem_total_gib("MemTotal:       8388608 kB\n") == 8.0


def test_overhead_share_is_span_minus_compute_and_recv():
    # rank 0, step 1: span 0..10; compute 6; recv wait 2; send 0.5 -> overhead 2 / 10
    evs = [E(rank=0, step=1, kind="recv", wall_start=0.0, wall_end=2.0),
           E(rank=0, step=1, kind="F", wall_start=2.5, wall_end=5.5),
           E(rank=0, step=1, kind="send", wall_start=5.5, wall_end=6.0),
           E(rank=0, step=1, kind="B", wall_start=7.0, wall_end=10.0),
           E(rank=0, step=1, kind="U", wall_start=10.0, wall_end=30.0),  # after the flush: not counted
           E(rank=0, step=0, kind="F", wall_start=0.0, wall_end=1.0)]  # warm-up step: not counted
    kinds = {"F", "B", "I", "W"}
    assert R.overhead_shares(evs, [1], kinds) == pytest.approx([0.2])
    assert R.send_shares(evs, [1], kinds) == pytest.approx([0.05])


def test_first_forward_ratio_compares_micro_batch_0_with_the_rest_per_stage():
    def f(stage, j, duration, step=1):
        return E(kind="F", stage=stage, microbatch=j, step=step, start=0.0, end=duration)
    evs = [f(0, 0, 2.0), f(0, 1, 1.0), f(0, 2, 1.0),  # stage 0: 2x
           f(1, 0, 3.0), f(1, 1, 1.0), f(1, 2, 1.0),  # stage 1: 3x
           f(0, 0, 50.0, step=0),  # warm-up step: not counted
           E(kind="B", stage=0, microbatch=0, step=1, start=0.0, end=9.0)]  # not a forward
    assert R.first_forward_ratio(evs, [1]) == pytest.approx(2.5)
    assert R.first_forward_ratio([f(0, 0, 1.0)], [1]) is None  # nothing to compare with


@pytest.mark.parametrize("device, by_action, stage_means, verdict", [
    (1.05, 1.00, 0.80, "met"),      # within 10% of each action's mean cost: met, however far the means are
    (1.20, 1.00, 1.20, "not met"),  # a stall the per-action prediction does not have
])
def test_growth_holds_the_device_step_against_each_actions_mean_cost(device, by_action, stage_means, verdict):
    from bench.growth import growth_row
    from tests.fake_results import fake_memory, fake_metrics
    run = E(metrics=fake_metrics(2, wall_step_time_s=2.0, device_step_time_s=device, simulated_step_time_s=stage_means,
                                 simulated_step_time_per_action_costs_s=by_action,
                                 simulated_peak_activation_bytes_per_device=(100, 100)),
            memory={r: fake_memory(peak_activation_bytes=100, message_buffer_bytes=8) for r in (0, 1)},
            timeline=E(events=[]), measured_steps=lambda: [1])
    row = growth_row(run)
    assert row["device_vs_sim"] == pytest.approx(device / by_action - 1)
    assert row["device_vs_stage_means"] == pytest.approx(device / stage_means - 1)
    assert row["verdict"] == verdict and row["mem_verdict"] == "met"


#   each run's device vs simulated (None: the run failed)   the run reported    all runs listed
MEDIAN_RUNS = [
    ([0.013, 0.165, -0.010],                                   0.013,              [0.013, 0.165, -0.010]),
    ([0.02, None, 0.30],                                       0.02,               [0.02, 0.30]),
    ([0.05],                                                   0.05,               [0.05]),
]


@pytest.mark.parametrize("runs, reported, listed", MEDIAN_RUNS)
def test_growth_reports_each_points_median_run(runs, reported, listed):
    from bench.growth import median_run
    rows = [{"error": "RunFailed: rank 1"} if x is None else {"device_vs_sim": x, "run": i} for i, x in enumerate(runs)]
    row = median_run(rows)
    assert row["device_vs_sim"] == reported and row["device_vs_sim_runs"] == listed
    assert row["run"] == runs.index(reported)  # one run's row, not figures mixed from several


def test_growth_point_is_an_error_only_when_every_run_failed():
    from bench.growth import median_run
    assert median_run([{"error": "RunFailed: a"}, {"error": "RunFailed: b"}]) == {"error": "RunFailed: a"}


@pytest.mark.parametrize("rank, world, chunks, layout, expected", [
    (1, 4, 1, "loop", [1]),
    (1, 4, 2, "loop", [1, 5]),
    (1, 4, 2, "v", [1, 6]),
    (0, 4, 2, "v", [0, 7]),
])
def test_torch_stage_layout(rank, world, chunks, layout, expected):
    assert stage_indices(rank, world, chunks, layout) == expected


def test_every_torch_schedule_maps_to_one_of_ours():
    from pipelab.engine.schedules import build_schedule
    for name, (ours, chunks, _) in SCHEDULES.items():
        schedule = build_schedule(ours, 4, 8, None)
        # torch's ScheduleInterleavedZeroBubble has v=2; our closest, zb-h1, has one chunk
        expected = 4 if name == "ScheduleInterleavedZeroBubble" else 4 * chunks
        assert schedule.num_stages == expected, name


def test_summary_marks_app_latency_not_measured():
    from bench.run import summary_rows
    fake = {"speed": {}, "fidelity": {"p4": {}, "p2": {}}, "overhead": {},
            "growth": {"m": {}, "p": {}, "memory_flat_ratio": None, "memory_flat_verdict": "not measured"}}
    rows = summary_rows(fake)
    app = [r for r in rows if r[0].startswith("App latency")]
    assert app and app[0][-1] == "not measured"


def fidelity_row(per_step, per_action, per_stage):
    from bench.plan import TARGETS
    diffs = {"diff_sim": per_step, "diff_sim_action_means": per_action, "diff_sim_stage_means": per_stage}
    return {**diffs, "verdict": R.verdict(per_step, TARGETS["fidelity_sim"])}


#   abs diffs, device clock minus the simulator fed:  each step's own costs  each action's mean  per-stage means
FIDELITY = {"gpipe":       fidelity_row(0.0,  0.003, 0.032),
            "interleaved": fidelity_row(0.0,  0.039, 0.071),
            "zb-v":        fidelity_row(0.04, 0.022, 0.091)}  # a wait outside the schedule: not met


def test_fidelity_summary_holds_the_target_on_each_steps_own_costs_with_the_means_beside_it():
    from bench.run import summary_rows
    fake = {"speed": {}, "fidelity": {"p4": FIDELITY, "p2": {}}, "overhead": {},
            "growth": {"m": {}, "p": {}, "memory_flat_ratio": None, "memory_flat_verdict": "not measured"}}
    rows = {r[0]: r[1:] for r in summary_rows(fake)}
    assert rows["Bubble: device clock vs simulator (each step's own costs), p=4, max abs diff"] == [
        "0.040", "<= 0.03 each", "not met (2/3 met)"]
    assert rows["Same, simulator fed each action's mean cost (averages away the steps' variation)"] == [
        "0.039 (2/3 within 0.03)", "reference, no target", "—"]
    assert rows["Same, simulator fed per-stage mean costs (averages away the steps' variation)"] == [
        "0.091 (0/3 within 0.03)", "reference, no target", "—"]


def side(*bubbles, simulated=None):
    return [{"bubble": b, "wall": b, "simulated": b if simulated is None else simulated, "formula": 0.0}
            for b in bubbles]


#   barrier runs          overlapped runs        ratio of the median runs   verdict (<= 0.5)
OVERLAP_PAIRS = [
    (side(0.20, 0.18, 0.30), side(0.08, 0.09, 0.50), 0.09 / 0.20,             "met"),
    (side(0.17),             side(0.12),             0.12 / 0.17,             "not met"),
]


@pytest.mark.parametrize("barrier, overlapped, ratio, verdict", OVERLAP_PAIRS)
def test_overlap_pairs_compare_each_sides_median_run(barrier, overlapped, ratio, verdict):
    from bench.overlap import pair_row
    row = pair_row(barrier, overlapped)
    assert row["ratio"] == pytest.approx(ratio) and row["verdict"] == verdict
    assert row["barrier"]["runs"] == [r["bubble"] for r in barrier]


def test_overlap_pairs_state_theorys_ratio_at_the_median_runs_own_costs():
    from bench.overlap import pair_row, section_md
    row = pair_row(side(0.16, 0.15, 0.17, simulated=0.14), side(0.09, 0.10, 0.08, simulated=0.07))
    assert row["ratio"] == pytest.approx(0.09 / 0.16) and row["verdict"] == "not met"
    assert row["simulated_ratio"] == pytest.approx(0.5)
    assert "| 0.56 | 0.50 |" in section_md({"ZB-H2: barrier vs overlapping": {16: row}})


def test_overlap_summary_names_each_depth_and_counts_the_met_pairs():
    from bench.overlap import pair_row, summary_rows
    results = {"ZB-H2: barrier vs overlapping": {8: pair_row(side(0.2), side(0.15)),
                                                 16: pair_row(side(0.2), side(0.08))},
               "1F1B vs PipeDream (no flush)": {8: {"error": "RunFailed: rank 1 hung"}}}
    rows = summary_rows(results)
    assert rows[0][1] == "8 layers 0.200 -> 0.150 (0.75), 16 layers 0.200 -> 0.080 (0.40)"
    assert rows[0][3] == "not met (1/2 met)"
    assert rows[1][1] == "RunFailed: rank 1 hung" and rows[1][3] == "not measured (0/1 met)"


def test_overlap_report_names_the_size_each_pair_ran_at():
    from bench.overlap import pair_row, section_md, summary_rows
    size = {"defaults": "the zero-bubble lesson's", "model": "mlp", "hidden": 512, "microbatch_size": 128}
    results = {"ZB-H2: barrier vs overlapping": {16: {**pair_row(side(0.2), side(0.08)), "size": size}}}
    named = "the zero-bubble lesson's defaults: mlp width 512, 128 rows per micro-batch"
    assert named in summary_rows(results)[0][0]
    assert f"| ZB-H2: barrier vs overlapping ({named}) | 16 |" in section_md(results)


def test_overlap_report_says_how_much_colder_a_steps_first_forward_ran():
    from bench.overlap import pair_row, section_md
    overlapped = [{**run, "first_f": 1.14} for run in side(0.08)]
    assert "first F of a step / median F 1.14)" in section_md({"ZB-H2": {16: pair_row(side(0.16), overlapped)}})
    assert "first F of a step / median F —)" in section_md({"ZB-H2": {16: pair_row(side(0.16), side(0.08))}})


def test_overlap_pairs_run_at_their_lessons_settings_and_the_command_lines():
    # The claim is made at each lesson's settings, and `pipelab run` has its own defaults: the
    # figure reads them, so it cannot measure another size after either changes.
    from bench.overlap import COMMAND_LINE, PAIRS
    from pipelab.engine.config import COMMAND_LINE_DEFAULTS
    from pipelab.lessons import get_lesson
    assert [(pair.barrier[0], pair.lesson) for pair in PAIRS] == [
        ("zb-h2", "zero-bubble"), ("zb-h2", COMMAND_LINE), ("1f1b", "pipedream")]
    for pair in PAIRS:
        defaults = COMMAND_LINE_DEFAULTS if pair.lesson is COMMAND_LINE else vars(get_lesson(pair.lesson).defaults)
        assert pair.size == {name: defaults[name] for name in ("model", "hidden", "microbatch_size")}
        assert pair.knobs.layers == defaults["layers"]


#   arguments                     the one-line error names
OVERLAP_CLI_ERRORS = [
    (["--rounds", "0"],            "--rounds must be >= 1"),
    (["--layers", "2"],            "every --layers >= 4"),
]


@pytest.mark.parametrize("argv, message", OVERLAP_CLI_ERRORS)
def test_overlap_cli_rejects_bad_input_in_one_line(argv, message, capsys):
    from bench.overlap import main
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


#   arguments          the count measure is given
JSON_CLI_COUNTS = [
    ([],                 3),
    (["--rounds", "7"],  7),
]


@pytest.mark.parametrize("argv, count", JSON_CLI_COUNTS)
def test_json_cli_passes_its_flag_logs_on_stderr_and_prints_json(argv, count, capsys):
    import json

    from bench.json_cli import json_main

    def measure(n, log):
        log(f"round 1/{n}")
        return {"rounds": n}
    assert json_main("A figure.", "--rounds", 3, measure, argv) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == {"rounds": count} and out.err == f"round 1/{count}\n"


def test_json_cli_rejects_a_count_that_is_not_a_whole_number(capsys):
    from bench.json_cli import json_main
    with pytest.raises(SystemExit) as exit_:
        json_main("A figure.", "--runs", 5, lambda n, log: {}, ["--runs", "x"])
    assert exit_.value.code == 2 and "argument --runs: invalid int value: 'x'" in capsys.readouterr().err


@pytest.mark.parametrize("count", ["0", "-2"])
def test_json_cli_rejects_fewer_than_one_run_before_measuring(count, capsys):
    # bench/first_page.py --rounds 0 started a browser and ended on a median of nothing.
    from bench.json_cli import json_main

    def measure(n, log):
        raise AssertionError("measured")
    with pytest.raises(SystemExit) as exit_:
        json_main("A figure.", "--runs", 5, measure, ["--runs", count])
    assert exit_.value.code == 2 and f"--runs must be at least 1, got {count}" in capsys.readouterr().err


# ---- lesson headlines (bench/lesson_headlines.py) on fake verdicts -------------------------

def judged(status, *rows):
    """A check's verdict as the figure stores it: rows of (quantity, measured, formula, simulated, unit)."""
    from dataclasses import asdict

    from pipelab.lessons.claims import ClaimRow, Verdict
    return asdict(Verdict("the claim", tuple(ClaimRow(*row) for row in rows), status, f"why: {status}"))


def gpipe_sweep(status, m4):
    return {"sweep": judged(status, ("bubble fraction at m = 4", m4, 0.429, 0.41),
                            ("bubble fraction at m = 8", 0.21, 0.273, 0.25),
                            ("bubble fraction at m = 16", 0.13, 0.158, 0.15)),
            "run": judged("holds", ("bubble fraction", 0.21, 0.273, 0.25))}


def one_f_one_b_sweep(peak_16):
    return {"sweep": judged("holds", ("peak activations, worst device, m = 4", 1.5, None, 1.5, "MiB"),
                            ("peak activations, worst device, m = 16", peak_16, None, 1.5, "MiB"),
                            ("micro-batches alive on device 0, m = 4 (GPipe: 4)", 4, 4, None, "count"))}


#   slug  rounds (in the order they ran)
#         the row: quantity, measured, theory, verdict, round reported
HEADLINE_ROWS = [
    ("gpipe",  [gpipe_sweep("holds", 0.45), gpipe_sweep("does not hold here", 0.60), gpipe_sweep("holds", 0.43)],
     "bubble fraction at m = 4 / 8 / 16", "0.450 / 0.210 / 0.130", "0.429 / 0.273 / 0.158", "met", 0),
    # No closed form: the simulator beside it; the in-flight row is not the headline.
    ("1f1b",   [one_f_one_b_sweep(1.5)],
     "peak activations, worst device, m = 4 / 16", "1.50 / 1.50 MiB", "1.50 / 1.50 MiB (simulator)", "met", 0),
    ("naive",  [{"run": judged("holds within noise", ("busy share of the step, mean over devices", 0.24, 0.25, 0.25),
                                ("busy share, device 3 (farthest from 1/p)", 0.31, 0.25, 0.26))}],
     "busy share, device 3 (farthest from 1/p)", "0.310", "0.250", "not met (within noise)", 0),
    ("interleaved", [{"comparison": judged("does not hold here",
                                           ("bubble fraction, interleaved (v = 2) ÷ 1F1B", 0.82, 0.58, 0.6, "x"))},
                     {"comparison": {"error": "RunFailed: rank 2 exited"}}],  # a failed round is left out
     "bubble fraction, interleaved (v = 2) ÷ 1F1B", "0.82x", "0.58x", "not met", 0),
]


@pytest.mark.parametrize("slug, rounds, quantity, measured, theory, verdict, reported", HEADLINE_ROWS)
def test_lesson_headline_reports_the_median_rounds_headline_rows(slug, rounds, quantity, measured, theory, verdict,
                                                                  reported):
    from bench.lesson_headlines import headline_row, theory_text
    row = headline_row(slug, rounds)
    assert (row["quantity"], row["measured"], theory_text(row), row["verdict"], row["round"]) == (
        quantity, measured, theory, verdict, reported)


def test_lesson_headline_lists_every_rounds_first_value_and_every_check_of_the_reported_round():
    from bench.lesson_headlines import headline_row
    row = headline_row("gpipe", [gpipe_sweep("holds", 0.45), gpipe_sweep("does not hold here", 0.60),
                                 gpipe_sweep("holds", 0.43)])
    assert row["round_values"] == [0.45, 0.60, 0.43]
    assert row["kinds"] == {"sweep": ("holds", "why: holds"), "run": ("holds", "why: holds")}


def test_lesson_headline_not_measured_when_every_round_failed():
    from bench.lesson_headlines import headline_row, summary_rows
    rounds = [{"comparison": {"error": "RunFailed: rank 1 hung"}}]
    assert headline_row("zero-bubble", rounds)["verdict"] == "not measured"
    (row,) = summary_rows({"rounds": 1, "lessons": {"zero-bubble": rounds}})
    assert row[1:] == ["RunFailed: rank 1 hung", "<= 0.75, within 0.1 of theory at the runs' own costs, at <= 1.1x "
                       "1F1B's peak memory", "not measured"]


def test_lesson_headlines_give_one_summary_row_per_lesson_with_its_target():
    from bench.lesson_headlines import summary_rows
    rows = summary_rows({"rounds": 1, "lessons": {"gpipe": [gpipe_sweep("holds", 0.45)],
                                                  "1f1b": [one_f_one_b_sweep(1.9)]}})
    assert rows == [
        ["Lesson 2 (gpipe), sweep at its defaults: bubble fraction at m = 4 / 8 / 16, device clock",
         "0.450 / 0.210 / 0.130 (theory 0.429 / 0.273 / 0.158)",
         "each within 0.05 of (p-1)/(m+p-1); falls as m grows", "met"],
        ["Lesson 4 (1f1b), sweep at its defaults: peak activations, worst device, m = 4 / 16, device clock",
         "1.50 / 1.90 MiB (simulator 1.50 / 1.50 MiB)", "largest / smallest over m >= p at most 1.1x", "met"]]


def test_every_headline_row_is_of_a_run_its_page_offers():
    from bench.lesson_headlines import measured_lessons
    from pipelab.lessons import LESSONS
    measured = measured_lessons()
    assert [lesson.slug for lesson in measured] == [lesson.slug for lesson in LESSONS if lesson.headline_row]
    assert "playground" not in [lesson.slug for lesson in measured]  # its claim is figure 2's
    for lesson in measured:
        offered = {"run"} | ({"comparison"} if lesson.comparisons else set()) | ({"sweep"} if lesson.sweep else set())
        assert lesson.headline_row.kind in offered, lesson.slug


def test_lesson_headlines_pick_rows_the_real_checks_write():
    """Each headline's quantity prefix matches a row lessons/<name>/claim.py writes (fake results)."""
    from types import SimpleNamespace as NS

    from bench.lesson_headlines import measured_lessons
    from pipelab.engine.results.data_parallel import DataParallelFigures
    from pipelab.engine.results.metrics import StageCosts
    from pipelab.engine.schedules import get_schedule_info
    from pipelab.lessons import claims
    from tests.fake_results import fake_memory, fake_metrics, theory_peaks

    def result(schedule, m=8, bubble=0.3, v=1, recompute=False, stages=4, replicas=1, reduce_at="backward"):
        p = stages
        metrics = fake_metrics(p, device_bubble_fraction=bubble, device_bubble_fraction_per_device=(bubble,) * p,
                               simulated_bubble_fraction=bubble, simulated_bubble_fraction_per_device=(bubble,) * p,
                               formula_bubble_fraction=3 / (m + 3), device_steady_bubble_fraction=bubble / 2,
                               device_step_time_s=0.01, simulated_step_time_s=0.01, messages_per_step=48.0,
                               peak_inflight_per_device=tuple(min(p - r, m) for r in range(p)),
                               theory_peak_inflight_per_device=theory_peaks(schedule, p, m, v),
                               simulated_peak_activation_bytes_per_device=(2**20,) * p,
                               costs_s=StageCosts(*((1.0,) * p,) * 4))
        memory = {r: fake_memory(peak_activation_bytes=2**20, weight_versions=1, theory_weight_versions=1)
                  for r in range(p)}
        # A data-parallel layout (lesson 7's) also reports each stage's all-reduce.
        data_parallel = None if replicas == 1 else DataParallelFigures(
            replicas, reduce_at, (), (0.001,) * p, (0.001,) + (0.0,) * (p - 1), (0.001,) * p,
            (0.001,) + (0.0,) * (p - 1), 0.01, ())
        return NS(schedule=NS(name=schedule, num_ranks=p, num_microbatches=m, chunks=v,
                              is_async=not get_schedule_info(schedule).synchronous),
                  config=NS(microbatch_size=64, steps=3, recompute=recompute, stages=p, data_parallel=replicas,
                            reduce_at=reduce_at),
                  metrics=metrics, memory=memory, data_parallel=data_parallel)

    for lesson in measured_lessons():
        slug, headline = lesson.slug, lesson.headline_row
        if headline.kind == "sweep":
            entries = [(m, result(k.schedule, m=m)) for m, k in lesson.sweep_knobs()]
        else:
            compared = [k for _, k in lesson.comparison_knobs()] if headline.kind == "comparison" else []
            knobs = [lesson.defaults, *compared]
            entries = [(k.schedule, result(k.schedule, v=k.chunks, recompute=k.recompute, stages=k.stages,
                                           replicas=k.data_parallel, reduce_at=k.reduce_at)) for k in knobs]
        rows = claims.verdict(slug, lesson.claim, headline.kind, entries).rows
        assert any(row.quantity.startswith(headline.quantity) for row in rows), (slug, [r.quantity for r in rows])


@pytest.mark.slow
def test_smoke_tiny_quick_run(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# t\n{R.START}\nold\n{R.END}\n")
    out = tmp_path / "RESULTS.md"
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "run.py"), "--quick", "--tiny",
                           "--out", str(out), "--readme", str(readme)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    for heading in ("## Machine", "## 1. Engine speed", "## 2. Measurement fidelity", "## 3. Executor overhead",
                    "## 5. Growth", "## 6. Overlapping steps", "## 7. Lesson headlines"):
        assert heading in text
    # The README gets a few lines and a link; the summary table is RESULTS.md's alone.
    section = readme.read_text()
    assert "old" not in section and "| figure |" not in section and "(bench/RESULTS.md)" in section
    assert re.search(r"\*\*\d+ of \d+ targets met\*\*", section) and len(section.splitlines()) <= 12
    # One summary row per lesson but the playground, each judged by the lesson's own check.
    from bench.lesson_headlines import measured_lessons
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert "| figure |" in summary
    lesson_rows = [line for line in summary.splitlines() if line.startswith("| Lesson ")]
    assert len(lesson_rows) == len(measured_lessons()), lesson_rows
    # Both sides' CPU per step was measured: "<ours> ms / <torch> ms (<ratio>)" in the speed table.
    cpu_row = next(line for line in text.splitlines() if line.startswith("| Host CPU per step"))
    assert "Schedule1F1B" not in cpu_row and re.search(r"1F1B \d\.\d\d", cpu_row)
    assert re.search(r"\| [\d.]+ ms / [\d.]+ ms \(\d\.\d\d\) \|", text)
    # 1F1B's message slots per rank do not grow from m=4 to m=8 (engine/runtime/slots.py).
    assert re.search(r"\| Growth: 1F1B message slots per rank, largest m / smallest m \| 1\.00 \| <= 1\.10 \| met \|",
                     text)


def test_clicks_presses_only_the_buttons_asked_for():
    from bench.clicks import Button, buttons
    assert buttons(["naive"], ["compare"]) == [Button("naive", "compare")]
    assert buttons(["naive"]) == [Button("naive", "run"), Button("naive", "compare")]
    assert buttons(["interleaved"], ["compare"]) == []  # its claim compares from Run
    # Lesson 6's sections run several schedules from one button each: pressed too, by their kind.
    assert buttons(["zero-bubble"]) == [Button("zero-bubble", "run"), Button("zero-bubble", "run-all-four"),
                                        Button("zero-bubble", "run-them-all")]


def test_a_section_button_is_judged_by_its_time_and_every_schedule_coming_back():
    from bench.clicks import RAN, Click, report_md, summarize

    def click(seconds, status=RAN, count=12.0):
        return Click("zero-bubble", "run-them-all", status, "schedules run side by side", count, "count", seconds,
                     method="steps in turn")
    row, = summarize([click(21.0), click(23.0), click(22.0)])
    assert (row["holds"], row["holds_met"], row["seconds_target"], row["seconds_met"]) == (3, True, 45.0, True)
    assert "| zero-bubble | run-them-all | steps in turn | schedules run side by side (count) | 12.000 / 12.000 / " \
        "12.000 | 0.000 (0) | 3 / 0 / 0 of 3 | — | 22.0 (45) | yes |" in report_md([row], "host")
    row, = summarize([click(50.0), click(50.0, "missing", 11.0)])  # too slow, and one schedule did not come back
    assert not row["seconds_met"] and not row["holds_met"] and not row["spread_met"]


def test_a_section_click_records_where_its_first_run_put_its_ranks(monkeypatch):
    """bench/many_cores.py lists every click's placement: a section's click (no verdict) has one too."""
    from types import SimpleNamespace

    from bench.clicks import Button, press_section
    from pipelab.engine.results.records import Placement
    from pipelab.engine.runtime import paired
    from pipelab.lessons import get_lesson
    pinned = Placement(pinned=True, reason=Placement.PINNED, cores=16, ranks=2, rank_cpus=((0,), (1,)),
                       reference_cpus=(2,))

    class Outcome:
        method = "steps in turn"

        def __init__(self, request):
            self.runs = tuple(SimpleNamespace(metrics=SimpleNamespace(placement=pinned)) for _ in request.configs)

        def shown(self):
            return self.runs
    monkeypatch.setattr(paired, "run_request", Outcome)
    click = press_section(Button("zero-bubble", "run-all-four"), get_lesson("zero-bubble").defaults)
    assert click.placement == "rank 0 on 0; rank 1 on 1; reference on 2"


def test_clicks_report_keeps_the_verdicts_other_rows_beside_the_headline():
    from bench.clicks import Click, report_md, summarize
    clicks = [Click("naive", "compare", "holds", "busy ratio", value, "x", 12.0,
                    (("busy ratio", value, "x"), ("step ratio", step, "x")))
              for value, step in ((2.70, 2.69), (2.74, 3.08), (2.72, 2.85))]
    row, = summarize(clicks)
    assert (row["spread"], row["spread_met"]) == (pytest.approx(0.04), True)
    assert row["others"] == [dict(quantity="step ratio", unit="x", min=2.69, median=2.85, max=3.08,
                                  spread=pytest.approx(0.39))]
    assert "| naive | compare | step ratio (x) | 2.690 / 2.850 / 3.080 | 0.390 |" in report_md([row], "host")


def test_clicks_judge_every_step_ratio_by_its_spread_and_its_sign_where_theory_promises_a_gain():
    from bench.clicks import Click, report_md, summarize

    def click(step, theory, seconds=12.0):
        return Click("zero-bubble", "run", "holds", "idle ratio", 0.5, "x", seconds,
                     (("idle ratio", 0.5, "x", 0.45), ("step time, ZB-H1 ÷ 1F1B", step, "x", theory)), "steps in turn")
    row, = summarize([click(0.86, 0.86), click(0.88, 0.87), click(0.85, 0.85)])
    step, = row["steps"]
    assert (step["spread"], step["promised"], step["shorter"], step["met"]) == (pytest.approx(0.03), 3, 3, True)
    assert row["steps_met"] and row["methods"] == ["steps in turn"]
    assert row["seconds_target"] == 15.0 and row["seconds_met"]  # a Run that compares is a comparison: 15 s
    row, = summarize([click(0.86, 0.86), click(1.01, 0.90)])  # one click not shorter where theory said 10 %
    assert not row["steps_met"] and row["steps"][0]["shorter"] == 1
    row, = summarize([click(0.99, 0.98), click(1.02, 0.99)])  # theory promises no gain: the sign is free
    assert row["steps_met"]
    assert "| zero-bubble | run | step time, ZB-H1 ÷ 1F1B | 0.990 / 1.005 / 1.020 | 0.030 | 0.985 | 0 of 0 | yes |" \
        in report_md([row], "host")


def test_clicks_put_the_headline_beside_theory_at_each_clicks_own_costs():
    from bench.clicks import Click, report_md, summarize

    def click(measured, theory):
        return Click("interleaved", "run", "holds", "bubble ratio", measured, "x", 4.0,
                     (("bubble ratio", measured, "x", theory), ("messages", 3.0, "x", None)), "steps in turn")
    # The host moved theory by 0.20 and the measurement with it: measured - theory spreads 0.03.
    row, = summarize([click(0.55, 0.54), click(0.75, 0.74), click(0.64, 0.66)])
    t = row["theory"]
    assert (t["clicks"], t["min"], t["median"], t["max"]) == (3, 0.54, 0.66, 0.74)
    assert t["spread"] == pytest.approx(0.20) and t["gap_spread"] == pytest.approx(0.03)
    assert (t["gap_min"], t["gap_max"]) == (pytest.approx(-0.02), pytest.approx(0.01))
    assert not row["spread_met"]  # the target judges the measurement alone, as before
    assert "| interleaved | run | bubble ratio | 0.200 | 0.540 / 0.660 / 0.740 | 0.200 | -0.020 / +0.010 | 0.030 |" \
        in report_md([row], "host")
    no_theory, = summarize([Click("gpipe", "run", "holds", "bubble", 0.13, "", 1.0, (("bubble", 0.13, ""),))])
    assert no_theory["theory"] is None and "beside theory" not in report_md([no_theory], "host")


def test_modes_take_turns_click_by_click_each_in_its_own_environment(monkeypatch):
    import os

    from bench import clicks
    from bench.clicks import Button, Click
    pressed = []

    def press(button, stages=None):
        pressed.append((button.slug, os.environ.get("PIPELAB_PIN"), stages))
        return Click(button.slug, "run", "holds", "q", 1.0, "x", 1.0)
    monkeypatch.setattr(clicks, "press", press)
    monkeypatch.setenv("PIPELAB_PIN", "caller's")
    done, seen = {"a": [], "b": []}, []
    clicks.press_in_turn([Button("naive", "run"), Button("gpipe", "run")], {"a": {"PIPELAB_PIN": "0"},
                         "b": {"PIPELAB_PIN": "ranks"}}, 2, 2, done, lambda k, b, mode, c: seen.append((k, mode)))
    assert pressed == [("naive", "0", 2), ("naive", "ranks", 2), ("gpipe", "0", 2), ("gpipe", "ranks", 2),  # A B
                       ("naive", "ranks", 2), ("naive", "0", 2), ("gpipe", "ranks", 2), ("gpipe", "0", 2)]  # B A
    assert [len(v) for v in done.values()] == [4, 4] and Click.from_dict(done["a"][0]).slug == "naive"
    assert seen[:2] == [(0, "a"), (0, "b")] and os.environ["PIPELAB_PIN"] == "caller's"


@pytest.mark.parametrize("argv, says", [
    (["--node-cpus", "2"], "--node-cpus must be at least 4, the most ranks a student's run starts, got 2"),
    (["--port", "0"], "--port must be a TCP port (1-65535), got 0"),
    (["--students", "0"], "--students, --nodes and --node-cpus must be >= 1"),
])
def test_cluster_load_refuses_a_class_it_cannot_run_before_starting_ray(argv, says, capsys):
    # --node-cpus 2 started a cluster whose nodes held no lesson's run, and ended on max() of nothing.
    from bench.cluster_load import main
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and says in err and err.count("\n") == 1


def test_cluster_load_s_model_holds_floor_cores_over_p_runs_per_node():
    from bench.cluster_load import student_configs, throughput_rows
    rows = {(r["nodes"], r["cores"]): r for r in throughput_rows(3.0, p=2)}
    assert rows[(4, 16)]["at_once"] == 32 and rows[(4, 16)]["per_minute"] == pytest.approx(32 * 60 / 3.0)
    assert throughput_rows(3.0, p=4)[0]["at_once"] == 0  # a 2-CPU node holds no run of 4 ranks
    configs = student_configs(100)
    assert len({c.to_dict().__repr__() for c in configs}) == 100  # every student's run its own: no cache
