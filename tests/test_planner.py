"""PipeDream's planner (engine/theory/planner.py): its dynamic program finds the configuration an
exhaustive search finds, replicates a heavy first stage as the paper's "2-1-1" does, and its step
is 1F1B's for the layouts the engine runs."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from pipelab.engine.theory.formulas import ring_all_reduce_seconds
from pipelab.engine.theory.planner import (
    LayerProfile,
    Link,
    Plan,
    PlannedStage,
    cut_once,
    data_parallel,
    layout_plan,
    plan,
    replicated_plan,
    stage_own,
    straight_pipeline,
)

LINK = Link(bandwidth_bytes_per_s=1e6, latency_s=1e-4)


def every_plan(layers, workers, microbatches, link) -> list[Plan]:
    """Every split of the layers into consecutive stages and every way to give them at most
    ``workers`` replicas: the search the dynamic program replaces."""
    n = len(layers)
    plans = []
    for cuts in itertools.chain.from_iterable(itertools.combinations(range(1, n), k) for k in range(n)):
        bounds = list(zip((0, *cuts), (*cuts, n)))
        for replicas in itertools.product(range(1, workers + 1), repeat=len(bounds)):
            if sum(replicas) > workers:
                continue
            stages = tuple(PlannedStage(i, j - 1, r, sum(x.compute_s for x in layers[i:j]),
                                        ring_all_reduce_seconds(sum(x.parameter_bytes for x in layers[i:j]), r,
                                                                link.bandwidth_bytes_per_s, link.latency_s))
                           for (i, j), r in zip(bounds, replicas))
            # Stage k finishes after every stage before it took one micro-batch forward and one
            # backward through it and its cut, then its own rounds and all-reduce.
            ahead = [sum(t.compute_s + cut_once(layers, t.last_layer, link) for t in stages[:k])
                     for k in range(len(stages))]
            step = max([a + stage_own(s, microbatches) for a, s in zip(ahead, stages)]
                       + [microbatches * cut_once(layers, s.last_layer, link) for s in stages[:-1]])
            plans.append(Plan(stages, microbatches, step,
                              sum(cut_once(layers, s.last_layer, link) for s in stages[:-1])))
    return plans


MODELS = {
    # name: layers as (compute s, output bytes, parameter bytes)
    "even": [(1.0, 1000, 1000)] * 4,
    "heavy first, light fc": [(4.0, 1000, 1000)] + [(1.0, 1000, 4_000_000)] * 3,
    "big messages": [(1.0, 5_000_000, 1000)] * 4,
    "uneven": [(0.5, 100, 10), (3.0, 2000, 500_000), (0.2, 100, 10), (1.5, 300, 2_000_000), (0.7, 50, 100)],
}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("workers", [1, 2, 3, 4])
@pytest.mark.parametrize("microbatches", [1, 4, 8])
def test_the_dynamic_program_finds_what_an_exhaustive_search_finds(name, workers, microbatches):
    layers = tuple(LayerProfile(*x) for x in MODELS[name])
    planned = plan(layers, workers, microbatches, LINK)
    best = min(p.step_s for p in every_plan(layers, workers, microbatches, LINK))
    assert planned.step_s == pytest.approx(best) and planned.workers <= workers


def test_a_heavy_first_stage_with_light_parameters_is_replicated_as_the_papers_2_1_1():
    """The paper's Table 1 shape: compute up front, parameters behind (convolutions, then fully
    connected layers), on a slow link: replicate the front, pipeline the back."""
    layers = tuple(LayerProfile(*x) for x in MODELS["heavy first, light fc"])
    chosen = plan(layers, 4, 8, Link(1e6))
    assert chosen.config == "2-1-1"
    assert [(s.first_layer, s.last_layer) for s in chosen.stages] == [(0, 0), (1, 2), (3, 3)]
    assert chosen.step_s < straight_pipeline(layers, 4, 8, Link(1e6)).step_s
    assert chosen.step_s < data_parallel(layers, 4, 8, Link(1e6)).step_s


@pytest.mark.parametrize("p, d", [(4, 1), (2, 2), (1, 4)])
def test_d_pipelines_of_p_equal_stages_take_1f1bs_step(p, d):
    """(B/d + p - 1) stages' time, then the first stage's all-reduce, and the cuts' messages."""
    layers = tuple(LayerProfile(1.0, 1000, 1000) for _ in range(4))
    layout = layout_plan(layers, p, d, 8, LINK)
    stage = 4.0 / p
    sync = ring_all_reduce_seconds(1000 * 4 / p, d, LINK.bandwidth_bytes_per_s, LINK.latency_s)
    cuts = (p - 1) * 2 * LINK.message_s(1000)
    assert layout.config == "-".join([str(d)] * p)
    assert layout.step_s == pytest.approx((8 / d + p - 1) * stage + sync + cuts)


