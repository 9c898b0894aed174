"""A server-wide job runner: every browser session's runs go through one FIFO queue.

No Streamlit import here (the app wraps one runner in ``st.cache_resource``; tests use it
directly). Each job runs ``pipelab.engine.runtime.launch.run`` in its own worker thread with its own cancel
Event, so a page script never blocks on a run and never starts processes itself. A config
with ``runtime="torch"`` runs on torch's runtime (launch.run hands it to
engine/torch_bridge/launch.py, which has the same cancel, progress and cleanup).

Why at most K runs at once (env PIPELAB_MAX_CONCURRENT_RUNS, default 1): a run already
puts p processes on a 2-core host; two runs side by side would share those cores too and
blur even the device clock (thread CPU time grows under contention: docs/measuring.md). Queueing
keeps each run's measurements clean and a class of students waits a few seconds each.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from pipelab.engine.actions import ScheduleError
from pipelab.engine.config import Limits, RunConfig
from pipelab.engine.errors import Message, message_of
from pipelab.engine.runtime.paired import SideBySideRequest, profiled, run_request
from pipelab.engine.runtime.planned_runs import PlannedRequest, run_planned

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
FINISHED = (DONE, FAILED, CANCELLED)


@dataclass(frozen=True)
class JobStatus:
    state: str
    """queued, running, done, failed, cancelled (or "unknown" for an expired id)."""
    position: int
    """1-based place in the queue while queued, else 0."""
    fraction: float
    text: str
    result: Any = None
    """The RunResult when done."""
    error: Message | None = None
    """One line when failed or cancelled: a str, and coded (engine/errors.py) so a page says
    it in its language."""


@dataclass
class _Job:
    id: str
    config: RunConfig | SideBySideRequest
    cancel: threading.Event
    state: str = QUEUED
    fraction: float = 0.0
    text: str = "queued"
    result: Any = None
    error: Message | None = None
    cached: bool = False
    tag: Any = None
    """What the submitter attached (the app: run id, browser, lesson), handed to ``on_done``."""


RANK_NICE = int(os.environ.get("PIPELAB_RANK_NICE", "5"))


class JobEnded(Exception):
    """A job that ended elsewhere (on a cluster: app/runner/cluster.py) without a result:
    its state (failed, cancelled) and its one-line coded error, as ``ended`` gave them there."""

    def __init__(self, state: str, error: Message):
        super().__init__(error)
        self.state, self.error = state, error


def run_job(config: RunConfig | SideBySideRequest | PlannedRequest, limits: Limits, progress: Callable,
            cancel: threading.Event, run_fn: Callable | None = None):
    """One job's engine call, the same in this process and on a cluster's node: a RunConfig
    (profiled first where its schedule is built from costs) or a side-by-side request.
    Returns the RunResult or SideBySideOutcome; raises what the engine raises."""
    from pipelab.engine.runtime.launch import run
    run_fn_or_run = run_fn or run
    # nice=5: the ranks yield the cores to this web server (about 3:1), so pages and
    # /_stcore/health stay responsive while students' runs compute.
    if isinstance(config, PlannedRequest):  # a section's question to the planner: it profiles, plans, then runs
        return run_planned(config, limits, progress, cancel, RANK_NICE)
    if isinstance(config, SideBySideRequest):  # settings a claim compares, round after round
        return run_request(config, limits, progress, cancel, RANK_NICE, run_fn)
    # a schedule built from costs (zb-1p, say) first profiles them, as the command line does
    config, = profiled((config,), limits, cancel, RANK_NICE, run_fn_or_run)
    return run_fn_or_run(config, limits, on_progress=progress, cancel=cancel, nice=RANK_NICE)


def ended(err: BaseException) -> tuple[str, Message]:
    """A job's state and one-line coded error for what its engine call raised."""
    from pipelab.engine.runtime.rank_processes import Cancelled, RunFailed
    if isinstance(err, JobEnded):
        return err.state, err.error
    if isinstance(err, Cancelled):
        return CANCELLED, Message.of("cancelled")
    if isinstance(err, (RunFailed, ScheduleError)):  # ConfigError is a ScheduleError
        return FAILED, message_of(err)
    return FAILED, Message.of("crashed", kind=type(err).__name__, detail=message_of(err))


