"""Our schedules on torch's own runtime (engine/torch_bridge/launch.py): one process's gradients,
torch running our order, a measured timeline, and nothing left behind."""

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.config import RunConfig
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.torch_bridge.launch import check_torch_config, run_torch
from pipelab.engine.torch_bridge.rank import TRANSPORT
from tests.conftest import run_leftovers, wait_until_gone
from tests.engine_runs import SMALL


def runs():
    """Every synchronous schedule in the registry at p = 2 and 4, with the first m its builder
    takes among p+1, 2p+1, 3p: not a power of two, so a slip in the loss scaling shows (torch
    divides the gradient by m at REDUCE_GRAD, we divide each loss; by 4 both are exact)."""
    for name, info in REGISTRY.items():
        if not info.synchronous:
            continue
        for p in (2, 4):
            for m in (p + 1, 2 * p + 1, 3 * p):
                try:
                    build_schedule(name, p, m)
                except ScheduleError:
                    continue
                yield pytest.param(name, p, m, id=f"{name}-p{p}-m{m}")
                break


@pytest.mark.slow
@pytest.mark.parametrize("schedule,p,m", list(runs()))
def test_torch_runtime_gives_one_process_gradients_running_our_order(schedule, p, m, private_tmp):
    config = RunConfig(schedule=schedule, stages=p, microbatches=m, check=True, **SMALL)
    result = run_torch(config)
    check = result.check
    assert check.grad_max_rel_diff <= 1e-5
    assert check.loss == pytest.approx(check.reference_loss, rel=1e-5)
    assert check.losses_max_rel_diff <= 1e-5 and check.weight_max_rel_diff <= 1e-5
    assert result.transport == TRANSPORT
    plan = result.schedule
    for step in range(config.steps):
        for rank, program in enumerate(plan.actions):
            mine = sorted((e for e in result.timeline.events if e.rank == rank and e.step == step),
                          key=lambda e: e.wall_start)
            # Each action timed once, on its own rank, in the order the CSV gave torch.
            assert [f"{e.stage}{e.kind}{e.microbatch}" for e in mine] == [str(a) for a in program]
            assert all(e.duration > 0 and e.wall_end >= e.wall_start for e in mine)
            on_device = sorted(mine, key=lambda e: e.start)
            assert all(a.end <= b.start + 1e-12 for a, b in zip(on_device, on_device[1:]))
    metrics = result.metrics
    assert 0 < metrics.device_bubble_fraction < 1 and metrics.wall_step_time_s > 0
    # The device clock is each step played with its own measured costs (engine/torch_bridge/clock.py).
    assert metrics.simulated_bubble_fraction_per_step_costs == pytest.approx(metrics.device_bubble_fraction, abs=1e-9)
    assert all(result.memory[r].peak_activation_bytes > 0 for r in range(p))
    assert wait_until_gone() == []
    assert run_leftovers(private_tmp) == []


@pytest.mark.parametrize("settings,words", [
    (dict(schedule="pipedream"), "U actions"),
    (dict(overlap_steps=True), "--overlap-steps"),
    (dict(clip_grad_norm=1.0), "--clip-grad-norm"),
    (dict(schedule="interleaved", microbatches=3), "multiple of stages"),
])
def test_what_torchs_runtime_cannot_run_is_one_line_before_any_process(settings, words):
    config = RunConfig(**{**dict(schedule="1f1b", stages=2, microbatches=4, **SMALL), **settings})
    with pytest.raises(ScheduleError) as err:
        check_torch_config(config)
    assert "\n" not in str(err.value) and words in str(err.value)


def run_cli(*args, cwd=None):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "pipelab", "run", "--runtime", "torch", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


@pytest.mark.slow
def test_cli_prints_the_same_summary_and_writes_the_result(tmp_path):
    import json
    out = tmp_path / "run.json"
    result = run_cli("--schedule", "zb-h1", "--stages", "2", "--microbatches", "3", "--model", "mlp", "--check",
                     "--steps", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    for line in ("bubble fraction", "bubble breakdown", "gradient check", "messages: " + TRANSPORT):
        assert line in result.stdout
    data = json.loads(out.read_text())
    assert data["transport"] == TRANSPORT and data["check"]["grad_max_rel_diff"] <= 1e-5
    assert {e["kind"] for e in data["events"]} == {"F", "I", "W"}  # torch ran zb-h1's split backward


def test_cli_refuses_an_asynchronous_schedule_in_one_line(capsys):
    from pipelab.engine.cli.main import main
    with pytest.raises(SystemExit) as exc:
        main(["run", "--runtime", "torch", "--schedule", "pipedream-2bw", "--stages", "2", "--microbatches", "4"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "U actions" in err
