"""Runs on a Ray cluster: with PIPELAB_RAY_ADDRESS set, the server's JobRunner (app/runner/jobs.py)
sends each job (one run, or one side-by-side comparison) to a Ray cluster as a task that asks for
p CPUs, p the run's ranks, so Ray places it on a node with p free cores and never puts two runs on
the same cores. The task makes the same engine call the in-process runner makes (jobs.run_job), on
its node, with its own cancel Event, and returns the result to the server, which stores it as it
stores any run.

Why Ray (docs/hosting.md, "A class on several machines"): it schedules by free CPUs per node,
which is exactly what keeps a run's measurement clean; Celery and RQ hand tasks to whichever worker
is free with no notion of cores, and Dask's resources are per worker process, not per node.

Progress and cancel cross the cluster through one small actor, the board, pinned to the head node
(it holds no CPU): the task reports its latest progress line a few times a second and learns in the
same call whether the student pressed Cancel; the server reads the line for the page and marks the
cancel. A node lost mid-run ends that run with its own message; other runs go on.

Only this module imports ray, and only app/runner/runs.py imports this module, when the variable is
set: a server without it never loads Ray.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from typing import Any

from pipelab.app.runner.jobs import FAILED, JobEnded, ended, run_job
from pipelab.engine.errors import Message
from pipelab.engine.runtime.paired import SideBySideOutcome, SideBySideRequest
from pipelab.engine.runtime.planned_runs import PlannedRequest

ADDRESS_ENV = "PIPELAB_RAY_ADDRESS"
NAMESPACE = "pipelab"
BOARD_NAME = "pipelab-board"
HEAD_NODE = "node:__internal_head__"  # a resource only the head node has
REPORT_EVERY_S = 0.3  # how often a running task tells the board its progress (and hears of a cancel)
POLL_EVERY_S = 0.3  # how often the server reads it
RETRY_CONNECT_S = 10.0  # a server whose cluster did not answer asks again this often
CONNECT_WAIT_S = 45.0  # a job submitted while the server connects waits this long (Ray's client gives up after 30 s)


def address() -> str | None:
    """The cluster's address (``ray://head:10001``, ``head:6379`` or ``auto``), or None."""
    return os.environ.get(ADDRESS_ENV, "").strip() or None


_shared: Cluster | None = None
_shared_lock = threading.Lock()


def shared() -> Cluster | None:
    """The server's one Cluster, connecting in the background from the first call (app/serve.py
    makes it at start, so the log says at once where runs go); None without PIPELAB_RAY_ADDRESS."""
    global _shared
    where = address()
    if where is None:
        return None
    with _shared_lock:
        if _shared is None:
            _shared = Cluster(where).start()
        return _shared


def ranks_of(config) -> int:
    """The cores a job needs on one node: its processes, d x p with data parallelism
    (RunConfig.layout), the most of a comparison's settings."""
    if isinstance(config, (SideBySideRequest, PlannedRequest)):
        return max(c.layout.world for c in config.configs)
    return config.layout.world


class Board:
    """The latest progress line of every job on the cluster, and the jobs asked to stop."""

    def __init__(self):
        self._progress: dict[str, tuple[float, str]] = {}
        self._cancelled: set[str] = set()

    def report(self, job_id: str, fraction: float, text: str) -> bool:
        """A task's progress; True when its job was cancelled."""
        self._progress[job_id] = (fraction, text)
        return job_id in self._cancelled

    def cancelled(self, job_id: str) -> bool:
        return job_id in self._cancelled

    def read(self, job_id: str) -> tuple[float, str] | None:
        return self._progress.get(job_id)

    def cancel(self, job_id: str) -> None:
        self._cancelled.add(job_id)

    def forget(self, job_id: str) -> None:
        self._progress.pop(job_id, None)
        self._cancelled.discard(job_id)


def run_on_node(job_id: str, config, limits, board) -> tuple:
    """The Ray task: the job's engine call on this node. Returns ("done", result) with the node
    recorded in each result, or ("ended", state, error) as the in-process runner would say it."""
    import ray
    cancel = threading.Event()
    latest = [0.0, "starting processes"]
    finished = threading.Event()

    def progress(fraction: float, text: str) -> None:
        latest[:] = [fraction, text]

    def pump() -> None:  # progress out, cancel in, a few times a second
        while not finished.wait(REPORT_EVERY_S):
            try:
                if ray.get(board.report.remote(job_id, *latest)):
                    cancel.set()
            except Exception:  # the board is gone only with the head node: the server hears of it itself
                pass

    if ray.get(board.cancelled.remote(job_id)):  # cancelled while it waited for cores
        cancel.set()
    reporter = threading.Thread(target=pump, name=f"pipelab-report-{job_id}", daemon=True)
    reporter.start()
    try:
        outcome = ("done", _with_node(run_job(config, limits, progress, cancel)))
    except Exception as err:
        outcome = ("ended", *ended(err))
    finally:
        finished.set()
        reporter.join()
    return outcome


def _with_node(result):
    """``result`` with the node that ran it and that node's cores (as Ray counts them)."""
    import ray
    node_id = ray.get_runtime_context().get_node_id()
    cores = next((int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n["NodeID"] == node_id), None)
    node = f"{socket.gethostname()} (Ray node {node_id[:8]})"

    def one(run):
        return dataclasses.replace(run, metrics=dataclasses.replace(run.metrics, node=node, node_cores=cores))
    if isinstance(result, SideBySideOutcome):
        return dataclasses.replace(result, rounds=tuple(tuple(one(r) for r in results) for results in result.rounds))
    return one(result)


