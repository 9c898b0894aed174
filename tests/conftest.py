import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Runs the tests finish are kept (app/runner/storage.py): in a folder of this test session, not the
# repository's runs/ (servers the tests start inherit it).
_OWN_DATA_DIR = None
if "PIPELAB_DATA_DIR" not in os.environ:
    import tempfile
    _OWN_DATA_DIR = os.environ["PIPELAB_DATA_DIR"] = tempfile.mkdtemp(prefix="pipelab-test-data-")


def pytest_sessionfinish(session, exitstatus):
    if _OWN_DATA_DIR:
        import shutil
        shutil.rmtree(_OWN_DATA_DIR, ignore_errors=True)


# ---- shared by the browser, load and fault tests ------------------------------------------

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _main_module_restored():
    """Streamlit's AppTest runs a page script as ``__main__`` and leaves it there. A rank
    started later in this process (its forkserver re-runs ``__main__`` by path, as
    multiprocessing does for spawned children) then ran that deleted temp script and died,
    failing every engine test that came after a page test. Each test gets the real one back."""
    main = sys.modules.get("__main__")
    yield
    if sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


def _live_stats() -> dict[int, list[str]]:
    """pid -> the fields of /proc/PID/stat after the command name, for every live process
    (zombies excluded): [state, parent pid, process group, ...]."""
    stats = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if fields[0] != "Z":
                    stats[int(pid)] = fields
            except OSError:
                pass
    return stats


def _live_parents() -> dict[int, int]:
    """pid -> parent pid of every live process (zombies excluded)."""
    return {pid: int(fields[1]) for pid, fields in _live_stats().items()}


def process_group(pgid: int) -> list[int]:
    """Live processes of process group ``pgid`` (zombies excluded)."""
    return [pid for pid, fields in _live_stats().items() if int(fields[2]) == pgid]


