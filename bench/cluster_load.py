"""A class on a Ray cluster: every student's run arrives, none is lost, the server stays responsive.

    PYTHONPATH=. .venv/bin/python -m bench.cluster_load                  # 100 students, two nodes
    PYTHONPATH=. .venv/bin/python -m bench.cluster_load --students 20 --out bench/out/cluster_load.md

Starts a Ray cluster on this machine (ray.cluster_utils.Cluster: a head holding no CPUs and
``--nodes`` nodes of ``--node-cpus`` CPUs), a PipeLab server pointed at it
(PIPELAB_RAY_ADDRESS, as docs/hosting.md sets it up), and ``--students`` students who all press
Run at one moment: each run is a lesson's default at the student's own hidden width (so no two
are alike), submitted through the very runner the server builds for a cluster
(app/runner/cluster.py behind app/runner/jobs.py JobRunner), and read back as a page reads it.
Browsers are left out: a hundred chromium pages do not fit on two cores beside the runs
(tests/test_ray_cluster.py presses Run through the server in chromium). Meanwhile the server's
/_stcore/health is polled every 0.2 s.

Then the throughput model: a node of c CPUs runs floor(c / p) runs of p ranks at once, so a
cluster finishes sum over nodes of floor(c / p) x 60 / t runs a minute, t the seconds one run
takes with a core per rank. t is measured here at p = 2 (one run alone on the cluster, a core
per rank on this 2-core host); the table applies it to other cluster sizes, on paper. The
cores here are logical (two nodes of 4 on a 2-core host): the load figures check that nothing
is lost and the server keeps answering, not the cluster's speed.

Writes bench/LOAD-cluster.md (``--out``) and bench/out/cluster_load.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

OBJECT_STORE = 80 * 2**20  # the smallest Ray takes; results are a few hundred KiB
RAY_TMPDIR = "RAY_TMPDIR"  # where Ray puts its folder (a session's logs and sockets) instead of /tmp
WIDTHS = (64, 96, 128, 160, 192)
HEALTH_TARGET_S = 1.0


def student_configs(count: int) -> list:
    """One run per student: a lesson's default at the student's own hidden width."""
    from pipelab.app.runner.runs import knobs_to_config
    from pipelab.lessons import LESSONS as CATALOG
    # One run each, as the load test; two lessons with the same defaults (a copied folder) are
    # one setting, so every student's run stays its own.
    defaults = list(dict.fromkeys(lesson.defaults for lesson in CATALOG if not lesson.claim_compares))
    configs = []
    for k in range(count):
        knobs = defaults[k % len(defaults)]
        width = WIDTHS[(k // len(defaults)) % len(WIDTHS)] + 8 * (k // (len(defaults) * len(WIDTHS)))
        configs.append(knobs_to_config(knobs).with_(hidden=width, check=False))
    return configs


def start_server(address: str, port: int):
    env = dict(os.environ, PIPELAB_RAY_ADDRESS=address, PYTHONPATH=ROOT)
    return subprocess.Popen([os.path.join(ROOT, ".venv", "bin", "python"), "-m", "pipelab.app.serve",
                             "--server.port", str(port), "--server.headless", "true"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def health(url: str) -> float | None:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=15) as reply:
            reply.read()
        return time.monotonic() - started
    except OSError:
        return None


def poll_health(url: str, stop: threading.Event, seconds: list) -> None:
    while not stop.is_set():
        seconds.append(health(url))
        stop.wait(0.2)


@contextlib.contextmanager
def local_cluster(nodes: int, node_cpus: int) -> Iterator:
    """A Ray cluster on this machine (ray.cluster_utils.Cluster): a head holding no CPUs and
    ``nodes`` nodes of ``node_cpus`` CPUs each (``.workers``). Its session folder (logs, sockets)
    goes in a temp folder of its own, removed with the cluster: Ray's default, /tmp/ray, keeps
    every session's folder for good (each test run left one there). RAY_TMPDIR, not the head's
    temp_dir: the driver's pointer to the current cluster (ray_current_cluster) goes there too,
    and its default folder need not exist."""
    import ray
    from ray.cluster_utils import Cluster as RayCluster

    from pipelab.engine.runtime.rank_processes import remove_orphaned_run_folders
    folder = tempfile.mkdtemp(prefix="pipelab-ray-")
    was = os.environ.get(RAY_TMPDIR)
    os.environ[RAY_TMPDIR] = folder  # read by this process and the cluster's processes it starts
    made = None
    try:
        made = RayCluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": False, "object_store_memory": OBJECT_STORE})
        made.workers = [made.add_node(num_cpus=node_cpus, object_store_memory=OBJECT_STORE) for _ in range(nodes)]
        made.wait_for_nodes(60)
        yield made
    finally:
        ray.shutdown()  # this process's driver first: the head cannot go while a driver holds it
        if made is not None:
            made.shutdown()
        # Ray ends its workers with their forkservers, which leaves each worker's marked
        # multiprocessing folder (engine/runtime/rank_processes.py LAUNCHER_MARK) behind.
        remove_orphaned_run_folders()
        if was is None:
            os.environ.pop(RAY_TMPDIR, None)
        else:
            os.environ[RAY_TMPDIR] = was
        shutil.rmtree(folder, ignore_errors=True)


def measure(students: int, nodes: int, node_cpus: int, port: int) -> dict:
    with local_cluster(nodes, node_cpus) as made:
        return measure_on(made, students, node_cpus, port)


def measure_on(made, students: int, node_cpus: int, port: int) -> dict:
    """``measure`` on a cluster started already (local_cluster)."""
    nodes = len(made.workers)
    from pipelab.app.runner.cluster import Cluster
    from pipelab.app.runner.jobs import CANCELLED, DONE, FAILED, JobRunner
    server = None
    try:
        server = start_server(made.address, port)
        url = f"http://127.0.0.1:{port}/_stcore/health"
        deadline = time.monotonic() + 120
        while health(url) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        where = Cluster(made.address, log=lambda *a, **k: None).start()
        if where.wait_connected(60) is not None:
            raise RuntimeError("the cluster did not answer")
        arrived: dict[str, float] = {}
        results: dict[str, object] = {}

        def done(config, result, tag) -> None:  # as the server stores a finished run
            arrived[tag] = time.monotonic()
            results[tag] = result
        runner = JobRunner(on_done=done, execute=where, max_concurrent=where.runs_at_once(), keep_jobs=4 * students)
        # One run alone first: the seconds a run takes with a core per rank (the model's t).
        alone = student_configs(1)[0].with_(stages=2)
        sent = time.monotonic()
        job = runner.submit(alone, tag="alone")
        runner.wait([job], timeout=300)
        t_alone = arrived["alone"] - sent  # submit to result, as a student waits for it
        seconds: list = []
        stop = threading.Event()
        poller = threading.Thread(target=poll_health, args=(url, stop, seconds), daemon=True)
        poller.start()
        clicked = time.monotonic()
        jobs = {runner.submit(config, tag=f"student-{k}"): k for k, config in enumerate(student_configs(students))}
        runner.wait(list(jobs), timeout=3600)
        stop.set()
        poller.join()
        states = {k: runner.status(job) for job, k in jobs.items()}
        lost = [k for k, status in states.items() if status.state not in (DONE, FAILED, CANCELLED)]
        failed = sorted({str(status.error) for status in states.values() if status.state == FAILED})
        answered = [s for s in seconds if s is not None]
        nodes_used = sorted({results[tag].metrics.node for tag in results if tag != "alone"} - {None})
        run_seconds = [results[f"student-{k}"].metrics.run_seconds for k in jobs.values() if f"student-{k}" in results]
        runner.stop()
        return dict(students=students, nodes=nodes, node_cpus=node_cpus,
                    done=sum(status.state == DONE for status in states.values()),
                    failed=sum(status.state == FAILED for status in states.values()), failed_why=failed, lost=lost,
                    last_result_s=max(arrived[f"student-{k}"] for k in jobs.values()
                                      if f"student-{k}" in arrived) - clicked,
                    health_max_s=max(answered) if answered else None,
                    health_median_s=statistics.median(answered) if answered else None,
                    health_polls=len(seconds), health_unanswered=len(seconds) - len(answered),
                    nodes_used=nodes_used, runs_at_once=where.runs_at_once(), t_alone_s=t_alone,
                    run_seconds_median=statistics.median(run_seconds) if run_seconds else None)
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(timeout=30)


def throughput_rows(t_run: float, p: int = 2) -> list[dict]:
    """Runs a minute for clusters of several sizes, on paper: floor(cores / p) runs at once per node."""
    rows = []
    for nodes, cores in ((1, 2), (2, 2), (1, 16), (4, 4), (4, 16), (8, 16), (16, 16)):
        at_once = nodes * (cores // p)
        rows.append(dict(nodes=nodes, cores=cores, at_once=at_once, per_minute=at_once * 60 / t_run))
    return rows


def report(figures: dict, machine: str) -> str:
    f = figures
    met = (f["done"] == f["students"] and f["health_max_s"] is not None
           and f["health_max_s"] < HEALTH_TARGET_S and f["health_unanswered"] == 0)
    lines = ["# A class on a Ray cluster: load and throughput", "",
             f"Written by `bench/cluster_load.py` ({machine}). A Ray cluster on this machine (a head holding no "
             f"CPUs, {f['nodes']} nodes of {f['node_cpus']} CPUs), a PipeLab server pointed at it, and "
             f"{f['students']} students pressing Run at one moment, each a lesson's default at its own width, "
             "through the cluster runner the server builds (no browsers: see the module's docstring). The cores "
             "are logical: this checks that nothing is lost and the server keeps answering, not the speed.", "",
             "| figure | measured | target | verdict |", "|---|---|---|---|",
             f"| {f['students']} students, one run each, {f['nodes']}-node cluster | {f['done']}/{f['students']} "
             f"results, {f['failed']} failed, {len(f['lost'])} lost, the last {f['last_result_s']:.1f} s after the "
             f"clicks ({60 * f['done'] / f['last_result_s']:.0f} runs a minute on this host's 2 cores); runs on nodes "
             f"{', '.join(map(str, f['nodes_used']))}; health max {f['health_max_s']:.3f} s (median "
             f"{f['health_median_s']:.4f} s, {f['health_polls']} polls, {f['health_unanswered']} unanswered) | all "
             f"arrive, none lost; health < {HEALTH_TARGET_S:g} s | {'met' if met else 'not met'} |", "",
             "## Throughput, on paper", "",
             "One run alone (the first student's: p = 2, a core per rank on this host) took "
             f"t = {f['t_alone_s']:.2f} s, "
             "submit to result. A "
             "node of c CPUs holds floor(c / p) runs of p ranks at once (Ray places each run on one node with p free "
             "CPUs), so a cluster finishes sum over nodes of floor(c / p) x 60 / t runs a minute. At p = 2 and this "
             "t (a run of p = 4 does the same work on twice the ranks: half as many at once, each about as long "
             "where every rank has a core):", "",
             "| nodes | CPUs each | runs at once (p = 2) | runs a minute |", "|---|---|---|---|"]
    for row in throughput_rows(f["t_alone_s"]):
        lines.append(f"| {row['nodes']} | {row['cores']} | {row['at_once']} | {row['per_minute']:.0f} |")
    lines += ["", "A class of 300 pressing Run at once on 4 nodes of 16 CPUs (32 runs of p = 2 at once) waits about "
              f"{300 / (32 * 60 / f['t_alone_s']):.1f} minutes for the last result by this model; the model "
              "is not yet checked on a machine of 16 cores (none was at hand for it)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_load", description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--node-cpus", type=int, default=4, help="logical CPUs a node offers (a lesson's p is 4)")
    parser.add_argument("--port", type=int, default=8611)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "LOAD-cluster.md"))
    args = parser.parse_args(argv)
    if args.students < 1 or args.nodes < 1 or args.node_cpus < 1:
        parser.exit(2, f"{parser.prog}: error: --students, --nodes and --node-cpus must be >= 1\n")
    from pipelab.app.runner.cluster import ranks_of
    ranks = max(ranks_of(config) for config in student_configs(args.students))
    if args.node_cpus < ranks:  # else every run fails at once: no node holds it
        parser.exit(2, f"{parser.prog}: error: --node-cpus must be at least {ranks}, the most ranks a student's "
                       f"run starts, got {args.node_cpus}\n")
    if not 1 <= args.port <= 65535:  # the health checks ask the server at this port
        parser.exit(2, f"{parser.prog}: error: --port must be a TCP port (1-65535), got {args.port}\n")
    import platform
    figures = measure(args.students, args.nodes, args.node_cpus, args.port)
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "out", "cluster_load.json"), "w") as f:
        json.dump(figures, f, indent=1)
    machine = (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
               f"{os.cpu_count()} cores")
    with open(args.out, "w") as f:
        f.write(report(figures, machine))
    print(report(figures, machine))
    return 0 if figures["done"] == figures["students"] else 1


if __name__ == "__main__":
    sys.exit(main())
