"""PipeDream's replicated stages (engine/schedules/replication.py): the round-robin routing, the
validator's and the simulator's reading of it, the settings refused in one line, and real runs
whose every worker matches one process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pipelab.engine.actions import BACKWARD, FORWARD, REDUCE_GRAD, Action, ScheduleError
from pipelab.engine.config import Limits, RunConfig, replicated_schedule, settings_error
from pipelab.engine.schedules import build_schedule
from pipelab.engine.schedules.replication import describe_replicas, parse_replicas, replicate
from pipelab.engine.theory.simulate import CostModel, simulate
from pipelab.engine.theory.validate import InvalidSchedule, validate

ONE_STAGE_PER_DEVICE_SYNCHRONOUS = ("naive", "gpipe", "1f1b", "zb-h1", "zb-h2")


# ---- routing ------------------------------------------------------------------------------------
@pytest.mark.parametrize("replicas, stage, microbatch, rank", [
    # replicas   stage  micro-batch  worker
    ((2, 1, 1),  0,     0,           0),
    ((2, 1, 1),  0,     1,           1),
    ((2, 1, 1),  0,     6,           0),
    ((2, 1, 1),  1,     5,           2),
    ((2, 1, 1),  2,     5,           3),
    ((1, 1, 2),  2,     3,           3),
    ((1, 3),     1,     4,           2),   # 4 mod 3 = 1: the second of ranks 1, 2, 3
])
def test_a_micro_batch_goes_round_robin_to_a_replicated_stages_workers(replicas, stage, microbatch, rank):
    schedule = replicate(build_schedule("1f1b", len(replicas), 8), replicas)
    assert schedule.rank_of(stage, microbatch) == rank
    assert schedule.num_ranks == sum(replicas)


@pytest.mark.parametrize("name", ONE_STAGE_PER_DEVICE_SYNCHRONOUS)
@pytest.mark.parametrize("replicas", [(2, 1, 1), (1, 2, 1), (1, 1, 2), (2, 2, 2), (3, 1, 1)])
def test_every_worker_runs_the_stages_own_program_for_its_micro_batches(name, replicas):
    """A worker of a stage with r replicas runs what the stage runs for m / r micro-batches,
    renamed to its own (micro-batch i is its i-th): its warm-up keeps the stage's forwards in
    flight. Uniform replication is then r pipelines side by side. Where those orders deadlock
    together (zero bubble's W placement, some shifts), every worker takes its subsequence of the
    stage's program instead, which cannot."""
    base = build_schedule(name, 3, 9)
    schedule = replicated_schedule(base, replicas)
    validate(schedule)
    own_orders = []
    for s in range(3):
        for worker in schedule.workers_of(s):
            mine = [a for a in schedule.actions[worker] if a.kind != REDUCE_GRAD]
            names = sorted({a.microbatch for a in mine})
            assert all(schedule.rank_of(s, j) == worker for j in names)
            own = build_schedule(name, 3, len(names)).actions[s]
            is_own = mine == [Action(a.stage, a.kind, names[a.microbatch]) for a in own]
            if not is_own:
                assert mine == [a for a in base.actions[s] if a.microbatch in names]
            if replicas[s] > 1:
                own_orders.append(is_own)
    assert all(own_orders) or not any(own_orders)  # one construction for the whole schedule
    assert all(own_orders) or name in ("zb-h1", "zb-h2")
    for s in range(3):
        for worker in schedule.workers_of(s):
            program = schedule.actions[worker]
            reduces = [k for k, a in enumerate(program) if a.kind == REDUCE_GRAD]
            last_backward = max(k for k, a in enumerate(program) if a.kind in ("B", "W"))
            # One R per worker of a replicated stage, right after its own last backward.
            assert reduces == ([last_backward + 1] if replicas[s] > 1 else [])


def test_uniform_replication_is_pipelines_side_by_side():
    """2-2-2 at m = 8 takes the time of one 1F1B pipeline of m = 4 (unit costs), as two
    pipelines of 3 stages would; the subsequence of one 8-micro-batch 1F1B would not."""
    base = build_schedule("1f1b", 3, 8)
    replicated = simulate(replicated_schedule(base, (2, 2, 2))).step_time()
    assert replicated == pytest.approx(simulate(build_schedule("1f1b", 3, 4)).step_time())
    subsequences = replicate(base, (2, 2, 2))
    validate(subsequences)
    assert simulate(subsequences).step_time() > replicated


def test_the_layout_names_each_stages_workers():
    schedule = replicate(build_schedule("1f1b", 3, 4), (2, 1, 1))
    assert describe_replicas(schedule) == ["stage 0: processes 0, 1, micro-batches round-robin",
                                           "stage 1: process 2", "stage 2: process 3"]
    assert schedule.stages_of(1) == [0] and schedule.stages_of(3) == [2]
    assert schedule.messages_per_step == 2 * 4 * 2  # every boundary crosses workers


def test_a_replicated_heavy_stage_shortens_the_simulated_step():
    """Stage 0 twice as heavy as the others: on one worker it sets the pace; on two it is as
    fast as the rest (PipeDream's reason to replicate)."""
    cost = CostModel(forward=(2.0, 1.0, 1.0), backward=(4.0, 2.0, 2.0))
    straight = simulate(build_schedule("1f1b", 3, 8), cost).step_time()
    replicated = simulate(replicate(build_schedule("1f1b", 3, 8), (2, 1, 1)), cost).step_time()
    assert replicated < 0.75 * straight


@pytest.mark.parametrize("replicas", [(2, 1, 1), (1, 2, 1), (1, 1, 2), (2, 2, 2)])
def test_asynchronous_pipedream_averages_a_round_before_each_update_on_a_replicated_stage(replicas):
    schedule = replicate(build_schedule("pipedream", 3, 8), replicas)
    validate(schedule)
    for s, count in enumerate(replicas):
        for worker in schedule.workers_of(s):
            program = schedule.actions[worker]
            for k, a in enumerate(program):
                if a.kind == "U":  # B, then (replicated) the round's average, then the update, of one micro-batch
                    before = [Action(s, BACKWARD, a.microbatch)] + ([Action(s, REDUCE_GRAD, a.microbatch)]
                                                                    if count > 1 else [])
                    assert list(program[k - len(before):k]) == before
            # Every replica reduces once per round, in round order: their all-reduces pair up.
            rounds = [a.microbatch // count for a in program if a.kind == REDUCE_GRAD]
            assert rounds == (list(range(8 // count)) if count > 1 else [])


def test_a_round_waits_for_every_replicas_backward_in_the_simulator():
    cost = CostModel(forward=(1.0, 1.0, 1.0), backward=(2.0, 2.0, 2.0), reduce=(0.5, 0.0, 0.0))
    timeline = simulate(replicate(build_schedule("pipedream", 3, 4), (2, 1, 1)), cost)
    ends = {(e.kind, e.rank, e.microbatch): e for e in timeline.events}
    for j in (0, 2):  # round j // 2: micro-batches j on worker 0, j + 1 on worker 1
        start = ends[("R", 0, j)].start
        assert start >= max(ends[("B", 0, j)].end, ends[("B", 1, j + 1)].end)


# ---- the validator ------------------------------------------------------------------------------
def test_the_validator_refuses_a_micro_batch_on_the_wrong_replica():
    schedule = replicate(build_schedule("1f1b", 2, 4), (2, 1))
    programs = [list(p) for p in schedule.actions]
    programs[0][0], programs[1][0] = programs[1][0], programs[0][0]  # 0F0 and 0F1 swap workers
    with pytest.raises(InvalidSchedule, match="micro-batch 1 goes to rank 1 \\(round-robin\\), not rank 0"):
        validate(schedule.with_actions(programs))


def test_the_validator_wants_every_worker_of_a_replicated_stage_to_reduce():
    schedule = replicate(build_schedule("1f1b", 2, 4), (2, 1))
    programs = [[a for a in p if not (a.kind == REDUCE_GRAD and k == 1)] for k, p in enumerate(schedule.actions)]
    with pytest.raises(InvalidSchedule, match="0R0 is missing"):
        validate(schedule.with_actions(programs))


def test_the_validator_refuses_a_reduce_before_the_workers_own_backward():
    schedule = replicate(build_schedule("1f1b", 2, 4), (2, 1))
    program = [a for a in schedule.actions[0] if a.kind != REDUCE_GRAD]
    program.insert(1, Action(0, REDUCE_GRAD, 0))
    with pytest.raises(InvalidSchedule, match="0R0 reduces before the backward of micro-batch 0 on stage 0"):
        validate(schedule.with_actions([program, *schedule.actions[1:]]))


# ---- settings refused in one line --------------------------------------------------------------
@pytest.mark.parametrize("settings, says", [
    (dict(replicas=(2, 1)), "replicas 2-1 gives 2 counts but the pipeline has 3 stages"),
    (dict(replicas=(0, 1, 1)), "every stage needs at least 1 replica, got 0"),
    (dict(replicas=(4, 4, 1)), "replicas 4-4-1 need 9 workers, at most 8 on this server"),
    (dict(replicas=(2, 1, 1), schedule="interleaved", microbatches=9), "replicated stages run with one stage per"),
    (dict(replicas=(2, 1, 1), schedule="zb-v"), "replicated stages run with one stage per"),
    (dict(replicas=(2, 1, 1), schedule="pipedream-2bw", microbatches=9), "replicated stages run the synchronous"),
    (dict(replicas=(2, 1, 1), schedule="pipedream", microbatches=7), "m=7 must be a multiple of 2"),
    (dict(replicas=(2, 1, 1), data_parallel=2), "data-parallel does not run with replicated stages"),
    (dict(replicas=(2, 1, 1), overlap_steps=True), "overlap-steps does not run with replicated stages"),
    (dict(replicas=(2, 1, 1), reduce_at="flush"), "reduce-at flush does not run with replicated stages"),
    (dict(replicas=(3, 1, 1), microbatches=2), "a stage on 3 workers needs at least 3 micro-batches"),
    (dict(replicas=(2, 1, 1), schedule="custom", custom_schedule="0F0 0B0\n1F0 1B0\n2F0 2B0"),
     "a custom schedule places every action itself: it does not run with replicas 2-1-1"),
])
def test_impossible_replicas_are_refused_in_one_line(settings, says):
    config = RunConfig(**{**dict(schedule="1f1b", stages=3, microbatches=8, model="mlp", layers=6), **settings})
    error = settings_error(config, Limits())
    assert error is not None and says in error and "\n" not in error


@pytest.mark.parametrize("text, replicas", [("2,1,1", (2, 1, 1)), ("2-1-1", (2, 1, 1)), ("15-1", (15, 1))])
def test_replicas_read_as_the_paper_writes_them(text, replicas):
    assert parse_replicas(text) == replicas


def test_replicas_that_are_not_numbers_are_refused():
    with pytest.raises(ScheduleError, match="one whole number per stage"):
        parse_replicas("2,x")


def test_replicated_stages_are_one_pipeline_of_workers_for_the_launcher():
    config = RunConfig(stages=3, microbatches=8, replicas=(2, 1, 1))
    assert config.layout.world == 4 and config.layout.replicas == 1
    assert RunConfig(**{**config.to_dict(), "replicas": [2, 1, 1]}).replicas == (2, 1, 1)  # a stored run's JSON


# ---- real runs ----------------------------------------------------------------------------------
def small(**settings) -> RunConfig:
    return RunConfig(**{**dict(model="mlp", layers=6, hidden=32, microbatch_size=4, steps=3, stages=3,
                               microbatches=6, replicas=(2, 1, 1), check=True), **settings})


@pytest.mark.slow
@pytest.mark.parametrize("name, replicas, microbatches", [
    ("gpipe", (2, 1, 1), 6),
    ("1f1b", (2, 1, 1), 6),
    ("1f1b", (1, 1, 2), 5),   # a replicated last stage, its workers' losses merged; 5 does not split evenly
    ("zb-h1", (1, 2, 1), 6),
    ("zb-h2", (2, 1, 1), 6),
    ("1f1b", (2, 2, 2), 4),   # every stage replicated: data parallelism, round-robin
])
def test_replicated_stages_equal_one_process(name, replicas, microbatches):
    from pipelab.engine.runtime.launch import run
    result = run(small(schedule=name, replicas=replicas, microbatches=microbatches))
    check = result.check
    assert check.grad_max_rel_diff <= 1e-5 and check.weight_max_rel_diff <= 1e-5
    assert check.losses_max_rel_diff <= 1e-5
    assert check.replica_weight_max_diff == 0.0  # a stage's workers end bit-identical
    assert result.timeline.num_ranks == sum(replicas)
    ran = {(e.rank, e.stage, e.microbatch) for e in result.timeline.events if e.kind in (FORWARD, BACKWARD)}
    assert ran == {(result.schedule.rank_of(s, j), s, j) for s in range(3) for j in range(microbatches)}
    assert len(result.microbatch_losses[0]) == microbatches
    reduces = {(e.rank, e.stage) for e in result.timeline.reduce_events()}
    assert reduces == {(w, s) for s in range(3) if replicas[s] > 1 for w in result.schedule.workers_of(s)}


@pytest.mark.slow
def test_asynchronous_pipedream_runs_with_a_replicated_stage():
    from pipelab.engine.runtime.launch import run
    result = run(small(schedule="pipedream", replicas=(2, 1, 1), microbatches=4, check=False, steps=4))
    assert result.schedule.is_async and result.timeline.num_ranks == 4
    reduces = [e for e in result.timeline.reduce_events() if e.rank in (0, 1)]
    assert len(reduces) == 2 * 2 * 4  # each worker: a round per 2 micro-batches, every step
    assert [m.weight_versions for _, m in sorted(result.memory.items())][2:] == [2, 1]
    assert all(abs(a - b) < 1.0 for a, b in zip(result.losses, result.losses[1:]))  # it trains, no blow-up


@pytest.mark.slow
def test_a_replicated_run_reads_back(tmp_path):
    from pipelab.engine.results.result import RunResult
    from pipelab.engine.runtime.launch import run
    result = run(small(steps=2, check=False))
    again = RunResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.schedule == result.schedule and again.schedule.stage_replicas == (2, 1, 1)


@pytest.mark.slow
def test_the_command_line_runs_replicated_stages_and_names_their_workers():
    done = subprocess.run([sys.executable, "-m", "pipelab", "run", "--schedule", "1f1b", "--stages", "3",
                           "--replicas", "2-1-1", "--microbatches", "4", "--model", "mlp", "--layers", "6",
                           "--hidden", "32", "--microbatch-size", "4", "--steps", "2", "--check"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "3 stages on 4 workers (2-1-1)" in done.stdout
    assert "stage 0: processes 0, 1, micro-batches round-robin" in done.stdout
    assert "replicas differ by 0.0e+00" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("flags, says", [
    (["--replicas", "2,1"], "replicas 2-1 gives 2 counts but the pipeline has 3 stages"),
    (["--replicas", "2,x,1"], "replicas must be one whole number per stage"),
    (["--replicas", "0,1,1"], "every stage needs at least 1 replica"),
    (["--replicas", "2,1,1", "--schedule", "interleaved"], "one stage per device"),
])
def test_the_command_line_refuses_bad_replicas_in_one_line(flags, says):
    args = ["--schedule", "1f1b", "--stages", "3", "--microbatches", "6", *flags]
    if args.count("--schedule") == 2:
        args = args[2:]
    done = subprocess.run([sys.executable, "-m", "pipelab", "run", *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


# ---- layers per stage, as a plan gives them ---------------------------------------------------
@pytest.mark.parametrize("stage_layers, fine", [
    ((1, 4, 4), True),
    ((1, 4, 3), False),     # 8 of the model's 9 layers
    ((1, 4, 4, 0), False),  # four counts for three stages
    ((0, 5, 4), False),
])
def test_layers_per_stage_cover_the_model_once(stage_layers, fine):
    config = RunConfig(schedule="1f1b", stages=3, microbatches=4, model="wide-first", layers=9,
                       stage_layers=stage_layers)
    error = settings_error(config)
    assert (error is None) == fine
    if not fine:
        assert "must give each of the 3 stages at least 1 layer and sum to the wide-first model's 9 layers" in error


def test_the_wide_first_models_first_layer_is_eight_of_the_rest():
    from pipelab.engine.model.parts import model_parts
    layers = model_parts(RunConfig(model="wide-first", layers=5, hidden=64)).layers
    params = [sum(p.numel() for p in layer.parameters()) for layer in layers]
    assert len(layers) == 5 and 7.5 < params[0] / params[1] < 8.5


@pytest.mark.parametrize("own_programs", [True, False])
def test_a_replicated_pipedream_stream_is_built_as_its_step_was(own_programs):
    from pipelab.engine.schedules.replication import registered_builder
    from pipelab.engine.schedules.stream import make_stream
    base = build_schedule("pipedream", 3, 4)
    step = replicate(base, (2, 1, 1), rebuild=registered_builder(base) if own_programs else None)
    assert step.replicas_run_own_programs is own_programs
    stream = make_stream(step, 2)
    assert stream.program.replicas_run_own_programs is own_programs
    validate(stream.program)
    first_step = [[a for a in program if a.microbatch < 4] for program in stream.program.actions]
    assert first_step == [list(program) for program in step.actions]
