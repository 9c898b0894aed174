"""What runs in each rank's process: the entry the launcher's forkserver starts
(``rank_entry``, engine/runtime/launch.py starts it), the arguments it is pickled with, the
messages it sends back, and the entry under torchrun (``run_under_torchrun``).

The parent's side (watching these processes, ending them) is engine/runtime/rank_processes.py.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pipelab.engine.config import ConfigError, RunConfig
from pipelab.engine.runtime.status import StatusBoard
from pipelab.engine.schedules.base import Schedule


@dataclass(frozen=True)
class PlaySettings:
    """One schedule a launch plays: its settings, its built schedule, and where its messages
    go on one host."""
    config: RunConfig
    schedule: Schedule
    shared_memory: tuple[str, dict] | None
    """(directory, semaphore per channel): CPU messages through shared memory (engine/runtime/transport.py)."""


@dataclass(frozen=True)
class RankArgs:
    """What a rank's process is started with (pickled to it by the forkserver)."""
    plays: tuple[PlaySettings, ...]
    """One schedule, or several whose steps take turns (engine/runtime/alternating.py)."""
    rank: int
    world: int
    init_method: str
    """torch.distributed's rendezvous: a file in the run's temp dir."""
    queue: Any
    """The launcher's multiprocessing queue: RankMessages back to it."""
    board: StatusBoard
    parent_pid: int
    fault: tuple | None
    """("crash"|"hang", rank, step): a failure to inject, for tests."""
    user_model: Any
    """pipelab.engine.model.parts.UserModel, or None for the built-in models."""
    nice: int
    run_dir: str


class RankMessageKind(StrEnum):
    """What a RankMessage says. A str enum, as pipelab.engine.actions.ActionKind:
    ``RankMessageKind.DONE == "done"``."""
    RESULT = "result"
    """Rank 0's gathered result; the body is its RankPayload, one per play for several."""
    DONE = "done"
    """A rank finished and left the process group; no body."""
    ERROR = "error"
    """A rank failed; the body is the error's first line."""


@dataclass(frozen=True)
class RankMessage:
    """One message on the launcher's queue, from one rank (see RankMessageKind)."""
    kind: RankMessageKind
    rank: int
    body: Any = None
    traceback: str | None = None
    """With RankMessageKind.ERROR: the full traceback, for a debugger; the run's error shows only the body."""


REPORTED_ERROR_EXIT = 1  # a rank's exit code after it has put a RankMessageKind.ERROR message


def report_and_exit(queue, rank: int, err: BaseException) -> None:
    """Put the error's first line on the launcher's queue, then exit non-zero: the parent
    ends the run and names this rank (both runtimes' ranks end this way)."""
    line = f"{type(err).__name__}: {err}".splitlines()[0]
    queue.put(RankMessage(RankMessageKind.ERROR, rank, line, traceback.format_exc()))
    queue.close()
    queue.join_thread()  # the queue's feeder thread must deliver it before we exit
    os._exit(REPORTED_ERROR_EXIT)


def rank_entry(args: RankArgs):
    """Runs in each rank's process (the forkserver unpickles it by this module's name)."""
    import torch.distributed as dist

    from pipelab.engine.runtime.worker import init_distributed, run_rank, start_parent_watch
    rank, queue, board, fault = args.rank, args.queue, args.board, args.fault
    start_parent_watch(args.parent_pid, args.run_dir)
    if args.nice:
        os.nice(args.nice)
    config = args.plays[0].config  # device and time limit: the same for every play of a launch

    write_progress = board.writer(rank)

    def progress(step, done, total, waiting=None):
        if waiting is None:
            write_progress(step, done, total)
        else:
            board.waiting(rank, waiting)

    def hooks(r, step):  # fault injection for tests: ("crash"|"hang", rank, step)
        if fault and fault[1] == r and fault[2] == step:
            if fault[0] == "crash":
                os._exit(17)
            time.sleep(3600)

    try:
        from pipelab.engine.device import choose_device
        device = choose_device(config.device, rank, args.world)  # one host: local rank = rank
        init_distributed(device.backend, args.init_method, rank, args.world, config.timeout_s)
        if len(args.plays) == 1:
            play = args.plays[0]
            result = run_rank(config, play.schedule, rank, args.world, device, progress, hooks if fault else None,
                              args.user_model, play.shared_memory)
        else:
            from pipelab.engine.runtime.turns import run_rank_in_turns
            result = run_rank_in_turns(args.plays, rank, args.world, device, progress, hooks if fault else None)
        if rank == 0:
            queue.put(RankMessage(RankMessageKind.RESULT, rank, result))
        dist.destroy_process_group()
        queue.put(RankMessage(RankMessageKind.DONE, rank))
    except BaseException as err:
        report_and_exit(queue, rank, err)


def run_under_torchrun(config: RunConfig):
    """Join torchrun's rendezvous (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR in the env).
    Returns the RunResult on rank 0, None on the others. Each process pins itself by its
    LOCAL_RANK where its host has the cores (engine/runtime/placement.py; PIPELAB_PIN=0: never)."""
    import torch.distributed as dist

    from pipelab.engine.results.result import build_result
    from pipelab.engine.runtime.placement import pin_local_rank
    schedule = config.check_values()
    placement = pin_local_rank(device=config.device)  # first: every thread torch starts later keeps its core
    from pipelab.engine.runtime.worker import init_distributed, run_rank
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if world != config.layout.world:
        raise ConfigError.of("torchrun_world", world=world, ranks=config.layout.world)
    from pipelab.engine.device import choose_device
    device = choose_device(config.device, local_rank, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    started = time.monotonic()
    init_distributed(device.backend, "env://", rank, world, config.timeout_s)
    try:
        payload = run_rank(config, schedule, rank, world, device)
    finally:
        dist.destroy_process_group()
    if rank != 0:
        return None
    return build_result(config, schedule, payload, wall_seconds=time.monotonic() - started, placement=placement)
