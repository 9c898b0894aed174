"""Real runs of the cost-aware zero bubble schedules: built from one profiled step's costs
(engine/runtime/profile_costs.py, as arXiv 2401.10241, section 3 profiles its first iterations), then
run for real with the gradients of one process."""

import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from pipelab.engine.config import RunConfig
from pipelab.engine.runtime.launch import run
from pipelab.engine.runtime.profile_costs import (
    PROFILE_SCHEDULE,
    profile_config,
    with_profiled_costs,
    with_shared_profiles,
)
from pipelab.engine.schedules import build_schedule
from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.schedules.zb_auto import memory_limit
from tests.engine_runs import SMALL

LIMIT = {"zb-h2": lambda p: 2 * p - 1, "zb-1p": lambda p: memory_limit("zb-1p", p),
         "zb-2p": lambda p: memory_limit("zb-2p", p)}


def assert_one_process(result):
    assert result.check.grad_max_rel_diff <= 1e-5
    assert result.check.loss == pytest.approx(result.check.reference_loss, rel=1e-5)
    assert result.check.weight_max_rel_diff <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["zb-h2", "zb-1p", "zb-2p"])
def test_built_from_profiled_costs_it_runs_with_one_process_gradients(schedule):
    p, m = 4, 8
    config = RunConfig(schedule=schedule, stages=p, microbatches=m, check=True, **SMALL)
    profiled = with_profiled_costs(config, run)
    t_f, t_i, t_w, link = profiled.schedule_costs
    assert min(t_f, t_i, t_w) > 0 and link >= 0
    result = run(profiled)
    assert_one_process(result)
    costs = PassCosts(forward=t_f, backward_input=t_i, backward_weight=t_w, link=link)
    assert result.schedule.actions == build_schedule(schedule, p, m, costs=costs).actions
    assert max(result.metrics.peak_held_microbatches_per_device) <= LIMIT[schedule](p)
    assert result.config.schedule_costs == profiled.schedule_costs  # stored with the run


@pytest.mark.slow
def test_an_order_the_costs_changed_still_gives_one_process_gradients():
    # At these costs zb-h2's order is not the unit grid's (tests/test_zb_costs.py).
    costs = (2.6, 1.1, 2.8, 0.0)
    result = run(RunConfig(schedule="zb-h2", stages=4, microbatches=5, check=True, schedule_costs=costs, **SMALL))
    assert result.schedule.actions != build_schedule("zb-h2", 4, 5).actions
    assert_one_process(result)


def test_the_profile_run_splits_the_backward_and_measures_one_step():
    config = RunConfig(schedule="zb-2p", stages=4, microbatches=8, check=True, steps=5, overlap_steps=True)
    profile = profile_config(config)
    assert (profile.schedule, profile.steps, profile.check, profile.overlap_steps) == (PROFILE_SCHEDULE, 2, False,
                                                                                       False)
    assert build_schedule(profile.schedule, 4, 8).split_backward_pairs  # I and W timed apart
    given = config.with_(schedule_costs=(1.0, 1.0, 1.0, 0.0))
    assert with_profiled_costs(given, run=None) is given  # costs given: nothing to profile
    plain = config.with_(schedule="1f1b")
    assert with_profiled_costs(plain, run=None) is plain


class StandInProfiles:
    """A profile run that returns a different T_F each time it is called, and counts the calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, config, on_progress=None):
        self.calls.append(config)
        costs = SimpleNamespace(mean_f_i_w=lambda: (float(len(self.calls)), 1.0, 1.0))
        return SimpleNamespace(metrics=SimpleNamespace(costs_s=costs, link_cost_s=0.0))


#   settings (schedule, overlap_steps, hidden)                       profile runs
SHARED_PROFILES = [
    ((("zb-h2", False, 64), ("zb-1p", False, 64), ("zb-2p", False, 64)), 1),
    ((("zb-h2", False, 64), ("zb-h2", True, 64)),                        1),
    ((("zb-h2", False, 64), ("zb-h2", False, 128)),                      2),
    ((("1f1b", False, 64), ("zb-h1", False, 64)),                        0),
]


@pytest.mark.parametrize("settings, runs", SHARED_PROFILES)
def test_settings_of_one_model_share_one_profile_run_and_its_costs(settings, runs):
    configs = [RunConfig(schedule=s, stages=4, microbatches=8, overlap_steps=o, hidden=h) for s, o, h in settings]
    profile = StandInProfiles()
    built = with_shared_profiles(configs, profile)
    assert len(profile.calls) == runs
    assert [c.with_(schedule_costs=None) for c in built] == configs  # nothing else changed
    by_profile = {}
    for config in built:
        if config.schedule_costs is not None:  # the same profile, the same costs
            assert by_profile.setdefault(profile_config(config.with_(schedule_costs=None)),
                                         config.schedule_costs) == config.schedule_costs


@pytest.mark.slow
def test_run_command_profiles_then_runs_checked():
    out = subprocess.run([sys.executable, "-m", "pipelab", "run", "--schedule", "zb-2p", "--stages", "2",
                          "--microbatches", "4", "--model", "mlp", "--check"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert "zb-2p built for the costs one profiled step of zb-h1 measured: T_F" in out.stdout
    diff = float(re.search(r"gradient check\s+max relative difference (\S+),", out.stdout).group(1))
    assert diff <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["zb-1p", "zb-2p"])
def test_overlapping_steps_with_post_validation_end_with_one_process_weights(schedule):
    # The paper's near-zero bubble needs the next step to start early (section 4): clipping
    # that triggers every step makes every optimistic update roll back and replay.
    config = RunConfig(schedule=schedule, stages=4, microbatches=8, check=True, schedule_costs=(1.0, 1.0, 0.5, 0.0),
                       overlap_steps=True, clip_grad_norm=0.05, **{**SMALL, "steps": 4})
    result = run(config)
    assert result.check.weight_max_rel_diff <= 1e-5 and result.check.losses_max_rel_diff <= 1e-5
    assert list(result.metrics.step_check.clipped) == [0, 1, 2, 3]
    assert list(result.metrics.step_check.replayed) == [1, 2, 3]