class JobRunner:
    """FIFO queue, at most ``max_concurrent`` runs at once, bounded memory.

    ``keep_jobs`` finished job records are kept for status queries. Every job runs: a second
    Run of the same settings is a second measurement, never the first one replayed.
    """

    def __init__(self, max_concurrent: int | None = None, keep_jobs: int = 64,
                 run_fn: Callable | None = None, limits: Limits | None = None, on_done: Callable | None = None,
                 execute: Callable | None = None):
        if max_concurrent is None:
            max_concurrent = int(os.environ.get("PIPELAB_MAX_CONCURRENT_RUNS", "1"))
        self.max_concurrent = max(1, max_concurrent)
        self.keep_jobs = keep_jobs
        self._run_fn = run_fn
        self._on_done = on_done
        """Called as on_done(config, result, tag) for every run that finishes done, in the
        thread that finished it (the app stores the run): whether or not its page is still open."""
        self._limits = limits
        self._execute = execute or (lambda job_id, *args: run_job(*args))
        """Runs one job's engine call and returns its result: ``run_job`` here, in a worker
        thread, by default; app/runner/cluster.py's sends it to a Ray cluster instead."""
        self._lock = threading.Lock()
        self._finished_one = threading.Condition(self._lock)  # notified whenever a job finishes
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._queue: list[str] = []
        self._running: set[str] = set()
        self._ids = itertools.count(1)
        self._stopping = False  # set by stop(): nothing new starts

    # ---- public API --------------------------------------------------------------------
    def submit(self, config: RunConfig | SideBySideRequest, tag: Any = None) -> str:
        """Queue a run (or settings side by side: pipelab.engine.runtime.paired); returns its id."""
        with self._lock:
            job = _Job(id=f"job-{next(self._ids)}", config=config, cancel=threading.Event(), tag=tag)
            self._jobs[job.id] = job
            self._queue.append(job.id)
            self._start_ready()
            self._prune()
        return job.id

    def status(self, job_id: str) -> JobStatus:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return JobStatus("unknown", 0, 0.0, "this run has expired; run it again", error=Message.of("expired"))
            position = self._queue.index(job_id) + 1 if job.state == QUEUED else 0
            text = f"queued: position {position}" if job.state == QUEUED else job.text
            return JobStatus(job.state, position, job.fraction, text, job.result, job.error)

    def cancel(self, job_id: str) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and job.state not in FINISHED:
                self._cancel(job)

    def _cancel(self, job: _Job) -> None:
        """With the lock held: a queued job ends now; a running one when its run sees the Event."""
        job.cancel.set()
        if job.state == QUEUED:
            self._queue.remove(job.id)
            job.state, job.error, job.text = CANCELLED, Message.of("cancelled"), "cancelled"
            self._finished_one.notify_all()

    def wait(self, job_ids, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until every one of ``job_ids`` has finished (or
        expired); True if they have. A page's poll waits here instead of sleeping, so it
        shows a result the moment the run ends, not at its next tick."""
        deadline = time.monotonic() + timeout
        with self._finished_one:
            while not all(j not in self._jobs or self._jobs[j].state in FINISHED for j in job_ids):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._finished_one.wait(left)
            return True

    def stop(self, timeout: float = 10.0) -> bool:
        """Cancel every queued and running job and wait up to ``timeout`` seconds for the
        running ones to end; True if they all did. A cancelled run's launcher stops its ranks
        and removes its temp folder, which a server that simply exited mid-run left behind
        (its worker threads are daemons: they die with it). The app calls this as the
        server exits (app/runner/runs.py)."""
        deadline = time.monotonic() + timeout
        with self._finished_one:
            self._stopping = True
            for job_id in [*self._queue, *self._running]:
                self._cancel(self._jobs[job_id])
            while self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._finished_one.wait(left)
            return True

    def set_max_concurrent(self, runs: int) -> None:
        """Let up to ``runs`` run at once from now on (a cluster's size once it answers)."""
        with self._lock:
            self.max_concurrent = max(1, runs)
            self._start_ready()

    def counts(self) -> tuple[int, int]:
        """(running, queued) right now."""
        with self._lock:
            return len(self._running), len(self._queue)

    # ---- internals (called with the lock held) -----------------------------------------
    def _start_ready(self) -> None:
        while self._queue and len(self._running) < self.max_concurrent and not self._stopping:
            job = self._jobs[self._queue.pop(0)]
            job.state, job.text = RUNNING, "running: starting processes"
            self._running.add(job.id)
            threading.Thread(target=self._work, args=(job,), name=f"pipelab-{job.id}", daemon=True).start()

    def _work(self, job: _Job) -> None:
        limits = self._limits or Limits.from_env()

        def progress(fraction: float, text: str) -> None:
            job.fraction, job.text = max(0.0, min(1.0, fraction)), f"running: {text}"

        state, result, error = DONE, None, None
        try:
            result = self._execute(job.id, job.config, limits, progress, job.cancel, self._run_fn)
        except Exception as err:  # never let a worker thread die silently
            state, error = ended(err)
        if state == DONE and not job.cancel.is_set():
            self._finished(job, result)  # before the page can see it done: its link then works
        with self._lock:
            if job.cancel.is_set() and state == DONE:
                state, result, error = CANCELLED, None, Message.of("cancelled")
            job.state, job.result, job.error = state, result, error
            job.fraction, job.text = (1.0, "done") if state == DONE else (job.fraction, state)
            self._running.discard(job.id)
            self._finished_one.notify_all()
            self._start_ready()
            self._prune()

    def _finished(self, job: _Job, result) -> None:
        if self._on_done is None:
            return
        try:
            self._on_done(job.config, result, job.tag)
        except Exception as err:  # a failing hook must not take the runner's thread down
            print(f"pipelab: could not keep a finished run: {type(err).__name__}: {message_of(err)}", flush=True)

    def _prune(self) -> None:
        finished = [jid for jid, j in self._jobs.items() if j.state in FINISHED]
        for jid in finished[: max(0, len(finished) - self.keep_jobs)]:
            del self._jobs[jid]
