"""Start the ranks of a run, watch them, gather the result, and leave nothing behind.

From Python, ``run(config)`` starts one process per rank from a forkserver that has torch
already imported (docs/design.md, "Why the engine is built this way"), joins them with a
file-based rendezvous in a private temp dir, and returns a RunResult. A rank
that fails, hangs or outlives the time limit ends the whole run with an error naming it
(engine/runtime/rank_processes.py watches them); every process and temp file of the run is
removed on every path out, cancel included. Each rank runs engine/runtime/rank_entry.py's
``rank_entry``; under torchrun, ``pipelab run`` calls its ``run_under_torchrun`` instead.
"""

from __future__ import annotations

import os
import threading
import time

from pipelab.engine.config import NO_LIMITS, ConfigError, Limits, RunConfig
from pipelab.engine.errors import Message
from pipelab.engine.runtime.faults import planned_fault
from pipelab.engine.runtime.rank_entry import PlaySettings, RankArgs, rank_entry
from pipelab.engine.runtime.rank_processes import (
    RunFailed,
    mp_context,
    rank_group,
)

WARM_UP = RunConfig(schedule="1f1b", stages=2, microbatches=2, model="mlp", layers=2, hidden=16,
                    microbatch_size=2, steps=1)


def warm_up(nice: int = 0, cancel: threading.Event | None = None) -> None:
    """Start the forkserver and do one tiny run, so that torch is imported and every code path
    a run takes is warm before a student's first Run (cold: 3-10 s on 2 shared cores; warm:
    under a second). A server calls this in the background when it starts, and sets
    ``cancel`` if it stops first."""
    if cancel is not None and cancel.is_set():
        return
    try:
        run(WARM_UP, nice=nice, cancel=cancel)
    # Only an optimization: the student's own run will start what is missing. A process that
    # exits while it warms (a short test session, a server stopped at once) tears multiprocessing
    # down under it: its forkserver's socket gone (OSError), its modules unloaded (ImportError).
    except (RunFailed, RuntimeError, OSError, ImportError):
        pass


def run(config: RunConfig, limits: Limits = NO_LIMITS, on_progress=None, cancel: threading.Event | None = None,
        model=None, nice: int = 0):
    """Run ``config`` on fresh rank processes; returns a RunResult or raises RunFailed/ConfigError.

    ``on_progress(fraction, text)`` is called as ranks finish actions (read from the status
    board every 0.1 s); setting ``cancel`` stops
    the run. ``model=UserModel(layers, data, loss)`` (pipelab.engine.model.parts) runs your own
    nn.Sequential instead of the built-in gpt/mlp. ``nice`` lowers the ranks' CPU priority
    (the app passes 5 so its own requests are served first on shared cores; the
    device clock is thread CPU time, which priority does not change).
    A test injects a failing rank through engine/runtime/faults.py (PIPELAB_TEST_FAULT).
    """
    from pipelab.engine.config import SEQUENTIAL
    from pipelab.engine.results.result import build_result
    if config.runtime == "torch":  # torch's own runtime on the same layers: every caller (pages, paired runs) gets it
        return _run_on_torch(config, limits, on_progress, cancel, model, nice)
    if model is not None:
        config = config.with_(model=SEQUENTIAL, layers=len(model.layers))
    schedule = config.check_values(limits)  # ConfigError before any process starts
    with rank_group(config.layout.world, config.device) as group:  # every rank stopped, its folder removed on leaving
        # Held until the ranks are done: a play's semaphores are unlinked once nothing refers to
        # them, and a rank unpickles its arguments after start_ranks returns.
        plays = [play_settings(config, schedule, group.folder)]
        start_ranks(group, plays, model, nice)
        payload = group.wait(config, on_progress, cancel)
        return build_result(config, schedule, payload, wall_seconds=time.monotonic() - group.started,
                            placement=group.placement)


def play_settings(config: RunConfig, schedule, folder: str) -> PlaySettings:
    """What the ranks need to play ``schedule``. CPU ranks on this host, and ranks sharing a
    GPU, message through shared memory in ``folder`` (engine/runtime/transport.py); one
    counting semaphore per channel says how many messages have arrived. Only a rank knows its
    device (pipelab.engine.device.choose_device), so a cuda run gets them too; ranks with a GPU
    each leave them unused for NCCL."""
    from pipelab.engine.runtime.comm import channels
    shared_memory = None
    if config.transport == "auto":
        # Every replica's pipeline has the same channels, between its own processes (RankLayout).
        layout = config.layout
        shared_memory = (folder, {(layout.process(k, src), layout.process(k, dst)): mp_context().Semaphore(0)
                                  for k in range(layout.replicas) for src, dst in channels(schedule)})
    return PlaySettings(config, schedule, shared_memory)


def start_ranks(group, plays: list[PlaySettings], model=None, nice: int = 0) -> None:
    """Start every rank of ``group`` (rank_processes.rank_group) on ``plays``: one schedule, or
    several whose steps take turns (engine/runtime/alternating.py). They meet through a file in
    the group's folder. The caller keeps ``plays`` alive until the ranks are done (their
    semaphores are unlinked once nothing refers to them). The one place a test's fault enters a
    launch: PIPELAB_TEST_FAULT, read here (engine/runtime/faults.py) and acted on by each rank."""
    world, fault = plays[0].config.layout.world, planned_fault()
    init_method = f"file://{os.path.join(group.folder, 'rendezvous')}"
    for rank in range(world):
        group.start(rank_entry, f"pipelab-rank{rank}",
                    RankArgs(tuple(plays), rank, world, init_method, group.events, group.board, os.getpid(),
                             fault, model, nice, group.folder))


def _run_on_torch(config: RunConfig, limits: Limits, on_progress, cancel, model, nice: int):
    from pipelab.engine.torch_bridge.launch import run_torch
    # Both hook into our executor's rank body, which torch's runtime replaces.
    if planned_fault() is not None or model is not None:
        raise ConfigError(Message.plain("--runtime torch runs neither an injected fault nor a user's model"))
    return run_torch(config, limits, on_progress=on_progress, cancel=cancel, nice=nice)
