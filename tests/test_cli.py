import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pipelab.engine.cli.main import main
from tests.conftest import descendants, run_leftovers, still_alive


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "pipelab", *args], capture_output=True, text=True, timeout=120)


def test_list_names_every_schedule(capsys):
    from pipelab.engine.schedules import REGISTRY
    assert main(["list"]) == 0
    # One line per registered schedule, in list order: its name, English summary, paper, and
    # the chunk counts --chunks takes where it is a knob.
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(REGISTRY)
    for line, info in zip(lines, REGISTRY.values(), strict=True):
        chunks = f"  (--chunks: {info.chunks.describe()})" if info.chunks.takes_chunks else ""
        assert info.summary["en"] in line and line.endswith(f"[{info.paper}]{chunks}"), line
    assert "(--chunks: any v >= 1)" in lines[list(REGISTRY).index("interleaved")]


def test_simulate_writes_json_and_trace(tmp_path, capsys):
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    assert main(["simulate", "--schedule", "gpipe", "--stages", "4", "--microbatches", "8",
                 "--out", str(out), "--trace", str(trace)]) == 0
    data = json.loads(out.read_text())
    assert data["config"]["schedule"] == "gpipe"
    assert data["metrics"]["bubble_fraction"] == pytest.approx(3 / 11)
    assert data["metrics"]["formula_bubble_fraction"] == pytest.approx(3 / 11)
    assert data["metrics"]["step_time_s"] == pytest.approx(33.0) and data["config"]["time_unit"] == "T_F"
    assert {"rank", "stage", "kind", "microbatch", "start", "end"} <= set(data["events"][0])
    assert len(data["events"]) == 4 * 8 * 2
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == 64
    printed = capsys.readouterr().out
    assert "device 0" in printed and "step time            33 T_F   (unit costs: T_F = T_I = T_W = 1" in printed


@pytest.mark.parametrize("args, step_line", [
    # no cost given: units of T_F; any cost given: seconds
    ([], "step time            12 T_F"),
    (["--t-forward", "0.5"], "step time            10 s"),
    (["--link", "0.0"], "step time            12 s"),
    (["--replicas", "2-1"], "step time            12 T_F"),
])
def test_simulate_names_the_unit_of_its_times(capsys, args, step_line):
    assert main(["simulate", "--schedule", "1f1b", "--stages", "2", "--microbatches", "3", *args]) == 0
    assert step_line in capsys.readouterr().out


@pytest.mark.parametrize("name, peaks", [("gpipe", [8, 8, 8, 8]), ("1f1b", [4, 3, 2, 1]),
                                         ("zb-v", [4, 4, 4, 4]), ("dualpipev", [4.5, 4.5, 4.5, 4.5])])
