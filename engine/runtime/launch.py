"""Start the ranks of a run, watch them, gather the result, and leave nothing behind.

From Python, ``run(config)`` starts one process per rank from a forkserver that has torch
already imported (docs/design.md, "Why the engine is built this way"), joins them with a
file-based rendezvous in a private temp dir, and returns a RunResult. A rank
that fails, hangs or outlives the time limit ends the whole run with an error naming it;
every process and temp file of the run is removed on every path out, cancel included.
Under torchrun, ``pipelab run`` joins torch's own rendezvous instead (env://).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import shutil
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pipelab.engine.config import NO_LIMITS, ConfigError, Limits, RunConfig
from pipelab.engine.errors import Message
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.runtime.status import StatusBoard

STALL_SECONDS = float(os.environ.get("PIPELAB_STALL_SECONDS", 8.0))
"""With every rank alive but no action finished anywhere for this long, the run is hung.
Every action of a run within the server's limits takes well under a second here."""


class RunFailed(RuntimeError):
    """A run did not finish; the message names the rank and why, in one line (a coded
    Message, engine/errors.py, so a page can say it in its own language)."""

    @classmethod
    def of(cls, code: str, /, **values) -> "RunFailed":
        return cls(Message.of(code, **values))


class Cancelled(RunFailed):
    pass


_context = None  # multiprocessing keeps one forkserver per process; we configure it once


def _mp_context():
    global _context
    if _context is None:
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(["torch", "torch.distributed", "torch._dynamo", "pipelab.engine.runtime.worker"])
    return _context


WARM_UP = RunConfig(schedule="1f1b", stages=2, microbatches=2, model="mlp", layers=2, hidden=16,
                    microbatch_size=2, steps=1)


def warm_up(nice: int = 0, cancel: threading.Event | None = None) -> None:
    """Start the forkserver and do one tiny run, so that torch is imported and every code path
    a run takes is warm before a student's first Run (cold: 3-10 s on 2 shared cores; warm:
    under a second). A server calls this in the background when it starts, and sets
    ``cancel`` if it stops first."""
    try:
        run(WARM_UP, nice=nice, cancel=cancel)
    except (RunFailed, RuntimeError):
        pass  # only an optimization: the student's own run will start what is missing


@dataclass(frozen=True)
class RankArgs:
    """What a rank's process is started with (pickled to it by the forkserver)."""
    config: RunConfig
    schedule: Schedule
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
    shared_memory: tuple[str, dict] | None
    """(directory, semaphore per channel): CPU messages through shared memory (engine/runtime/transport.py)."""
    run_dir: str


class RankMessageKind(StrEnum):
    """What a RankMessage says. A str enum, as pipelab.engine.actions.ActionKind:
    ``RankMessageKind.DONE == "done"``."""
    RESULT = "result"
    """Rank 0's gathered result; the body is its RankPayload."""
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


def _rank_entry(args: RankArgs):
    """Runs in each rank's process."""
    import torch.distributed as dist

    from pipelab.engine.runtime.worker import init_distributed, run_rank, start_parent_watch
    rank, queue, board, fault = args.rank, args.queue, args.board, args.fault
    start_parent_watch(args.parent_pid, args.run_dir)
    if args.nice:
        os.nice(args.nice)
    config = args.config

    def progress(step, done, total, waiting=None):
        if waiting is None:
            board.progress(rank, step, done, total)
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
        result = run_rank(config, args.schedule, rank, args.world, device, progress, hooks if fault else None,
                          args.user_model, args.shared_memory)
        if rank == 0:
            queue.put(RankMessage(RankMessageKind.RESULT, rank, result))
        dist.destroy_process_group()
        queue.put(RankMessage(RankMessageKind.DONE, rank))
    except BaseException as err:  # report, then exit non-zero; the parent ends the run
        line = f"{type(err).__name__}: {err}".splitlines()[0]
        queue.put(RankMessage(RankMessageKind.ERROR, rank, line, traceback.format_exc()))
        queue.close()
        queue.join_thread()  # the queue's feeder thread must deliver it before we exit
        os._exit(REPORTED_ERROR_EXIT)


