"""Measure T_F, T_I, T_W and the link for a cost-aware schedule, as the paper's scheduler needs.

The zero bubble paper builds its schedules from profiled costs (arXiv 2401.10241, section 3:
"we profile T_F, T_B, T_W and T_comm in the first iterations"). ``pipelab run``
does the same for zb-h2, zb-1p and zb-2p: one short run of ZB-H1 with the same model, so
the backward is split and I and W are timed apart, gives each kind of pass's mean
device-clock cost over the stages (the run's own ``costs_s``) and the measured link; the
schedule is then built for them (RunConfig.schedule_costs) and run for real.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelab.engine.config import RunConfig
from pipelab.engine.schedules import CUSTOM, get_schedule_info

PROFILE_SCHEDULE = "zb-h1"
"""Splits B into I and W at 1F1B's memory: every pass kind is measured, cheaply."""


def needs_costs(config: RunConfig) -> bool:
    """Whether the run's schedule is built from costs and none were given."""
    return (isinstance(config, RunConfig) and config.schedule != CUSTOM and config.schedule_costs is None
            and get_schedule_info(config.schedule).takes_costs)


def profile_config(config: RunConfig) -> RunConfig:
    """The short run that measures the costs: the same model and stages, two steps (the
    first is a warm-up the engine never measures), no check, no overlap."""
    return config.with_(schedule=PROFILE_SCHEDULE, chunks=None, steps=2, check=False, overlap_steps=False,
                        clip_grad_norm=None, inject_nonfinite=None, schedule_costs=None)


def costs_of(result) -> tuple[float, float, float, float]:
    """(T_F, T_I, T_W, link) of a finished run: each kind's mean over the stages (the
    schedules are built for uniform stages, as the paper's Table 9 costs are)."""
    t_f, t_i, t_w = result.metrics.costs_s.mean_f_i_w()
    return t_f, t_i, t_w, float(result.metrics.link_cost_s)


def with_profiled_costs(config: RunConfig, run) -> RunConfig:
    """``config`` with schedule_costs measured by ``run`` (pipelab.engine.runtime.launch.run) on the profile
    run; unchanged where the schedule does not take costs or they were given."""
    return with_shared_profiles((config,), run)[0]


def with_shared_profiles(configs: Sequence[RunConfig], run) -> tuple[RunConfig, ...]:
    """Each config as ``with_profiled_costs`` gives it, one profile run per distinct profile:
    settings whose profile run is the same (ZB-H2, ZB-1p and ZB-2p of one model, or one
    schedule with a barrier and without) share it, so they are built for the same costs and
    compared on the same footing, and a comparison pays for one profile launch, not three."""
    measured: dict[RunConfig, tuple[float, float, float, float]] = {}
    out = []
    for config in configs:
        if needs_costs(config):
            profile = profile_config(config)
            if profile not in measured:
                measured[profile] = costs_of(run(profile, on_progress=None))
            config = config.with_(schedule_costs=measured[profile])
        out.append(config)
    return tuple(out)
