"""Runs on a Ray cluster (app/runner/cluster.py, issue 39): a two-node cluster on this machine
(ray.cluster_utils.Cluster: a head holding no CPUs, two nodes of 4 CPUs each), a lesson run and a
comparison pressed in a real browser against a server pointed at it, a cancel, a node killed
mid-run, and a server whose cluster does not answer. Skipped with the reason where Ray cannot
start. The cores are logical here (two nodes of 4 on a 2-core host): these tests check that
everything a page does works through the cluster, not its speed (bench/LOAD.md measures that)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import pytest

from bench.cluster_load import local_cluster
from pipelab.lessons import LESSONS
from tests.conftest import ROOT, _live_parents, remove_orphaned_semaphores, shared_memory_names, still_alive

pytestmark = pytest.mark.slow  # every test here starts processes (a Ray cluster, ranks, a server, a browser)

NODE_CPUS = 4
RAY_DEFAULT_FOLDER = "/tmp/ray"
# About 15 s here: long enough to cancel or kill mid-run.
LONG = dict(steps=20, microbatches=32, hidden=512, layers=8, microbatch_size=64)
TINY = dict(schedule="1f1b", stages=2, microbatches=4, model="mlp", layers=2, hidden=16, microbatch_size=2, steps=2)


@contextlib.contextmanager
def cluster_or_skip(nodes: int, node_cpus: int):
    """local_cluster, or the test skipped with the reason where Ray is missing or cannot start here."""
    pytest.importorskip("ray", reason="ray is not installed (requirements.txt)")
    with contextlib.ExitStack() as stack:
        try:
            made = stack.enter_context(local_cluster(nodes=nodes, node_cpus=node_cpus))
        except Exception as err:  # noqa: BLE001 - any reason Ray cannot start here is a skip, said
            pytest.skip(f"a local Ray cluster cannot start here: {type(err).__name__}: {err}")
        yield made


def ray_sessions() -> set[str]:
    """The session folders in Ray's default place, /tmp/ray."""
    return set(os.listdir(RAY_DEFAULT_FOLDER)) if os.path.isdir(RAY_DEFAULT_FOLDER) else set()


def test_a_local_cluster_leaves_no_folder_behind():
    # Ray keeps a session's folder (logs, sockets) in /tmp/ray for good: every run of this file
    # left one there until local_cluster gave each cluster a temp folder of its own. And Ray ends
    # its workers with their forkservers, so a worker that launched runs left its multiprocessing
    # folder until the next run on the host swept it.
    before = ray_sessions()
    with cluster_or_skip(nodes=1, node_cpus=1) as made:
        import ray
        session = made.head_node.get_session_dir_path()
        assert os.path.isdir(session) and not session.startswith(RAY_DEFAULT_FOLDER + os.sep)

        def worker_multiprocessing_folder() -> str:  # defined here: Ray ships it by value, not by module
            """In a Ray worker: its launcher's multiprocessing folder, made and marked as a run makes it."""
            from pipelab.engine.runtime.rank_processes import FORKSERVER_FOLDER_ENV, mp_context
            mp_context()
            return os.environ[FORKSERVER_FOLDER_ENV]
        ray.init(address=made.address, log_to_driver=False)
        worker_folder = ray.get(ray.remote(worker_multiprocessing_folder).remote(), timeout=120)
        assert os.path.isdir(worker_folder)
    assert not os.path.exists(session) and ray_sessions() <= before
    assert not os.path.exists(worker_folder)


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip(nodes=2, node_cpus=NODE_CPUS) as made:
        yield made


@pytest.fixture(scope="module")
def on_cluster(cluster):
    """A Cluster executor (what the server makes from PIPELAB_RAY_ADDRESS), connected."""
    from pipelab.app.runner.cluster import Cluster
    where = Cluster(cluster.address, log=lambda *a, **k: None).start()
    assert where.wait_connected(60) is None
    return where


