"""A closed tab cancels its queued runs: nobody is left to read them, and a class's queue is shared.

Each page session's jobs are noted when its buttons queue them (app/runner/runs.py start). A
watcher thread asks, every few seconds, whether each session is still connected; once one has
been gone for ``grace_s`` (a reload or a short network drop reconnects within it), its jobs
still queued are cancelled through the runner's own ``cancel``. A job already running is left
to finish: the runner's on_done stores it, and My runs lists it.

No Streamlit import (tests drive it with a fake ``is_alive``); the app asks Streamlit's runtime.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable

from pipelab.app.runner.jobs import FINISHED, QUEUED, JobRunner

GRACE_ENV = "PIPELAB_CLOSED_TAB_GRACE_S"
GRACE_S = float(os.environ.get(GRACE_ENV, "20"))
"""How long a session may be disconnected before its queued runs are cancelled: Streamlit's
browser side reconnects a dropped socket within seconds, to the same session."""
CHECK_EVERY_S = 5.0


class ClosedTabs:
    """Which session queued which jobs, and the sweep that cancels a gone session's queued ones."""

    def __init__(self, runner: JobRunner, is_alive: Callable[[str], bool], grace_s: float = GRACE_S,
                 clock: Callable[[], float] = time.monotonic):
        self._runner = runner
        self._is_alive = is_alive
        self._grace_s = grace_s
        self._clock = clock
        self._jobs: dict[str, list[str]] = {}
        self._gone_since: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, session_id: str, job_ids: Iterable[str]) -> None:
        with self._lock:
            self._jobs.setdefault(session_id, []).extend(job_ids)

    def sessions(self) -> list[str]:
        """The sessions with jobs not yet finished (as of the last sweep)."""
        with self._lock:
            return list(self._jobs)

    def sweep(self) -> list[str]:
        """One pass: forget finished jobs; cancel the queued jobs of sessions gone longer than
        the grace. Returns the ids it cancelled."""
        with self._lock:
            watched = {session: list(jobs) for session, jobs in self._jobs.items()}
        cancelled, now = [], self._clock()
        for session, jobs in watched.items():
            states = {job: self._runner.status(job).state for job in jobs}
            waiting = [job for job, state in states.items() if state not in FINISHED and state != "unknown"]
            if self._is_alive(session):
                self._gone_since.pop(session, None)
                gone = False
            else:
                gone = now - self._gone_since.setdefault(session, now) >= self._grace_s
            if gone:
                for job in waiting:
                    if states[job] == QUEUED:  # a running one finishes and is kept
                        self._runner.cancel(job)
                        cancelled.append(job)
                waiting = []
            with self._lock:
                keep = waiting + [j for j in self._jobs.get(session, []) if j not in jobs]  # + queued meanwhile
                if keep:
                    self._jobs[session] = keep
                else:
                    self._jobs.pop(session, None)
                    self._gone_since.pop(session, None)
        return cancelled

    def start(self, every_s: float = CHECK_EVERY_S) -> None:
        """Sweep every ``every_s`` seconds on a daemon thread, until ``stop``."""
        def loop() -> None:
            while not self._stop.wait(every_s):
                self.sweep()
        self._thread = threading.Thread(target=loop, name="pipelab-closed-tabs", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


__all__ = ["CHECK_EVERY_S", "GRACE_ENV", "GRACE_S", "ClosedTabs"]
