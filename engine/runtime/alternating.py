"""Several schedules in one launch, their steps taking turns: what a comparison measures.

A host's speed switches within seconds (docs/measuring.md, "Step times of two runs"), so two
runs made at different moments compare two speeds, and a round of whole runs is too coarse
to cancel it. Here the rank processes build every compared schedule once, each its own copy
of the same initial weights split its own way, and play their steps in turn, in an ABBA
order (A B, B A, A B, ...: engine/runtime/turns.py): step k of every schedule runs within one round of
steps, so the neighbours a ratio divides saw the same host speed, and the order turning
each round keeps any schedule from always running first. Each schedule's steps stay whole
steps with a barrier around them (its device clock carries on from its own previous step),
so each one's RunResult is what a launch of its own would give; what pairs them is
``RunMetrics.launch_id`` and the per-step figures (pipelab.engine.results.result), from which a
comparison takes the median of per-pair ratios (engine/runtime/paired.py).

Settings can share a launch when they train the same model on the same data with the same
ranks (``why_not_alternating``); steps that overlap (one stream per run, PipeDream, 2BW) and
torch's runtime cannot, and a comparison of those falls back to rounds of whole launches.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Sequence

from pipelab.engine.config import NO_LIMITS, ConfigError, Limits, RunConfig
from pipelab.engine.errors import Message

SHARED_FIELDS = ("model", "layers", "hidden", "heads", "seq_len", "microbatch_size", "seed", "device", "transport",
                 "timeout_s")
"""What every schedule of one launch must share: the model, its data, where it runs. The
schedule, m, v, the partition, recompute and the check may differ."""


WHY_ROUNDS = {
    "one_setting": "one setting",
    "torch_runtime": "torch's runtime runs its own launch",
    "overlapping_steps": "steps that overlap run as one stream",
    "devices": "different numbers of devices",
    "step_check": "a step check runs its own launch",
    "model": "a different model, data or device",
}
"""Why settings cannot share a launch, by code (a page says it in its language: catalog
``runs.why_rounds.<code>``), in English."""


def why_not_alternating(configs: Sequence[RunConfig], schedules: Sequence) -> str | None:
    """Why these settings cannot share one launch (a WHY_ROUNDS code), or None when they can."""
    if len(configs) < 2:
        return "one_setting"
    first = configs[0]
    for config, schedule in zip(configs, schedules):
        if config.runtime != "engine":
            return "torch_runtime"
        if config.overlapping(schedule):
            return "overlapping_steps"
        # The same processes play every schedule: a 4-stage pipeline and 2 pipelines of 2 stages
        # (data parallelism) share a launch of 4, each set up the way its RankLayout says.
        if config.layout.world != first.layout.world:
            return "devices"
        if config.clip_grad_norm is not None or config.inject_nonfinite is not None:
            return "step_check"
        if any(getattr(config, f) != getattr(first, f) for f in SHARED_FIELDS):
            return "model"
    return None


def run_alternating(configs: Sequence[RunConfig], limits: Limits = NO_LIMITS, on_progress=None,
                    cancel: threading.Event | None = None, nice: int = 0, schedules: Sequence | None = None):
    """Run ``configs`` in one launch, their steps in turn (play_order); returns one RunResult
    per config, in order, sharing a ``launch_id``. Every config runs the most steps any asks
    for, so every step has its pair. ``schedules``: the configs' schedules where the caller has
    already built and checked them (a cost-searched one takes a while). A ConfigError says why
    settings cannot share a launch; a failed or cancelled run leaves nothing behind
    (rank_processes.rank_group)."""
    from pipelab.engine.results.result import build_result
    from pipelab.engine.runtime.launch import play_settings, start_ranks
    from pipelab.engine.runtime.rank_processes import rank_group
    if schedules is None:
        schedules = [config.check_values(limits) for config in configs]
    reason = why_not_alternating(configs, schedules)
    if reason is not None:
        raise ConfigError(Message.plain(f"these settings cannot share one launch: {WHY_ROUNDS[reason]}"))
    steps = max(config.steps for config in configs)
    configs = [config.with_(steps=steps) for config in configs]
    world = configs[0].layout.world
    with rank_group(world, configs[0].device) as group:  # SHARED_FIELDS: one device for all
        plays = []
        for i, (config, schedule) in enumerate(zip(configs, schedules)):
            folder = os.path.join(group.folder, f"play{i}")  # each play's channels in a folder of their own
            os.mkdir(folder)
            plays.append(play_settings(config, schedule, folder))
        start_ranks(group, plays, nice=nice)
        # The board counts every play's steps; the time limit is each one's, once per play.
        watched = configs[0].with_(steps=steps * len(configs), timeout_s=configs[0].timeout_s * len(configs))
        plays_count = len(configs)
        payloads = group.wait(watched, on_progress, cancel,  # lessons/i18n progress.step_in_turn says it
                              lambda step, total: f"step {(step - 1) // plays_count + 1} of {total // plays_count} "
                                                  "of each schedule, in turn")
        share = (time.monotonic() - group.started) / len(configs)
        launch_id = uuid.uuid4().hex[:12]
        return tuple(build_result(config, schedule, payload, wall_seconds=share, launch_id=launch_id,
                                  placement=group.placement)
                     for config, schedule, payload in zip(configs, schedules, payloads))
