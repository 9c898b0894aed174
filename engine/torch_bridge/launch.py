"""Start, watch and clean up a run on torch's runtime (``pipelab run --runtime torch``).

The ranks come from the same forkserver as our runtime's and are watched by the same ``watch``
(engine/runtime/rank_processes.py: time limit, a rank that dies or hangs, cancel) through the
same status board and messages (engine/runtime/rank_entry.py); its ``stop_all`` ends them and
the run's temp folder goes on every path out. What differs is
the rank body (engine/torch_bridge/rank.py) and that the schedule travels as the CSV torch reads.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from pipelab.engine.config import NO_LIMITS, Limits, RunConfig
from pipelab.engine.runtime.rank_entry import RankMessage, RankMessageKind, report_and_exit
from pipelab.engine.runtime.rank_processes import rank_group
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.torch_bridge.csv_format import export_csv


def check_torch_config(config: RunConfig, limits: Limits = NO_LIMITS) -> Schedule:
    """The schedule, or a one-line ConfigError for what torch's runtime cannot run
    (engine/torch_bridge/settings.py), before any process starts."""
    return config.with_(runtime="torch").check_values(limits)


@dataclass(frozen=True)
class TorchRankArgs:
    """What a rank's process is started with (pickled to it by the forkserver)."""
    config: RunConfig
    schedule: Schedule
    csv_path: str
    rank: int
    world: int
    init_method: str
    queue: Any
    board: Any
    parent_pid: int
    run_dir: str
    nice: int = 0


def _rank_entry(args: TorchRankArgs):
    """Runs in each rank's process; reports as our runtime's ranks do (engine/runtime/rank_entry.py)."""
    import torch.distributed as dist

    from pipelab.engine.device import choose_device
    from pipelab.engine.runtime.worker import init_distributed, start_parent_watch
    from pipelab.engine.torch_bridge.rank import run_torch_rank
    start_parent_watch(args.parent_pid, args.run_dir)
    if args.nice:  # as our runtime's ranks: the web server's requests first (thread CPU time is unchanged)
        os.nice(args.nice)

    write_progress = args.board.writer(args.rank)

    def progress(step, done, total, waiting=None):
        write_progress(step, done, total)

    try:
        device = choose_device(args.config.device, args.rank, args.world)
        init_distributed(device.backend, args.init_method, args.rank, args.world, args.config.timeout_s)
        payload = run_torch_rank(args.config, args.schedule, args.csv_path, args.rank, args.world, device, progress)
        if args.rank == 0:
            args.queue.put(RankMessage(RankMessageKind.RESULT, args.rank, payload))
        dist.destroy_process_group()
        args.queue.put(RankMessage(RankMessageKind.DONE, args.rank))
    except BaseException as err:
        report_and_exit(args.queue, args.rank, err)


def run_torch(config: RunConfig, limits: Limits = NO_LIMITS, on_progress=None, cancel: threading.Event | None = None,
              nice: int = 0):
    """Run ``config`` on torch's runtime; returns a RunResult (engine/results/result.py) whose config
    says ``runtime="torch"``, or raises RunFailed / Cancelled / ConfigError, like
    pipelab.engine.runtime.launch.run (which hands a config with ``runtime="torch"`` here)."""
    from pipelab.engine.results.result import build_result
    config = config.with_(runtime="torch")
    schedule = check_torch_config(config, limits)
    world = schedule.num_ranks
    with rank_group(world, config.device) as group:  # every rank stopped and its folder removed on leaving
        tmp = group.folder
        csv_path = os.path.join(tmp, "schedule.csv")
        with open(csv_path, "w", newline="") as f:
            f.write(export_csv(schedule))
        init_method = f"file://{os.path.join(tmp, 'rendezvous')}"
        for rank in range(world):
            group.start(_rank_entry, f"pipelab-torch-rank{rank}",
                        TorchRankArgs(config, schedule, csv_path, rank, world, init_method, group.events, group.board,
                                      os.getpid(), tmp, nice))
        payload = group.wait(config, on_progress, cancel)
        return build_result(config, schedule, payload, wall_seconds=time.monotonic() - group.started,
                            placement=group.placement)
