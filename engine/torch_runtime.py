"""Start, watch and clean up a run on torch's runtime (``python -m engine run --runtime torch``).

The ranks come from engine/launch.py's forkserver and are watched by its ``_watch`` (time
limit, a rank that dies or hangs, cancel) through the same status board and messages; its
``_stop_all`` ends them and the run's temp folder goes on every path out. What differs is
the rank body (engine/torch_rank.py) and that the schedule travels as the CSV torch reads.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

from engine import launch
from engine.config import ConfigError, RunConfig
from engine.schedules.base import Schedule
from engine.torch_csv import export_csv

UNSUPPORTED = (
    # field, its default, the flag, why torch's runtime cannot take it here
    ("overlap_steps", False, "--overlap-steps", "torch's step() ends with a flush"),
    ("clip_grad_norm", None, "--clip-grad-norm", "the step check is our executor's"),
    ("recompute", False, "--recompute", "torch's stages keep their activations"),
    ("device", "cpu", "--device", "this runtime runs on CPU (gloo) here"),
)


def check_torch_config(config: RunConfig) -> Schedule:
    """The schedule, or a one-line ConfigError for what torch's runtime cannot run."""
    for name, default, flag, why in UNSUPPORTED:
        if getattr(config, name) != default:
            raise ConfigError(f"--runtime torch does not take {flag}: {why}")
    schedule = config.check_values()
    export_csv(schedule)  # an update inside the step has no torch form: one line, before any process
    return schedule


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


def _rank_entry(args: TorchRankArgs):
    """Runs in each rank's process; reports as engine.launch's ranks do."""
    import torch.distributed as dist

    from engine.device import choose_device
    from engine.launch import REPORTED_ERROR_EXIT, RankMessage, RankMessageKind
    from engine.torch_rank import run_torch_rank
    from engine.worker import init_distributed, start_parent_watch
    start_parent_watch(args.parent_pid, args.run_dir)

    def progress(step, done, total, waiting=None):
        args.board.progress(args.rank, step, done, total)

    try:
        device = choose_device(args.config.device, args.rank, args.world)
        init_distributed(device.backend, args.init_method, args.rank, args.world, args.config.timeout_s)
        payload = run_torch_rank(args.config, args.schedule, args.csv_path, args.rank, args.world, device, progress)
        if args.rank == 0:
            args.queue.put(RankMessage(RankMessageKind.RESULT, args.rank, payload))
        dist.destroy_process_group()
        args.queue.put(RankMessage(RankMessageKind.DONE, args.rank))
    except BaseException as err:  # report, then exit non-zero; the parent ends the run
        line = f"{type(err).__name__}: {err}".splitlines()[0]
        args.queue.put(RankMessage(RankMessageKind.ERROR, args.rank, line, traceback.format_exc()))
        args.queue.close()
        args.queue.join_thread()
        os._exit(REPORTED_ERROR_EXIT)


def run_torch(config: RunConfig, on_progress=None, cancel: threading.Event | None = None):
    """Run ``config`` on torch's runtime; returns a RunResult (engine/result.py) or raises
    RunFailed / ConfigError, like engine.launch.run."""
    from engine.result import build_result
    from engine.status import StatusBoard
    schedule = check_torch_config(config)
    world = schedule.num_ranks
    ctx = launch._mp_context()
    launch.remove_orphaned_run_folders()
    tmp = tempfile.mkdtemp(prefix=f"{launch.RUN_FOLDER_PREFIX}{os.getpid()}-")
    events = ctx.Queue()
    board = StatusBoard(ctx, world)
    procs = []
    started = time.monotonic()
    try:
        csv_path = os.path.join(tmp, "schedule.csv")
        with open(csv_path, "w", newline="") as f:
            f.write(export_csv(schedule))
        init_method = f"file://{os.path.join(tmp, 'rendezvous')}"
        for rank in range(world):
            args = TorchRankArgs(config, schedule, csv_path, rank, world, init_method, events, board, os.getpid(), tmp)
            p = ctx.Process(target=_rank_entry, name=f"pipelab-torch-rank{rank}", daemon=True, args=(args,))
            p.start()
            procs.append(p)
        payload = launch._watch(procs, events, board, config, world, started, on_progress, cancel)
        return build_result(config, schedule, payload, wall_seconds=time.monotonic() - started)
    finally:
        launch._stop_all(procs)
        events.close()
        events.join_thread()
        shutil.rmtree(tmp, ignore_errors=True)
