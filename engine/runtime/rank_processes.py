"""A run's rank processes, from the launcher's side: the forkserver they start from, watching
them (time limit, a rank that dies or hangs, cancel), ending them, and the temp folders runs
leave. Both runtimes' launchers use it (engine/runtime/launch.py, engine/torch_bridge/launch.py).

What runs inside each rank is engine/runtime/rank_entry.py.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import multiprocessing.util as mp_util
import os
import queue as queue_module
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pipelab.engine.errors import Message
from pipelab.engine.results.records import Placement
from pipelab.engine.runtime.placement import expects_gpu, launch_placement, run_pinned
from pipelab.engine.runtime.rank_entry import REPORTED_ERROR_EXIT, RankMessageKind

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

FORKSERVER_FOLDER_ENV = "PIPELAB_FORKSERVER_FOLDER"
"""The launcher's multiprocessing folder, for its forkserver to remove as it ends
(engine/runtime/forkserver_exit.py)."""

MULTIPROCESSING_FOLDER_PREFIX = "pymp-"  # multiprocessing.util.get_temp_dir's
LAUNCHER_MARK = "pipelab-launcher-"
"""A file in a launcher's multiprocessing folder (pymp-*), named by its pid. A launcher killed
together with its forkserver (a Ray worker: Ray kills a worker's children with it) leaves the
folder behind, and the next run on the host removes it (remove_orphaned_run_folders); a folder
without the mark is another program's, and stays."""


def mp_context():
    """The forkserver every run's ranks start from, torch already imported in it and its heap
    frozen (engine/runtime/frozen_heap.py, imported last). It starts with this process's
    environment, which names the folder its socket goes in (multiprocessing's per-process
    temp folder): the forkserver removes it as it ends, also after the launcher was killed."""
    global _context
    if _context is None:
        folder = mp_util.get_temp_dir()
        with open(os.path.join(folder, f"{LAUNCHER_MARK}{os.getpid()}"), "w"):
            pass
        os.environ[FORKSERVER_FOLDER_ENV] = folder
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(["torch", "torch.distributed", "torch._dynamo",
                                         "pipelab.engine.runtime.worker", "pipelab.engine.runtime.forkserver_exit",
                                         "pipelab.engine.runtime.frozen_heap"])
    return _context


RUN_FOLDER_PREFIX = "pipelab-run-"
"""A run's temp folder is RUN_FOLDER_PREFIX + the launching process's pid + "-" + a random
part: the pid says whose it is once that process is gone."""


def remove_orphaned_run_folders(folder: str | None = None) -> list[str]:
    """Remove the run folders (under ``folder``, default tempfile's) whose launching process
    no longer exists, and the multiprocessing folders such a launcher marked (LAUNCHER_MARK);
    returns their names. A run removes its own folder when it ends, fails or is cancelled (a
    server cancels its runs as it stops: app/runner/runs.py), and its ranks remove it when the
    launcher is killed; only a launcher and its ranks killed together (a server's whole process
    group sent SIGKILL mid-run, say) leave one, and the next run on the host clears it."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(folder, name)
        if name.startswith(RUN_FOLDER_PREFIX):
            pid = name.removeprefix(RUN_FOLDER_PREFIX).split("-", 1)[0]
        elif name.startswith(MULTIPROCESSING_FOLDER_PREFIX):
            pid = _launcher_of(path)
        else:
            continue
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return removed


def _launcher_of(multiprocessing_folder: str) -> str:
    """The pid a launcher marked its multiprocessing folder with (LAUNCHER_MARK); "" if unmarked."""
    try:
        names = os.listdir(multiprocessing_folder)
    except OSError:
        return ""
    return next((n.removeprefix(LAUNCHER_MARK) for n in names if n.startswith(LAUNCHER_MARK)), "")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours to judge
        return True
    return True


def watch(procs, events, board, config, world, started, on_progress, cancel, step_text=None):
    """Wait for the ranks' result; raise RunFailed naming the rank that failed, hung or
    outlived the time limit, or Cancelled. Progress comes from the status board, said as
    "step k of K" or as ``step_text(k, K)``."""
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
                raise first_cause(procs, events, {msg.rank: msg.body})
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
                step = max(0, min(s for s, _, _, _ in rows.values())) + 1
                on_progress(fraction, step_text(step, step_total) if step_text else f"step {step} of {step_total}")
        if msg is not None:
            continue
        if any(p.exitcode not in (None, 0) for r, p in enumerate(procs) if r not in done):
            raise first_cause(procs, events, {})
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


def first_cause(procs, events, errors: dict[int, str]) -> RunFailed:
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


def stop_all(procs) -> None:
    """End every rank still running (terminate, then kill) and release its handle."""
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


@dataclass
class RankGroup:
    """One run's rank processes and what they share: the temp folder (rendezvous file,
    shared-memory channels), the queue ranks report on and the status board."""

    world: int
    folder: str
    events: Any
    board: Any
    placement: Placement
    """Where its ranks run: each on a core of its own, or where the OS puts them (engine/runtime/placement.py)."""
    started: float = field(default_factory=time.monotonic)
    procs: list = field(default_factory=list)

    def start(self, target, name: str, args) -> None:
        """Start the next rank's process (ranks start in order): ``target(args)``, from the
        forkserver, pinned first where the placement pins."""
        rank = len(self.procs)
        process = mp_context().Process(target=run_pinned, name=name, daemon=True,
                                       args=(target, self.placement.cpus_of(rank), self.placement.reference_cpus,
                                             args, self.placement.polls))
        process.start()
        self.procs.append(process)

    def wait(self, config, on_progress, cancel, step_text=None):
        """Rank 0's gathered payload, once every rank is done (``watch``)."""
        return watch(self.procs, self.events, self.board, config, self.world, self.started, on_progress, cancel,
                     step_text)


@contextlib.contextmanager
def rank_group(world: int, device: str = "cpu") -> Iterator[RankGroup]:
    """The processes of one run, and the promise both runtimes keep: on leaving, also after a
    failure or a cancel, every rank is stopped, the queue closed and the folder removed. The
    cores it pins its ranks to are its own until then (engine/runtime/placement.py); ranks that
    run on GPUs (RunConfig.device, ``expects_gpu``) are not pinned."""
    from pipelab.engine.runtime.status import StatusBoard
    ctx = mp_context()
    remove_orphaned_run_folders()
    with launch_placement(world, gpu=expects_gpu(device, world)) as placement:
        folder = tempfile.mkdtemp(prefix=f"{RUN_FOLDER_PREFIX}{os.getpid()}-")
        group = None
        try:  # the queue and the board make named semaphores, which can fail (a full /dev/shm): the folder goes too
            group = RankGroup(world, folder, ctx.Queue(), StatusBoard(ctx, world), placement)
            yield group
        finally:
            if group is not None:
                stop_all(group.procs)
                group.events.close()
                group.events.join_thread()
            shutil.rmtree(folder, ignore_errors=True)