def config(**changes):
    from pipelab.engine.config import RunConfig
    return RunConfig(**{**TINY, **changes})


def ranks_on(node) -> set[int]:
    """Rank processes running under ``node``: children of a forkserver below its raylet."""
    parents = _live_parents()
    below, frontier = set(), {node.all_processes["raylet"][0].process.pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - below
        below |= frontier
    servers = {pid for pid in below if b"forkserver" in _cmdline(pid)}
    return {pid for pid in below if parents.get(pid) in servers}


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def wait_running(runner, job_id: str, timeout: float = 60.0) -> str:
    """The job's progress text once its ranks report a step (so it really runs on a node)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = runner.status(job_id)
        if "step" in status.text or status.state != "running":
            return status.text
        time.sleep(0.1)
    raise AssertionError(f"{job_id} never reported a step: {runner.status(job_id)}")


def test_a_run_lands_on_a_node_with_its_cores_recorded(on_cluster):
    from pipelab.app.runner.jobs import DONE, JobRunner
    runner = JobRunner(execute=on_cluster, max_concurrent=on_cluster.runs_at_once())
    assert runner.max_concurrent == NODE_CPUS  # 8 CPUs, a run of two ranks each
    job_id = runner.submit(config())
    assert runner.wait([job_id], 120)
    status = runner.status(job_id)
    assert status.state == DONE, status.error
    assert "Ray node" in status.result.metrics.node and status.result.metrics.node_cores == NODE_CPUS


def test_a_run_larger_than_any_node_fails_at_once_saying_so(on_cluster):
    from pipelab.app.runner.jobs import FAILED, JobRunner
    runner = JobRunner(execute=on_cluster)
    job_id = runner.submit(config(stages=6, microbatches=6, layers=6))
    assert runner.wait([job_id], 30)
    status = runner.status(job_id)
    assert (status.state, status.error.code) == (FAILED, "cluster_too_small")
    assert str(status.error) == ("this run has 6 ranks and needs 6 free cores on one machine, "
                                 "but the cluster's largest has 4")


def test_cancel_stops_the_ranks_on_their_node(cluster, on_cluster):
    from pipelab.app.runner.jobs import CANCELLED, JobRunner
    runner = JobRunner(execute=on_cluster)
    job_id = runner.submit(config(**LONG))
    assert "step" in wait_running(runner, job_id)
    ranks = set().union(*(ranks_on(node) for node in cluster.workers))
    assert len(ranks) == 2  # the run's two ranks, on one node
    runner.cancel(job_id)
    assert runner.wait([job_id], 30)
    assert (runner.status(job_id).state, runner.status(job_id).error.code) == (CANCELLED, "cancelled")
    assert still_alive(ranks, timeout=10) == set()


def test_a_node_lost_mid_run_ends_its_run_alone(cluster, on_cluster):
    # Two runs of 4 ranks: one on each node. The node of the first dies; the first run ends
    # saying so, its ranks go with it, the other run finishes, and a new run still runs.
    from pipelab.app.runner.jobs import DONE, FAILED, JobRunner
    shm_before = shared_memory_names()
    runner = JobRunner(execute=on_cluster, max_concurrent=2)
    doomed = runner.submit(config(**{**LONG, "stages": 4}))
    other = runner.submit(config(stages=4, microbatches=4, layers=4, steps=3))
    wait_running(runner, doomed)
    node = next(n for n in cluster.workers if ranks_on(n))
    ranks = ranks_on(node)
    cluster.remove_node(node, allow_graceful=False)
    cluster.workers.remove(node)
    assert runner.wait([doomed, other], 120)
    lost = runner.status(doomed)
    assert (lost.state, lost.error.code) == (FAILED, "node_lost"), lost.error
    assert str(lost.error).startswith("the cluster machine running this run was lost mid-run (")
    assert runner.status(other).state == DONE, runner.status(other).error
    assert still_alive(ranks, timeout=15) == set()
    # The lost node's run left its channel semaphores (4 ranks: 9) in this host's /dev/shm.
    assert len(remove_orphaned_semaphores(shm_before)) <= 9
    again = runner.submit(config())
    assert runner.wait([again], 120) and runner.status(again).state == DONE


NO_CLUSTER = {"PIPELAB_RAY_ADDRESS": "ray://127.0.0.1:1",  # nothing listens on port 1
              # Ray's client tries 3 times, 5 s then up to 30 s each: 1 s each here
              "RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S": "1", "RAY_CLIENT_MAX_CONNECTION_TIMEOUT_S": "1"}
NO_CLUSTER_SCRIPT = """
from pipelab.app.runner import cluster
from pipelab.app.runner.jobs import JobRunner
from pipelab.engine.config import RunConfig
where = cluster.shared()
print("problem:", where.problem(wait_s=30).code, flush=True)
runner = JobRunner(execute=where)
job = runner.submit(RunConfig(stages=2, microbatches=2, model="mlp", layers=2, hidden=16))
runner.wait([job], 120)
print("job:", runner.status(job).state, runner.status(job).error.code, flush=True)
"""


def test_no_cluster_answering_is_said_at_start_and_nothing_runs_here():
    done = subprocess.run([sys.executable, "-c", NO_CLUSTER_SCRIPT], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), **NO_CLUSTER})
    lines = done.stdout.splitlines()
    assert lines[0].startswith("pipelab: runs go to the Ray cluster at ray://127.0.0.1:1 (PIPELAB_RAY_ADDRESS), "
                               "but it does not answer: "), done.stdout + done.stderr
    assert lines[1:] == ["problem: no_cluster", "job: failed no_cluster"], done.stdout + done.stderr


@pytest.fixture(scope="module")
def browser():
    from bench.app_latency import CHROMIUM, chromium
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    with chromium(nice=10) as launched:
        yield launched


def test_a_lesson_run_and_a_comparison_from_a_browser_land_on_the_cluster(cluster, browser, tmp_path):
    # The server as bin/serve starts it, pointed at the cluster: a lesson's Run and lesson 5's
    # comparison (its settings side by side, round after round) each come back drawn, and every
    # stored run says which node ran it.
    from bench.app_latency import streamlit_server
    from bench.browser_steps import CHART
    from pipelab.app.runner.storage import RunStore
    env = {"PIPELAB_RAY_ADDRESS": cluster.address, "PIPELAB_DATA_DIR": str(tmp_path)}
    with streamlit_server(env=env) as url:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        for path in (f"/{LESSONS[0].slug}", "/interleaved"):  # lesson 1; lesson 5 runs its comparison
            page.goto(url + path, wait_until="commit")
            run = page.get_by_role("button", name="Run", exact=True)
            run.wait_for(timeout=120_000)
            page.wait_for_timeout(1000)  # the page's first script run settles
            run.click()
            page.wait_for_selector(CHART, timeout=150_000)
        page.close()
    store = RunStore(tmp_path)
    stored = [store.load(run.id) for run in store.all_runs()]
    assert len(stored) >= 3  # lesson 1's run, lesson 5's settings side by side
    assert all("Ray node" in r.metrics.node and r.metrics.node_cores == NODE_CPUS for r in stored)


def test_beside_run_a_page_says_the_cluster_does_not_answer(browser):
    from bench.app_latency import streamlit_server
    from bench.browser_steps import IDLE
    with streamlit_server(env=NO_CLUSTER) as url:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{url}/{LESSONS[0].slug}")
        page.wait_for_selector(IDLE, timeout=60_000)
        page.get_by_role("button", name="Run", exact=True).click()
        alert = page.get_by_text("but it does not answer")
        alert.wait_for(timeout=30_000)
        assert "runs go to the Ray cluster at ray://127.0.0.1:1" in alert.inner_text()
        page.close()