def run(config: RunConfig, limits: Limits = NO_LIMITS, on_progress=None, cancel: threading.Event | None = None,
        fault: tuple | None = None, model=None, nice: int = 0):
    """Run ``config`` on fresh rank processes; returns a RunResult or raises RunFailed/ConfigError.

    ``on_progress(fraction, text)`` is called as ranks finish actions (read from the status
    board every 0.1 s); setting ``cancel`` stops
    the run. ``model=UserModel(layers, data, loss)`` (pipelab.engine.model.parts) runs your own
    nn.Sequential instead of the built-in gpt/mlp. ``nice`` lowers the ranks' CPU priority
    (the app passes 5 so its own requests are served first on shared cores; the
    device clock is thread CPU time, which priority does not change).
    ``fault=("crash"|"hang", rank, step)`` injects a failure (for tests).
    """
    from pipelab.engine.runtime.comm import channels
    from pipelab.engine.config import SEQUENTIAL
    from pipelab.engine.results.result import build_result
    if config.runtime == "torch":  # torch's own runtime on the same layers: every caller (pages, paired runs) gets it
        return _run_on_torch(config, limits, on_progress, cancel, fault, model, nice)
    if model is not None:
        config = config.with_(model=SEQUENTIAL, layers=len(model.layers))
    schedule = config.check_values(limits)  # ConfigError before any process starts
    world = schedule.num_ranks
    ctx = _mp_context()
    remove_orphaned_run_folders()
    tmp = tempfile.mkdtemp(prefix=f"{RUN_FOLDER_PREFIX}{os.getpid()}-")
    events = ctx.Queue()  # result, errors and exits; progress goes through the board
    board = StatusBoard(ctx, world)
    procs = []
    started = time.monotonic()
    try:
        init_method = f"file://{os.path.join(tmp, 'rendezvous')}"
        # CPU ranks on this host, and ranks sharing a GPU, message through shared memory in
        # ``tmp`` (engine/runtime/transport.py); one counting semaphore per channel says how many
        # messages have arrived. Only a rank knows its device (pipelab.engine.device.choose_device),
        # so a cuda run gets them too; ranks with a GPU each leave them unused for NCCL.
        shared_memory = None
        if config.transport == "auto":
            shared_memory = (tmp, {channel: ctx.Semaphore(0) for channel in channels(schedule)})
        for rank in range(world):
            args = RankArgs(config, schedule, rank, world, init_method, events, board, os.getpid(), fault, model,
                            nice, shared_memory, tmp)
            p = ctx.Process(target=_rank_entry, name=f"pipelab-rank{rank}", daemon=True, args=(args,))
            p.start()
            procs.append(p)
        payload = _watch(procs, events, board, config, world, started, on_progress, cancel)
        return build_result(config, schedule, payload, wall_seconds=time.monotonic() - started)
    finally:
        _stop_all(procs)
        events.close()
        events.join_thread()
        shutil.rmtree(tmp, ignore_errors=True)


RUN_FOLDER_PREFIX = "pipelab-run-"
"""A run's temp folder is RUN_FOLDER_PREFIX + the launching process's pid + "-" + a random
part: the pid says whose it is once that process is gone."""


def _run_on_torch(config: RunConfig, limits: Limits, on_progress, cancel, fault, model, nice: int):
    from pipelab.engine.torch_bridge.launch import run_torch
    # Both hook into our executor's rank body, which torch's runtime replaces.
    if fault is not None or model is not None:
        raise ConfigError(Message.plain("--runtime torch runs neither an injected fault nor a user's model"))
    return run_torch(config, limits, on_progress=on_progress, cancel=cancel, nice=nice)