def test_simulate_reports_peak_activations(tmp_path, capsys, name, peaks):
    out = tmp_path / "r.json"
    assert main(["simulate", "--schedule", name, "--stages", "4", "--microbatches", "8", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["peak_held_microbatches_per_device"] == peaks
    assert "held micro-batches   " + " ".join(f"{a:g}" for a in peaks) in capsys.readouterr().out


# GPipe, p=4, m=8, T_F = T_I = T_W = 1: each device busy 24 of the 33 s step; inside its own
# span device d (starting at d, its last backward ending 2d earlier than device 0's) idles 9 - 3d.
GPIPE_STEADY = (9 / 33 + 6 / 30 + 3 / 27 + 0 / 24) / 4


@pytest.mark.parametrize("args, expected", [
    # a synchronous step: every boundary between devices carries an activation and a gradient per micro-batch
    (["gpipe", "4", "8"], dict(bubble_fraction_per_device=[3 / 11] * 4, steady_bubble_fraction=GPIPE_STEADY,
                               overlapped_steps=False, steps=1, peak_inflight_per_device=[8, 8, 8, 8],
                               weight_versions_per_device=[1, 1, 1, 1], messages=3 * 2 * 8)),
    # PipeDream always overlaps its steps and stashes p - d weight versions (arXiv 1806.03377)
    (["pipedream", "3", "6", "--steps", "3"], dict(overlapped_steps=True, steps=3, peak_inflight_per_device=[3, 2, 1],
                                                   weight_versions_per_device=[3, 2, 1], messages=2 * 2 * 6)),
    # zb-v's V puts its middle two stages on the last device: 6 of its 7 boundaries cross devices
    (["zb-v", "4", "8"], dict(overlapped_steps=False, messages=6 * 2 * 8)),
])
def test_simulate_json_has_every_metric(tmp_path, capsys, args, expected):
    out = tmp_path / "r.json"
    name, stages, microbatches, *rest = args
    assert main(["simulate", "--schedule", name, "--stages", stages, "--microbatches", microbatches, *rest,
                 "--out", str(out)]) == 0
    metrics = json.loads(out.read_text())["metrics"]
    assert list(metrics) == ["bubble_fraction", "bubble_fraction_per_device", "steady_bubble_fraction",
                             "formula_bubble_fraction", "overlapped_steps", "steps", "step_time_s",
                             "peak_inflight_per_device", "peak_held_microbatches_per_device",
                             "weight_versions_per_device", "messages"]
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value), name
    text = capsys.readouterr().out
    assert f"peak in-flight       {metrics['peak_inflight_per_device']}\n" in text  # as a list: [3, 2, 1]
    assert f"weight versions      {metrics['weight_versions_per_device']}\n" in text


BAD = [
    (["simulate", "--schedule", "nope", "--stages", "4", "--microbatches", "8"], "unknown schedule"),
    (["simulate", "--schedule", "gpipe", "--stages", "-1", "--microbatches", "8"], "stages"),
    (["simulate", "--schedule", "interleaved", "--stages", "4", "--microbatches", "6"], "multiple of stages"),
    (["simulate", "--schedule", "zb-v", "--stages", "4", "--microbatches", "8", "--chunks", "3"], "chunks"),
    (["simulate", "--schedule", "dualpipev", "--stages", "4", "--microbatches", "6"], "m >= 2p"),
    (["simulate", "--schedule", "gpipe", "--stages", "x", "--microbatches", "8"], "invalid int"),
    (["run", "--schedule", "gpipe", "--stages", "9", "--microbatches", "8", "--layers", "2"], "layers"),
    (["run", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--hidden", "-5"], "hidden"),
    (["run", "--schedule", "pipedream", "--stages", "2", "--microbatches", "2", "--check"], "asynchronously"),
    (["run", "--schedule", "pipedream", "--stages", "2", "--microbatches", "2", "--clip-grad-norm", "1"],
     "synchronous step"),
    (["run", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--inject-nonfinite", "1"],
     "needs clip-grad-norm"),
    (["run", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--clip-grad-norm", "0"], "must be > 0"),
    (["run", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--clip-grad-norm", "1",
      "--inject-nonfinite", "7"], "inject-nonfinite must be a step"),
    (["simulate", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--steps", "0"], "steps"),
    (["simulate", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--replicas", "2"],
     "replicas 2 gives 1 counts but the pipeline has 2 stages"),
    (["simulate", "--schedule", "zb-v", "--stages", "2", "--microbatches", "4", "--replicas", "2,1"],
     "one stage per device"),
    (["frobnicate"], "invalid choice"),
    # Each of these measured or played for minutes first, then ended on a traceback or looked hung.
    (["run", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--out", "/nonexistent/r.json"],
     "cannot write --out /nonexistent/r.json: there is no folder /nonexistent"),
    (["simulate", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--trace", "/nonexistent/t.json"],
     "cannot write --trace /nonexistent/t.json: there is no folder /nonexistent"),
    (["simulate", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--out", "/"],
     "--out / is a folder: give a file's name"),
    (["export", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--out", "/nonexistent/e.csv"],
     "cannot write --out /nonexistent/e.csv"),
    (["simulate", "--schedule", "1f1b", "--stages", "1000", "--microbatches", "1000"],
     "simulate plays at most 250000 stage-micro-batches (stages x chunks x micro-batches x steps), got 1000000"),
    (["simulate", "--schedule", "1f1b", "--stages", "4", "--microbatches", "8", "--steps", "100000"],
     "got 3200000"),
    (["plan", "--workers", "1024", "--bandwidth", "1e9"],
     "--workers must be at most layers x micro-batches = 16 x 8 = 128"),
]


@pytest.mark.slow
@pytest.mark.parametrize("args,words", BAD)
def test_bad_arguments_give_one_line_and_exit_2(args, words):
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("variable, value", [("PIPELAB_PIN", "yes"), ("PIPELAB_POLL", "yes")])
def test_a_bad_placement_setting_is_a_one_line_error_on_the_command_line(variable, value):
    result = subprocess.run([sys.executable, "-m", "pipelab", "run", "--schedule", "1f1b", "--stages", "2",
                             "--microbatches", "2", "--steps", "2"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, variable: value})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{variable} must be one of" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("sig, exit_code, says", [
    # signal          exit code  stderr
    (signal.SIGTERM,  143,       "engine: terminated; the ranks were stopped and the run's temp files removed"),
    (signal.SIGINT,   130,       "engine: interrupted; the ranks were stopped and the run's temp files removed"),
    (signal.SIGKILL,  -9,        None),  # no cleanup of its own: the ranks remove the run's folder
])
@pytest.mark.slow
def test_a_stopped_launcher_leaves_no_process_or_file(tmp_path, sig, exit_code, says):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "pipelab", "run", "--schedule", "gpipe", "--stages", "4",
                             "--microbatches", "8", "--model", "mlp", "--steps", "100000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("pipelab-run-*/channel-*")) and time.monotonic() < deadline:
        time.sleep(0.05)  # mid-run once the ranks have made their message channels
    assert list(tmp_path.glob("pipelab-run-*/channel-*")), "the run never started"
    family = descendants(proc.pid)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == exit_code
    if says is not None:
        assert err.strip() == says
    assert still_alive(family) == set()
    deadline = time.monotonic() + 5
    while (run_leftovers(tmp_path) or list(tmp_path.glob("pymp-*"))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run_leftovers(tmp_path) == []
    # The launcher's multiprocessing folder (its forkserver's socket): gone too, after SIGKILL
    # because the forkserver removes it as it ends (engine/runtime/forkserver_exit.py).
    assert list(tmp_path.glob("pymp-*")) == []


def test_run_summary_prints_the_bubble_breakdown_with_each_change():
    from pipelab.engine.cli.run import breakdown_lines
    from tests.fake_results import fake_metrics
    metrics = fake_metrics(formula_bubble_fraction=0.273, device_bubble_fraction=0.412, wall_bubble_fraction=0.5,
                           breakdown=[("+ message latency", 0.3)])
    assert breakdown_lines(metrics)[1:] == [
        "  formula: every stage at the run's mean costs       0.273",
        "  + message latency                                  0.300  +0.027",
        "  measured, device clock                             0.412  +0.112",
        "  measured, wall clock (cores shared)                0.500  +0.088",
    ]


def _placed(cores: int, ranks: int, mode: str, ran_on, **changes):
    import dataclasses

    from pipelab.engine.runtime.placement import plan
    return dataclasses.replace(plan([(c,) for c in range(cores)], ranks, mode), ran_on=ran_on, **changes)


#  placement: free cores, ranks, PIPELAB_PIN, what each rank read   -> the line says
PLACEMENT_LINES = [
    ((2, 2, "auto", ((0, 1), (0, 1))),             "not pinned (2 free physical cores for 2 ranks and the gradient "
                                                   "check's one process): each rank free to run on CPUs 0-1"),
    ((3, 2, "auto", ((0,), (1,))),                 "pinned, a physical core each, the gradient check on CPUs 2, "
                                                   "polling for messages: rank 0 on CPUs 0, rank 1 on CPUs 1"),
    ((2, 2, "ranks", ((0,), (1,))),                "the gradient check on their cores after the steps: rank 0 on"),
    ((8, 4, "off", ((0, 1, 2, 3, 4, 5, 6, 7),) * 4), "not pinned (PIPELAB_PIN=0): each rank free to run on CPUs 0-7"),
    ((2, 2, "auto", ()),                           "not pinned (2 free physical cores for 2 ranks and the gradient "
                                                   "check's one process)"),  # saved before ranks read it
]
# Without a gradient check (--check not given, an asynchronous schedule) the core it would take is still kept.
UNCHECKED_LINES = [
    ((2, 2, "auto", ((0, 1), (0, 1))),             "for 2 ranks and one kept for a gradient check though none ran)"),
    ((3, 2, "auto", ((0,), (1,))),                 "pinned, a physical core each, CPUs 2 kept free, polling"),
    ((2, 2, "ranks", ((0,), (1,))),                "pinned, a physical core each: rank 0 on CPUs 0, rank 1 on CPUs 1"),
]


@pytest.mark.parametrize("placed, says, checked", [(*row, True) for row in PLACEMENT_LINES]
                         + [(*row, False) for row in UNCHECKED_LINES])
def test_run_summary_says_where_the_ranks_ran(placed, says, checked):
    from pipelab.engine.cli.run import placement_line
    line = placement_line(_placed(*placed), checked=checked)
    assert line.startswith("ranks ") and says in line, line
    assert checked or "gradient check on" not in line, line


def test_run_summary_says_a_gpu_runs_ranks_were_left_unpinned_and_why():
    from dataclasses import replace

    from pipelab.engine.cli.run import placement_line
    from pipelab.engine.results.records import Placement
    line = placement_line(replace(Placement(pinned=False, reason=Placement.GPU, cores=16, ranks=2),
                                  ran_on=((0, 1, 2, 3),) * 2))
    assert "not pinned (a GPU run: its clock is CUDA events): each rank free to run on CPUs 0-3" in line, line


def test_run_summary_says_a_torchrun_placement_is_each_hosts_and_names_processes():
    from pipelab.engine.cli.run import placement_line
    from pipelab.engine.results.records import Placement
    line = placement_line(_placed(3, 2, "auto", ((0,), (1,), (0,), (1,)), scope=Placement.PER_HOST), "process")
    assert line.endswith("process 3 on CPUs 1 (under torchrun each host pins its own)"), line


class Exited(Exception):
    pass


class RanHere(Exception):
    pass


@pytest.mark.parametrize("env, ends_with_os_exit", [
    ({"RANK": "1", "WORLD_SIZE": "2"}, True),         # a torchrun rank
    ({"TORCHELASTIC_RUN_ID": "x"}, True),
    ({}, False),                                      # pipelab.engine.runtime.launch's own ranks end in multiprocessing
])
def test_a_torchrun_rank_ends_past_interpreter_finalization(monkeypatch, env, ends_with_os_exit):
    """Gloo's threads sometimes abort a torchrun rank at interpreter finalization, after a
    finished run (engine/cli/run.py): a torchrun rank ends with os._exit once its output is out."""
    import pipelab.engine.cli.run as cli_run
    import pipelab.engine.runtime.launch as launch
    import pipelab.engine.runtime.rank_entry as rank_entry
    for key in ("RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    exits = []

    def fake_exit(code):
        exits.append(code)
        raise Exited()

    def launch_here(config, on_progress=None):
        raise RanHere()

    monkeypatch.setattr(rank_entry, "run_under_torchrun", lambda config: None)  # a rank other than 0
    monkeypatch.setattr(launch, "run", launch_here)
    monkeypatch.setattr(cli_run, "config_from_args", lambda args: None)
    monkeypatch.setattr(cli_run.os, "_exit", fake_exit)
    with pytest.raises(Exited if ends_with_os_exit else RanHere):
        cli_run.cmd_run(object())
    assert exits == ([0] if ends_with_os_exit else [])


@pytest.mark.parametrize("schedule, stages, model, layers", [
    # schedule     p   model  layers picked (the default is COMMAND_LINE_DEFAULTS' 16)
    ("1f1b",        4, "mlp", 16),   # the default fits: kept
    ("dualpipev",  10, "mlp", 20),   # a V: 2 stages per device
    ("zb-v",       12, "gpt", 24),
    ("interleaved", 12, "mlp", 24),  # v = 2 by default
    ("gpipe",      20, "mlp", 20),
])
def test_without_layers_every_stage_gets_one(schedule, stages, model, layers):
    from pipelab.engine.cli.main import OneLineParser
    from pipelab.engine.config import add_run_args, config_from_args
    parser = OneLineParser()
    parser.add_argument("--schedule")
    parser.add_argument("--stages", type=int)
    parser.add_argument("--microbatches", type=int)
    parser.add_argument("--chunks", type=int, default=None)
    add_run_args(parser)
    args = parser.parse_args(["--schedule", schedule, "--stages", str(stages), "--microbatches", "24",
                              "--model", model])
    config = config_from_args(args)
    assert config.layers == layers
    assert config_from_args(parser.parse_args([*["--schedule", schedule, "--stages", str(stages), "--microbatches",
                                                 "24", "--model", model], "--layers", "5"])).layers == 5  # as given


@pytest.mark.slow
def test_dualpipev_without_layers_runs_checked_and_says_how_many_layers_it_picked():
    result = run_cli("run", "--schedule", "dualpipev", "--stages", "10", "--microbatches", "20", "--model", "mlp",
                     "--hidden", "32", "--microbatch-size", "4", "--steps", "1", "--check")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("layers: 20 (--layers not given; the default 16 is raised to one per stage")
    assert "model mlp (20 layers" in lines[1]
    check = next(line for line in lines if line.startswith("gradient check"))
    assert float(check.split("max relative difference ")[1].split(",")[0]) <= 1e-5, check
    # An explicit --layers too small for the stages keeps the one-line error.
    small = run_cli("run", "--schedule", "dualpipev", "--stages", "4", "--microbatches", "8", "--model", "mlp",
                    "--layers", "4")
    assert small.returncode == 2 and small.stderr.strip().splitlines() == [
        "pipelab: error: 8 stages (p=4 x v=2) need at least as many layers, but the mlp model has 4: "
        "raise the layers or lower the stages"]


def test_the_command_line_runs_at_the_lessons_size_without_size_flags():
    from pipelab.engine.config import COMMAND_LINE_DEFAULTS
    from pipelab.lessons import Knobs
    lesson = Knobs()
    assert COMMAND_LINE_DEFAULTS == dict(model=lesson.model, layers=lesson.layers, hidden=lesson.hidden,
                                         microbatch_size=lesson.microbatch_size, steps=lesson.steps)


def test_a_reader_that_went_away_ends_the_command_quietly():
    from pipelab.engine.cli.main import quiet_on_broken_pipe

    def entry():
        raise BrokenPipeError(32, "Broken pipe")
    assert quiet_on_broken_pipe(entry) == 0


@pytest.mark.slow
def test_engine_list_into_a_closed_pipe_prints_no_traceback():
    """`pipelab list | head -0`: the reader is gone before the command writes."""
    proc = subprocess.Popen([sys.executable, "-m", "pipelab", "simulate", "--schedule", "gpipe", "--stages", "8",
                             "--microbatches", "64"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # as head does once it has what it wants
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err.decode() == ""


def table5_command(column: str, row) -> list[str]:
    """`pipelab simulate` for one column of Zero Bubble's Table 5 at one of its rows (Table 9's
    costs, the model's W share of memory); the interleaved column's costs are one chunk's."""
    from pipelab.engine.theory.papers import TABLE5_SCHEDULES
    name, c = TABLE5_SCHEDULES[column], row.costs
    v = row.chunks if name == "interleaved" else 1  # 1F1B-I: one chunk per layer of a stage
    chunks = ["--chunks", str(v)] if v > 1 else []
    return ["simulate", "--schedule", name, "--stages", str(row.p), "--microbatches", str(row.m), *chunks,
            "--t-forward", f"{c.forward / v!r}", "--t-input", f"{c.backward_input / v!r}",
            "--t-weight", f"{c.backward_weight / v!r}", "--link", f"{c.link!r}",
            "--weight-memory", f"{c.weight_memory!r}"]


def test_simulate_prints_table_5s_six_columns(capsys):
    """The paper's own rate (section 5.3), beside the step's bubble, from the command line: each
    of Table 5's columns at its first row is the papers page's figure, to the printed digits."""
    from pipelab.engine.theory.papers import TABLE5_SCHEDULES, TABLE_5, table5_rates
    row = TABLE_5[0]
    ours = table5_rates(row.p, row.m, row.costs, row.chunks)
    for column in TABLE5_SCHEDULES:
        assert main(table5_command(column, row)) == 0
        (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("bubble rate (paper)")]
        assert float(line.split()[3]) == pytest.approx(ours[column], abs=5e-5), column
    assert ours["ZB-2p"] == pytest.approx(row.rates["ZB-2p"], abs=5e-4)  # 0.0433, the paper's


def test_simulate_refuses_a_weight_memory_share_over_one(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--schedule", "zb-2p", "--stages", "2", "--microbatches", "4", "--weight-memory", "1.5"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1 and "1.5" in err, err


@pytest.mark.slow  # starts ranks: a tiny model, a few seconds each
@pytest.mark.parametrize("steps, first_line_says, warns", [
    (1, "1 step on cpu", True),    # its only step is the first, a warm-up
    (2, "2 steps on cpu", True),   # its figures are step 1's, the second warm-up step
    (3, "3 steps on cpu", False),  # step 2 on: none of the warm-up
])
def test_a_run_too_short_to_leave_out_the_warm_up_says_so(steps, first_line_says, warns):
    done = run_cli("run", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--model", "mlp",
                   "--layers", "2", "--hidden", "16", "--steps", str(steps))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert first_line_says in lines[0]
    assert any("the figures include warm-up steps" in line for line in lines) == warns