def test_a_heavy_first_stage_finishes_last_with_its_trip_hidden():
    """1F1B with the heavy stage first: it computes all B micro-batches back to back while the
    others carry each one down and back (the device clock shows it: step = B x its F + B)."""
    layers = tuple(LayerProfile(*x) for x in [(8.0, 0, 0), (1.0, 0, 0), (1.0, 0, 0)])
    straight = straight_pipeline(layers, 3, 8, Link(1e12))
    assert straight.step_s == pytest.approx(8 * 8.0)
    replicated = replicated_plan(layers, (2, 1, 1), 8, Link(1e12))
    assert replicated.step_s == pytest.approx(max(4 * 8.0, 8.0 + 8 * 1.0, 9.0 + 8 * 1.0))


def test_the_planner_refuses_an_empty_plan():
    with pytest.raises(ValueError, match="at least one layer, one worker and one micro-batch"):
        plan((), 2, 4, LINK)


@pytest.mark.parametrize("flags, says", [
    (["--workers", "0"], "workers must be a whole number >= 1"),
    (["--workers", "2", "--bandwidth", "-1"], "--bandwidth must be > 0"),
    (["--workers", "2", "--bandwidth", "1e9", "--latency", "-1"], "--latency must be >= 0"),
    (["--workers", "2", "--latency", "1e-5"], "--latency needs --bandwidth"),
    (["--workers", "2", "--hidden", "0"], "hidden must be a whole number >= 1"),
    (["--workers", "3", "--replicas", "2-x"], "replicas must be one whole number per stage"),
    (["--workers", "3", "--replicas", "2-0"], "every stage needs at least 1 replica"),
    (["--workers", "3", "--layers", "2", "--replicas", "1-1-1"], "3 stages (p=3 x v=1) need at least as many layers"),
    (["--workers", "3", "--model", "gpt", "--layers", "1", "--replicas", "1-1-1-1"],
     "4 stages (p=4 x v=1) need at least as many layers, but the gpt model has 3"),  # embedding, 1 block, head
])
def test_the_command_line_refuses_bad_input_in_one_line_before_it_profiles(flags, says, monkeypatch, capsys):
    # The profile launches the engine for seconds: a refusal after it kept the user waiting for nothing.
    from pipelab.engine.cli import plan as plan_command
    from pipelab.engine.cli.main import main
    monkeypatch.setattr(plan_command, "profile_layers", lambda config: pytest.fail("profiled before refusing"))
    with pytest.raises(SystemExit) as exited:
        main(["plan", *flags])
    said = capsys.readouterr().err
    assert exited.value.code == 2 and says in said and len(said.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_command_refuses_bad_input_in_one_line():
    done = subprocess.run([sys.executable, "-m", "pipelab", "plan", "--workers", "3", "--replicas", "2-0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "every stage needs at least 1 replica" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_command_line_profiles_measures_the_link_and_prints_the_three_layouts():
    done = subprocess.run([sys.executable, "-m", "pipelab", "plan", "--workers", "2", "--layers", "4",
                           "--hidden", "64", "--microbatch-size", "4"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("link: ") and "GB/s" in lines[1]
    assert [line.split()[0] for line in lines if line.split()[0] in ("planned", "straight", "data")] == \
        ["planned", "straight", "data"]


@pytest.mark.slow
def test_the_plan_prints_a_run_that_plays_it_and_prices_a_configuration_asked_for(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pipelab", "plan", "--workers", "3", "--model", "wide-first",
                           "--layers", "4", "--hidden", "64", "--microbatch-size", "4", "--microbatches", "4",
                           "--replicas", "2-1"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    (asked,) = [line for line in done.stdout.splitlines() if line.startswith("asked")]
    assert asked.split()[1] == "2-1" and "step" in asked
    (command,) = [line.split("run it: pipelab ", 1)[1] for line in done.stdout.splitlines() if "run it:" in line]
    ran = subprocess.run([sys.executable, "-m", "pipelab", *command.split(), "--steps", "2", "--check"],
                         capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, ran.stderr
    assert "gradient check" in ran.stdout and "PASS" not in ran.stderr
