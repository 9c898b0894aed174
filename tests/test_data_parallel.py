"""Pipelines side by side (PP x DP): the layout, the R action in the validator and the
simulator, the formulas, the settings that are refused, and real runs whose every replica
matches one process over the global batch (engine/schedules/data_parallel.py,
engine/runtime/gradient_reduce.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pipelab.engine.actions import REDUCE_GRAD
from pipelab.engine.config import ConfigError, Limits, RunConfig, settings_error
from pipelab.engine.results.timeline import Event, Timeline
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.schedules.data_parallel import AFTER_BACKWARD, AT_FLUSH, RankLayout, with_gradient_reduce
from pipelab.engine.theory import formulas
from pipelab.engine.theory.simulate import CostModel, simulate
from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate

SYNCHRONOUS = sorted(name for name in REGISTRY if not build_schedule(name, 2, 4).is_async)


# ---- the layout ----------------------------------------------------------------------------
@pytest.mark.parametrize("p, d, process, replica, pipeline_rank", [
    # p  d  process  replica  pipeline rank
    (2, 2, 0,       0,       0),
    (2, 2, 1,       0,       1),
    (2, 2, 2,       1,       0),
    (2, 2, 3,       1,       1),
    (4, 2, 6,       1,       2),
    (1, 4, 3,       3,       0),
])
def test_a_process_is_a_pipeline_rank_of_one_replica(p, d, process, replica, pipeline_rank):
    layout = RankLayout(p, d)
    assert (layout.replica_of(process), layout.pipeline_rank_of(process)) == (replica, pipeline_rank)
    assert layout.process(replica, pipeline_rank) == process
    assert process in layout.pipeline(replica) and process in layout.reduce_group(pipeline_rank)


def test_the_layout_says_which_processes_form_a_pipeline_and_which_share_a_stage():
    assert RankLayout(2, 2).describe() == [
        "pipeline 0: processes 0, 1",
        "pipeline 1: processes 2, 3",
        "data-parallel group of pipeline rank 0: processes 0, 2",
        "data-parallel group of pipeline rank 1: processes 1, 3",
    ]
    assert RankLayout(3, 1).describe() == ["pipeline 0: processes 0, 1, 2"]
    assert RunConfig(stages=4, data_parallel=2).layout.world == 8


# ---- the R action in the schedule ----------------------------------------------------------
@pytest.mark.parametrize("name", SYNCHRONOUS)
@pytest.mark.parametrize("placement", [AFTER_BACKWARD, AT_FLUSH])
def test_every_synchronous_schedule_reduces_each_stage_once_after_its_last_backward(name, placement):
    base = build_schedule(name, 2, 4)
    schedule = with_gradient_reduce(base, placement)
    validate(schedule)
    for rank, program in enumerate(schedule.actions):
        reduces = [k for k, a in enumerate(program) if a.kind == REDUCE_GRAD]
        assert sorted(program[k].stage for k in reduces) == schedule.stages_of(rank)
        for k in reduces:
            later = [a for a in program[k + 1:] if a.stage == program[k].stage]
            assert all(a.kind == REDUCE_GRAD for a in later) or not later
        if placement == AT_FLUSH:  # every R after every compute action of the rank
            assert reduces == list(range(len(program) - len(reduces), len(program)))
    assert [a for program in schedule.actions for a in program if a.kind != REDUCE_GRAD] == \
        [a for program in base.actions for a in program]


def test_an_interleaved_chunk_reduces_while_its_rank_still_computes_the_other():
    schedule = with_gradient_reduce(build_schedule("interleaved", 2, 4, 2))
    program = schedule.actions[0]
    first_reduce = next(k for k, a in enumerate(program) if a.kind == REDUCE_GRAD)
    assert any(a.kind not in (REDUCE_GRAD,) for a in program[first_reduce + 1:])


@pytest.mark.parametrize("text, rule", [
    # custom schedule (p = 2, m = 2)                  the rule it breaks
    ("0F0 0F1 0B0 0R0 0B1\n1F0 1B0 1F1 1B1 1R0",       "reduces before the backward of micro-batch 1"),
    ("0F0 0F1 0B0 0B1 0R0\n1F0 1B0 1F1 1B1",           "1R0 is missing"),
    ("0F0 0F1 0B0 0B1 0R0 0R0\n1F0 1B0 1F1 1B1 1R0",   "computed twice"),
])
def test_a_misplaced_reduce_is_refused_with_the_rule_and_the_step(text, rule):
    with pytest.raises(InvalidSchedule, match=rule):
        validate(parse_schedule(text, num_ranks=2, num_microbatches=2))


@pytest.mark.parametrize("t_r", [0.5, 2.0, 5.0])
def test_the_simulator_hides_each_reduce_in_the_cooldown_as_the_formula_says(t_r):
    p, m = 4, 8
    cost = CostModel(forward=1.0, backward=2.0, reduce=t_r)
    after = simulate(with_gradient_reduce(build_schedule("1f1b", p, m)), cost)
    flush = simulate(with_gradient_reduce(build_schedule("1f1b", p, m), AT_FLUSH), cost)
    plain = simulate(build_schedule("1f1b", p, m), cost)
    for s in range(p):
        assert after.exposed_reduce()[s] == pytest.approx(formulas.exposed_reduce_s(s, 2.0, t_r))
        assert flush.exposed_reduce()[s] == pytest.approx(formulas.exposed_reduce_s(s, 2.0, t_r, at_flush=True))
    # The step ends with the last reduce; placed after the backward it is never longer.
    assert after.step_time() == pytest.approx(plain.step_time() + t_r)  # stage 0 hides nothing
    assert flush.step_time() == pytest.approx(plain.step_time() + t_r)
    assert after.step_time() <= flush.step_time()


def test_a_reduce_is_in_the_step_but_not_busy_time():
    events = [Event(0, 0, "F", 0, 0.0, 1.0), Event(0, 0, "B", 0, 1.0, 3.0), Event(0, 0, REDUCE_GRAD, 0, 3.0, 4.0)]
    timeline = Timeline(1, events)
    assert timeline.step_time() == 4.0 and timeline.busy_time() == [3.0]
    assert timeline.bubble_fraction() == pytest.approx(0.25)
    assert timeline.exposed_reduce() == {0: 1.0}


def test_interleaved_chunks_hide_the_first_chunks_reduce_in_the_simulator():
    cost = CostModel(forward=1.0, backward=2.0, reduce=3.0)
    exposed = simulate(with_gradient_reduce(build_schedule("interleaved", 2, 4, 2)), cost).exposed_reduce()
    assert exposed[3] == 0.0 and exposed[2] == 0.0  # the second chunks finish first and reduce in time
    assert exposed[0] == pytest.approx(3.0)  # stage 0 finishes the step: nothing after it hides


# ---- formulas ------------------------------------------------------------------------------
@pytest.mark.parametrize("p, total, d, bubble", [
    # p  global m  d   (p-1)/(m/d... + p-1)
    (4, 8,       1,  3 / 11),
    (2, 8,       2,  1 / 5),
    (1, 8,       4,  0.0),
])
def test_the_bubble_at_a_fixed_global_batch(p, total, d, bubble):
    assert formulas.fixed_global_batch_bubble_fraction(p, total, d) == pytest.approx(bubble)


@pytest.mark.parametrize("nbytes, d, bandwidth, latency, seconds", [
    (1e6, 1, 1e9, 1e-5, 0.0),
    (1e6, 2, 1e9, 0.0, 1e-3),            # 2(d-1)/d = 1: every byte once
    (1e6, 4, 1e9, 1e-5, 1.5e-3 + 6e-5),  # 2(d-1)/d = 1.5, 2(d-1) = 6 hops
])
def test_a_ring_all_reduce_moves_two_d_minus_one_over_d_of_the_bytes(nbytes, d, bandwidth, latency, seconds):
    assert formulas.ring_all_reduce_seconds(nbytes, d, bandwidth, latency) == pytest.approx(seconds)


# ---- settings that cannot run -------------------------------------------------------------
BAD = [
    # the settings                                    the one line says
    (dict(data_parallel=0),                           "data-parallel must be a whole number >= 1"),
    (dict(stages=4, data_parallel=3),                 "d=3 x stages p=4 = 12 processes, at most 8"),
    (dict(schedule="pipedream", data_parallel=2),     "pipedream updates inside the step"),
    (dict(schedule="pipedream-2bw", data_parallel=2), "data parallelism runs synchronous schedules only"),
    (dict(data_parallel=2, overlap_steps=True),       "overlap-steps does not run with data parallelism"),
    (dict(data_parallel=2, clip_grad_norm=1.0),       "clip-grad-norm does not run with data parallelism"),
    (dict(data_parallel=2, reduce_at="later"),        "unknown reduce placement 'later'"),
    (dict(schedule="custom", stages=2, microbatches=1, data_parallel=2,
          custom_schedule="0F0 0B0\n1F0 1B0"),                       "needs one R action per stage"),
]


@pytest.mark.parametrize("settings, says", BAD)
def test_impossible_data_parallel_settings_are_refused_in_one_line(settings, says):
    config = RunConfig(model="mlp", layers=4, **{"stages": 2, "microbatches": 4, **settings})
    error = settings_error(config, Limits())  # a server's default caps: 8 processes
    assert error is not None and says in error and "\n" not in error
    assert error.code  # a page says it in its own language (zh.json's error.<code>)


def test_the_global_batch_splits_into_replicas_or_says_why():
    assert RunConfig(microbatch_size=4).for_global_batch(8, 2).microbatches == 4
    assert RunConfig().for_global_batch(8, 4).global_microbatches == 8
    with pytest.raises(ConfigError, match="global batch of 6 micro-batches does not split into d=4"):
        RunConfig().for_global_batch(6, 4)


def test_a_custom_schedule_with_its_own_reduces_runs_with_data_parallelism():
    config = RunConfig(schedule="custom", stages=2, microbatches=1, model="mlp", layers=4, data_parallel=2,
                       custom_schedule="0F0 0B0 0R0\n1F0 1B0 1R0")
    assert settings_error(config) is None


# ---- real runs -----------------------------------------------------------------------------
def small(**settings) -> RunConfig:
    return RunConfig(**{**dict(model="mlp", layers=4, hidden=32, microbatch_size=4, steps=3, stages=2,
                               microbatches=4, data_parallel=2, check=True), **settings})


@pytest.mark.slow
@pytest.mark.parametrize("name", SYNCHRONOUS)
def test_every_synchronous_schedule_with_two_replicas_equals_one_process(name):
    from pipelab.engine.runtime.launch import run
    result = run(small(schedule=name, layers=8))
    check = result.check
    assert check.grad_max_rel_diff <= 1e-5 and check.weight_max_rel_diff <= 1e-5
    assert check.losses_max_rel_diff <= 1e-5
    assert check.replica_weight_max_diff == 0.0  # the same averaged gradients: bit-identical replicas
    dp = result.data_parallel
    every = dp.timeline(result.schedule.num_microbatches, result.schedule.stage_to_rank)
    assert every.num_ranks == 4
    reduces = {(e.rank, e.stage, e.step) for e in every.reduce_events()}
    layout = result.config.layout
    assert reduces == {(layout.process(k, result.schedule.stage_to_rank[s]), s, step)
                       for k in range(2) for s in range(result.schedule.num_stages) for step in range(3)}


@pytest.mark.slow
@pytest.mark.parametrize("stages, replicas, reduce_at", [
    # p  d  where each stage's R goes
    (1, 4, "backward"),   # plain data parallelism
    (2, 2, "flush"),
    (4, 2, "backward"),   # 8 processes
])
def test_more_replicas_and_the_flush_placement_equal_one_process(stages, replicas, reduce_at):
    from pipelab.engine.runtime.launch import run
    result = run(small(schedule="1f1b", stages=stages, data_parallel=replicas, reduce_at=reduce_at,
                       microbatches=2))
    assert result.check.grad_max_rel_diff <= 1e-5 and result.check.replica_weight_max_diff == 0.0
    assert result.data_parallel.replicas == replicas and result.data_parallel.reduce_at == reduce_at
    assert len(result.data_parallel.reduce_cost_s) == stages and min(result.data_parallel.reduce_cost_s) > 0


@pytest.mark.slow
def test_a_data_parallel_result_reads_back_and_documents_its_fields():
    from pipelab.engine.results.result import RunResult
    from pipelab.engine.runtime.launch import run
    from tests.test_schema import documented_fields
    result = run(small(steps=2))
    data = json.loads(json.dumps(result.to_dict()))
    again = RunResult.from_dict(data)
    assert again.data_parallel == result.data_parallel
    assert documented_fields()["data_parallel"] == list(data["data_parallel"])
    assert "replica_weight_max_diff" in data["check"]
    # The trace and the wall-clock view carry every process's row, R included.
    trace = result.all_processes_timeline().to_chrome_trace()["traceEvents"]
    assert {e["tid"] for e in trace if e.get("cat") == REDUCE_GRAD} == {0, 1, 2, 3}


@pytest.mark.slow
@pytest.mark.parametrize("flags, says", [
    (["--schedule", "1f1b", "--microbatches", "4", "--data-parallel", "0"], "data-parallel must be a whole number"),
    (["--schedule", "pipedream", "--microbatches", "4", "--data-parallel", "2"], "synchronous schedules only"),
    (["--schedule", "1f1b", "--data-parallel", "4", "--global-microbatches", "6"], "does not split into d=4"),
    (["--schedule", "1f1b", "--data-parallel", "2", "--global-microbatches", "8", "--microbatches", "4"],
     "give either --microbatches (per replica) or --global-microbatches"),
    (["--schedule", "1f1b", "--data-parallel", "2", "--reduce-at", "later"], "invalid choice: 'later'"),
])
def test_the_command_line_refuses_bad_data_parallel_flags_in_one_line(flags, says):
    done = subprocess.run([sys.executable, "-m", "pipelab", "run", "--stages", "2", *flags],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_command_line_runs_two_pipelines_and_shows_where_they_sit(tmp_path):
    out = tmp_path / "result.json"
    done = subprocess.run([sys.executable, "-m", "pipelab", "run", "--schedule", "1f1b", "--stages", "2",
                           "--data-parallel", "2", "--global-microbatches", "4", "--model", "mlp", "--layers", "4",
                           "--hidden", "32", "--microbatch-size", "4", "--steps", "2", "--check", "--out", str(out)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "d=2 pipelines x p=2 = 4 processes, global batch 4 micro-batches" in done.stdout
    assert "data-parallel group of pipeline rank 1: processes 1, 3" in done.stdout
    assert "replicas differ by 0.0e+00" in done.stdout
    assert json.loads(out.read_text())["config"]["microbatches"] == 2  # 4 global micro-batches over 2 replicas


def test_a_cluster_task_asks_for_every_process_of_the_layout():
    from pipelab.app.runner.cluster import ranks_of
    from pipelab.engine.runtime.paired import SideBySideRequest
    assert ranks_of(RunConfig(stages=2, data_parallel=2)) == 4
    assert ranks_of(RunConfig(stages=4)) == 4
    assert ranks_of(SideBySideRequest((RunConfig(stages=2), RunConfig(stages=2, data_parallel=3)))) == 6


@pytest.mark.slow
def test_the_export_writes_torchs_reduce_grad_after_each_stages_last_backward():
    done = subprocess.run([sys.executable, "-m", "pipelab", "export", "--schedule", "1f1b", "--stages", "2",
                           "--microbatches", "2", "--reduce-grad"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["0F0,0F1,0B0,0B1,0REDUCE_GRAD", "1F0,1B0,1F1,1B1,1REDUCE_GRAD"]


@pytest.mark.slow
@pytest.mark.parametrize("fault", [("crash", 2, 1), ("hang", 3, 1)])
def test_a_failing_process_of_the_second_pipeline_ends_the_run_naming_it(fault, private_tmp, short_stall):
    """Processes are numbered as torch.distributed numbers them (RankLayout): a hang in replica 1's
    pipeline rank 1 is process 3, named so, and nothing of the run is left behind."""
    from pipelab.engine.runtime.faults import injected
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.runtime.rank_processes import RunFailed
    from tests.conftest import run_leftovers, wait_until_gone
    with pytest.raises(RunFailed, match=f"rank {fault[1]}"), injected(*fault):
        run(small(check=False))
    assert wait_until_gone() == []
    assert run_leftovers(private_tmp) == []


@pytest.mark.parametrize("reduce_at, exposed", [
    ("backward", "exposed all-reduce   3 1 0 0 s per stage"),   # max(0, t_R - s x T_B), T_B = 2
    ("flush", "exposed all-reduce   3 3 3 3 s per stage"),
])
def test_simulate_plays_each_stages_reduce_and_says_what_shows(capsys, reduce_at, exposed):
    from pipelab.engine.cli.main import main
    assert main(["simulate", "--schedule", "1f1b", "--stages", "4", "--microbatches", "8", "--t-reduce", "3",
                 "--reduce-at", reduce_at]) == 0
    out = capsys.readouterr().out
    assert exposed in out and "0R0" in out  # the grid draws the R actions too


@pytest.mark.parametrize("lang, says", [
    ("en", ", 2 pipelines side by side, each stage's all-reduce at the flush"),
    ("zh", "，2 条流水线并排，每个阶段的全归约在刷新时"),
])
def test_a_runs_settings_line_says_its_pipelines_and_what_changed_names_them(lang, says):
    from pipelab.app.views.settings_diff import changed_settings, settings_text
    two = RunConfig(stages=2, data_parallel=2, reduce_at="flush")
    assert says in settings_text(two, lang=lang)
    assert "pipelines" not in settings_text(RunConfig(stages=2))
    assert changed_settings(RunConfig(stages=4), RunConfig(stages=2, data_parallel=2)).startswith("p 4 → 2, d 1 → 2")