def remove_orphaned_run_folders(folder: str | None = None) -> list[str]:
    """Remove the run folders (under ``folder``, default tempfile's) whose launching process
    no longer exists; returns their names. A run removes its own folder when it ends, fails
    or is cancelled (a server cancels its runs as it stops: app/runner/runs.py), and its ranks
    remove it when the launcher is killed; only a launcher and its ranks killed together (a
    server's whole process group sent SIGKILL mid-run, say) leave one, and the next run on
    the host clears it."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        pid = name.removeprefix(RUN_FOLDER_PREFIX).split("-", 1)[0]
        if not name.startswith(RUN_FOLDER_PREFIX) or not pid.isdigit() or process_alive(int(pid)):
            continue
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        removed.append(name)
    return removed


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours to judge
        return True
    return True


def _watch(procs, events, board, config, world, started, on_progress, cancel):
    seen = {r: (-1, 0) for r in range(world)}  # (step, done) last read from the board
    past_setup = False
    done, payload = set(), None
    last_change = time.monotonic()
    while True:
        if cancel is not None and cancel.is_set():
            raise Cancelled.of("cancelled")
        now = time.monotonic()
        if now - started > config.timeout_s:
            laggards = [r for r in range(world) if r not in done]
            raise RunFailed.of("time_limit_reached", seconds=f"{config.timeout_s:g}", ranks=tuple(laggards))
        try:
            msg = events.get(timeout=0.1)
        except queue_module.Empty:
            msg = None
        if msg is not None:
            if msg.kind == RankMessageKind.ERROR:
                raise _first_cause(procs, events, {msg.rank: msg.body})
            elif msg.kind == RankMessageKind.RESULT:
                payload = msg.body
            elif msg.kind == RankMessageKind.DONE:
                done.add(msg.rank)
                last_change = now
            if payload is not None and len(done) == world:
                return payload
        rows = {r: board.read(r) for r in range(world)}
        moved = [r for r, (step, d, _, _) in rows.items() if (step, d) != seen[r]]
        for r in moved:
            seen[r] = rows[r][:2]
        if moved:
            past_setup, last_change = True, now
            if on_progress is not None:
                step_total = config.steps
                fraction = sum(min(1.0, (max(s, 0) + d / t) / step_total) for s, d, t, _ in rows.values()) / world
                on_progress(fraction, f"step {max(0, min(s for s, _, _, _ in rows.values())) + 1} of {step_total}")
        if msg is not None:
            continue
        if any(p.exitcode not in (None, 0) for r, p in enumerate(procs) if r not in done):
            raise _first_cause(procs, events, {})
        # The stall clock starts when the first rank is past set-up (a slow start is the
        # time limit's business): it then either finished an action or waits on another.
        if not past_setup and any(step >= 0 or w is not None for step, _, _, w in rows.values()):
            past_setup, last_change = True, now
        if past_setup and now - last_change > STALL_SECONDS:
            # The hung rank is the one not blocked waiting on another rank.
            suspects = [r for r in range(world) if r not in done and rows[r][3] is None]
            if not suspects:
                waits = tuple(Message.of("rank_waits", rank=r, on=w) for r, (_, _, _, w) in rows.items() if w)
                raise RunFailed.of("all_waiting", seconds=f"{STALL_SECONDS:g}", waiting=waits)
            raise RunFailed.of("hung", ranks=tuple(suspects), seconds=f"{STALL_SECONDS:g}")


REPORTED_ERROR_EXIT = 1  # _rank_entry's exit code after it has put a RankMessageKind.ERROR message


def _first_cause(procs, events, errors: dict[int, str]) -> RunFailed:
    """When one rank dies, its peers fail too (their connections close). Collect for a
    moment, then blame the root: a rank that died without reporting (crash, kill), else one
    whose error is not a lost connection, else the first to report."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            msg = events.get(timeout=0.1)
        except queue_module.Empty:
            continue
        if msg.kind == RankMessageKind.ERROR:
            errors.setdefault(msg.rank, msg.body)
    for rank, p in enumerate(procs):
        if p.exitcode not in (None, 0, REPORTED_ERROR_EXIT) and rank not in errors:
            if p.exitcode < 0:
                return RunFailed.of("rank_killed", rank=rank, signal=-p.exitcode)
            return RunFailed.of("rank_exited", rank=rank, code=p.exitcode)
    lost = ("connection", "closed", "peer", "broken pipe", "reset")
    for rank, line in errors.items():
        if not any(word in line.lower() for word in lost):
            return RunFailed.of("rank_failed", rank=rank, detail=line)
    if errors:
        rank, line = next(iter(errors.items()))
        return RunFailed.of("rank_failed", rank=rank, detail=line)
    rank = next(r for r, p in enumerate(procs) if p.exitcode not in (None, 0))
    return RunFailed.of("rank_exited", rank=rank, code=procs[rank].exitcode)


def _stop_all(procs) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 3
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(1)
        p.close() if p.exitcode is not None else None


def run_under_torchrun(config: RunConfig):
    """Join torchrun's rendezvous (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR in the env).
    Returns the RunResult on rank 0, None on the others."""
    import torch.distributed as dist

    from pipelab.engine.results.result import build_result
    from pipelab.engine.runtime.worker import init_distributed, run_rank
    schedule = config.check_values()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if world != schedule.num_ranks:
        raise ConfigError.of("torchrun_world", world=world, ranks=schedule.num_ranks)
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
    return build_result(config, schedule, payload, wall_seconds=time.monotonic() - started)