class Cluster:
    """The server's side: connects to the cluster, and runs a job there as JobRunner's executor.

    Connecting happens in a thread of its own (``start``): an address nobody answers at takes
    Ray's client 30 s to give up, which neither the server's start nor a page may wait for. It
    tries again every RETRY_CONNECT_S until the cluster answers, so a cluster started after the
    server is found without a restart."""

    def __init__(self, where: str, log=print):
        self.address = where
        self._log = log
        self._connected = threading.Event()
        self._tried = threading.Event()  # the first try has ended (either way)
        self._problem: Message | None = None
        self._board: Any = None
        self._task: Any = None
        self._thread: threading.Thread | None = None

    # ---- connecting ----------------------------------------------------------------------
    def start(self) -> Cluster:
        if self._thread is None:
            self._thread = threading.Thread(target=self._keep_trying, name="pipelab-ray-connect", daemon=True)
            self._thread.start()
        return self

    def _keep_trying(self) -> None:
        said = None
        while not self._connect():
            if str(self._problem) != said:  # say it once, not every RETRY_CONNECT_S
                said = str(self._problem)
                self._log(f"pipelab: {self._problem}; trying again every {RETRY_CONNECT_S:.0f} s", flush=True)
            self._tried.set()
            time.sleep(RETRY_CONNECT_S)
        self._tried.set()
        self._log(self.describe(), flush=True)

    def _connect(self) -> bool:
        import ray
        try:
            ray.init(address=self.address, namespace=NAMESPACE, log_to_driver=False, ignore_reinit_error=True,
                     logging_level="ERROR")
            self._board = ray.remote(Board).options(
                name=BOARD_NAME, get_if_exists=True, num_cpus=0, resources={HEAD_NODE: 0.001},
                max_concurrency=64).remote()
            ray.get(self._board.read.remote(""), timeout=30)
            self._task = ray.remote(run_on_node)
        except Exception as err:
            self._problem = Message.of("no_cluster", address=self.address, reason=_one_line(err))
            try:
                ray.shutdown()
            except Exception:
                pass
            return False
        self._problem = None
        self._connected.set()
        return True

    def problem(self, wait_s: float = 0.0) -> Message | None:
        """Why runs cannot start (None: they can, or the first try has not ended yet), waiting
        up to ``wait_s`` for the first try."""
        self._tried.wait(wait_s)
        return None if self._connected.is_set() else self._problem

    def wait_connected(self, timeout: float | None) -> Message | None:
        """None once connected; else, once the first try has ended (at most ``timeout`` seconds;
        None: no limit), the reason: a job waits for the server's first try, never for a cluster
        that already did not answer."""
        self._tried.wait(timeout)
        if self._connected.is_set():
            return None
        return self._problem or Message.of("no_cluster", address=self.address, reason=f"no answer in {timeout:.0f} s")

    def connected(self) -> bool:
        """Wait until the cluster answers (however long that takes); True."""
        return self._connected.wait()

    def nodes(self) -> list[int]:
        """The CPUs of each live node."""
        import ray
        return [int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")]

    def runs_at_once(self) -> int:
        """How many runs the server lets the cluster hold at once: one per two of its CPUs
        (a lesson's smallest run has two ranks); Ray holds back any that find no free cores."""
        return max(1, sum(self.nodes()) // 2)

    def describe(self) -> str:
        """One line for the server's log: where runs go."""
        nodes = self.nodes()
        return (f"pipelab: runs go to the Ray cluster at {self.address}: {len(nodes)} node(s), "
                f"{sum(nodes)} CPUs ({' + '.join(map(str, nodes))})")

    # ---- running (JobRunner's executor) ------------------------------------------------------
    def __call__(self, job_id: str, config, limits, progress, cancel: threading.Event, run_fn=None):
        import ray
        from ray.exceptions import RayError, RayTaskError
        if (problem := self.wait_connected(CONNECT_WAIT_S)) is not None:
            raise JobEnded(FAILED, problem)
        p, largest = ranks_of(config), max(self.nodes(), default=0)
        if p > largest:
            raise JobEnded(FAILED, Message.of("cluster_too_small", ranks=p, cores=largest))
        ref = self._task.options(num_cpus=p, max_retries=0, name=f"pipelab {job_id}").remote(
            job_id, config, limits, self._board)
        told = False
        try:
            while not ray.wait([ref], timeout=POLL_EVERY_S)[0]:
                if cancel.is_set() and not told:
                    self._board.cancel.remote(job_id)
                    told = True
                line = ray.get(self._board.read.remote(job_id), timeout=10)
                if line is not None:
                    progress(*line)
            outcome = ray.get(ref)
        except RayTaskError as err:  # the task's own code raised past run_on_node: say what
            cause = err.cause
            raise JobEnded(FAILED, Message.of("crashed", kind=type(cause).__name__, detail=_one_line(cause))) from err
        except RayError as err:  # its node or worker died, or the head is gone
            raise JobEnded(FAILED, Message.of("node_lost", reason=type(err).__name__)) from err
        finally:
            try:
                self._board.forget.remote(job_id)
            except Exception:
                pass
        if outcome[0] == "done":
            return outcome[1]
        raise JobEnded(outcome[1], outcome[2])


def _one_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0][:200] if lines else type(err).__name__