def rank_processes() -> list[int]:
    """Live rank processes of this process's forkserver: its children, zombies excluded."""
    from multiprocessing import forkserver
    server = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if server is None:
        return []
    return [pid for pid, parent in _live_parents().items() if parent == server]


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (a launcher's forkserver, ranks, resource tracker)."""
    parents, found, frontier = _live_parents(), set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def still_alive(pids, timeout: float = 5.0) -> set[int]:
    """Those of ``pids`` still alive after waiting up to ``timeout`` for them to exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and set(pids) & set(_live_parents()):
        time.sleep(0.1)
    return set(pids) & set(_live_parents())


def wait_until_gone(timeout: float = 5.0) -> list[int]:
    """Rank processes still alive after waiting up to ``timeout`` for them to exit."""
    deadline = time.monotonic() + timeout
    while rank_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    return rank_processes()


@pytest.fixture
def one_thread():
    """One torch thread, as the executor runs: with 2 intra-op threads on shared cores,
    OpenMP spin-waits made a 0.2 ms layer take 50 ms of CPU time, swamping timings."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def short_stall(monkeypatch):
    """The launcher calls a run hung after 3 s without an action anywhere, not its default 8
    (rank_processes.STALL_SECONDS): the same check, found sooner. One page test keeps the
    default, for the 15 s a hung run may take (tests/test_app_faults.py)."""
    from pipelab.engine.runtime import rank_processes
    monkeypatch.setattr(rank_processes, "STALL_SECONDS", 3.0)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Runs put their rendezvous dirs (pipelab-run-*) under tempfile's dir: an empty folder."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


NOT_A_RUNS = ("pymp-", "torchinductor_", "torchelastic_")
"""multiprocessing's per-process folder, torch's compile cache and torchrun's log folder."""


@pytest.fixture
def toy_schedule(tmp_path, monkeypatch):
    """A schedule registered from a temporary module (tests/toy_schedule.py), for this test only."""
    from tests.toy_schedule import registered_toy
    yield from registered_toy(tmp_path, monkeypatch)


def run_leftovers(folder):
    """What a run left in ``folder`` (a temp dir), other processes' own folders aside."""
    return [p.name for p in folder.iterdir() if not p.name.startswith(NOT_A_RUNS)]


def shared_memory_names() -> set[str]:
    """Named semaphores and segments in /dev/shm (a run's channel semaphores live there)."""
    try:
        return set(os.listdir("/dev/shm"))
    except FileNotFoundError:
        return set()


def remove_orphaned_semaphores(since: set[str]) -> list[str]:
    """Unlink the named semaphores made after ``since`` (shared_memory_names()) that no live
    process has open (an open one is mapped, /proc/PID/maps), and return their names. A test
    that kills a whole machine's processes, as a lost Ray node, leaves its run's semaphores
    behind on this host, where a real machine's loss takes its /dev/shm with it."""
    mapped = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as f:
                mapped |= {line.split("/dev/shm/", 1)[1].strip() for line in f if "/dev/shm/sem." in line}
        except OSError:
            continue  # gone meanwhile, or not ours to read
    orphans = sorted(name for name in shared_memory_names() - since
                     if name.startswith("sem.mp-") and name not in mapped)
    for name in orphans:
        try:
            os.unlink(os.path.join("/dev/shm", name))
        except FileNotFoundError:
            pass
    return orphans


@pytest.fixture(scope="module")
def chromium_browser():
    """One Debian chromium for the module (skips without it, fails under CI)."""
    from bench.app_latency import CHROMIUM, chromium
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (apt-get install chromium)", pytrace=False)
        pytest.skip("chromium is not installed")
    pytest.importorskip("playwright.sync_api")
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def app_server():
    """The app served as bin/serve does, for the module's browser tests (its address)."""
    from bench.app_latency import streamlit_server
    with streamlit_server() as url:
        yield url


def venv_tool(name: str) -> str | None:
    """A command-line tool installed beside this Python (the venv's bin), else on PATH."""
    import shutil
    import sys
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else shutil.which(name)


# ---- the fast tier: tests that start no process, browser or Docker --------------------------
#
# `bin/test --fast` runs `-m "not slow"` (`bin/test` runs it first, then `-m slow`). Every
# test that starts a process (an engine run's ranks, a CLI under subprocess, a server,
# chromium, Docker) is marked slow, and in the fast tier starting one fails the test that
# did, naming the marker it lacks: the tier cannot quietly grow slow again. Programs start
# through _posixsubprocess.fork_exec (subprocess keeps its own reference to it,
# multiprocessing's forkserver calls the module's); a forkserver's ranks through
# BaseProcess.start.

_STARTED: list[str] = []


def _fast_tier(config) -> bool:
    expression = (config.getoption("markexpr", "") or "").replace(" ", "")
    return "notslow" in expression


def _xdist_controller(config) -> bool:
    """pytest-xdist's controller (``bin/test`` runs the fast tier with ``-n 2``): it starts the
    workers and runs no test; each worker configures itself as a run of its own."""
    return not hasattr(config, "workerinput") and bool(config.getoption("numprocesses", None))


def pytest_configure(config):
    if not _fast_tier(config) or _xdist_controller(config):
        return
    # A schedule file copied with only its names changed joins the registry, and a lesson folder
    # copied with only its folder name, slug, number and title changed joins the catalog, for the
    # whole fast tier, before any test module reads them (tests/copied_schedule.py,
    # tests/copied_lesson.py).
    from tests import copied_lesson, copied_schedule
    config._pipelab_copies = copied_schedule.register_copy()
    config._pipelab_lesson_copies = copied_lesson.register_copy()
    import _posixsubprocess
    import multiprocessing.process
    import platform
    import subprocess

    from pipelab.engine.runtime import launch

    # Read (and cached) now: an xdist worker reports its platform at its session's start, and
    # the processor's name comes from running `uname -p`.
    platform.processor()
    fork_exec = _posixsubprocess.fork_exec
    start = multiprocessing.process.BaseProcess.start
    # A page's server warms the engine's forkserver in a background thread (app/runner/runs.py):
    # an optimization a page test does not need. Refused at the process start, it had already
    # made its run's channel semaphores, whose names then outlived the tier in /dev/shm.
    warm_up = launch.warm_up
    launch.warm_up = lambda nice=0, cancel=None: None

    def refuse(what: str):
        _STARTED.append(what)
        raise RuntimeError("the fast tier starts no process: mark this test @pytest.mark.slow")

    def guarded_fork_exec(*args, **kwargs):
        refuse(repr(args[0]) if args else "a program")

    def guarded_start(self):
        refuse(f"process {self.name}")

    _posixsubprocess.fork_exec = subprocess._fork_exec = guarded_fork_exec
    multiprocessing.process.BaseProcess.start = guarded_start
    config._pipelab_restore = (fork_exec, start, warm_up)


def pytest_unconfigure(config):
    lesson_copies = getattr(config, "_pipelab_lesson_copies", None)
    if lesson_copies is not None:
        from tests.copied_lesson import remove_copy
        remove_copy(lesson_copies)
    copies = getattr(config, "_pipelab_copies", None)
    if copies is not None:
        from tests.copied_schedule import remove_copy
        remove_copy(copies)
    restore = getattr(config, "_pipelab_restore", None)
    if restore is not None:
        import _posixsubprocess
        import multiprocessing.process
        import subprocess

        from pipelab.engine.runtime import launch
        fork_exec, start, launch.warm_up = restore
        _posixsubprocess.fork_exec = subprocess._fork_exec = fork_exec
        multiprocessing.process.BaseProcess.start = start


@pytest.fixture(autouse=True)
def _starts_no_process_in_the_fast_tier(request):
    """In the fast tier, fail a test that tried to start a process (even from a thread, an
    app's run worker say, where the error alone would only fail the run it started)."""
    _STARTED.clear()
    yield
    if _STARTED and _fast_tier(request.config):
        started = ", ".join(sorted(set(_STARTED))[:3])
        _STARTED.clear()
        pytest.fail(f"{request.node.nodeid} started {started}: mark it @pytest.mark.slow", pytrace=False)
