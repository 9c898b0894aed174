"""Many runs in a row leave nothing behind: no rank process, no listening port, no temp file."""

import pytest

from pipelab.engine.config import RunConfig
from pipelab.engine.runtime.faults import injected
from pipelab.engine.runtime.launch import run
from pipelab.engine.runtime.rank_processes import RunFailed
from tests.conftest import run_leftovers, shared_memory_names, wait_until_gone

pytestmark = pytest.mark.slow  # every test here starts processes (engine ranks, a server, a browser or a tool)

TINY = RunConfig(schedule="1f1b", stages=2, microbatches=2, model="mlp", layers=2, hidden=16,
                 microbatch_size=2, steps=1)


def listening_ports() -> set[tuple[str, str]]:
    """(protocol, local address) of every listening TCP socket on this host."""
    ports = set()
    for proto in ("tcp", "tcp6"):
        try:
            with open(f"/proc/net/{proto}") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A":  # LISTEN
                        ports.add((proto, fields[1]))
        except FileNotFoundError:
            pass
    return ports


def test_a_hundred_runs_back_to_back_leave_nothing(private_tmp):
    run(TINY)  # start the forkserver (it stays, as the warm pool)
    ports_before = listening_ports()
    shm_before = shared_memory_names()
    failures = 0
    for i in range(100):
        try:
            if i % 10 == 9:  # every tenth run loses a rank
                with injected("crash", 1, 0):
                    run(TINY)
            else:
                run(TINY)
        except RunFailed:
            failures += 1
    assert failures == 10
    assert wait_until_gone() == []
    assert listening_ports() <= ports_before
    assert run_leftovers(private_tmp) == []
    assert shared_memory_names() <= shm_before


def test_a_launch_that_fails_before_its_ranks_start_leaves_no_folder(private_tmp, monkeypatch, capsys):
    # The status board's semaphores can fail to be made (a full /dev/shm): the run's folder,
    # made just before, goes with the failure, as with any failure after the ranks start.
    from pipelab.engine.runtime import status

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(status, "StatusBoard", no_room)
    with pytest.raises(OSError, match="No space left"):
        run(TINY)
    assert run_leftovers(private_tmp) == []
    assert wait_until_gone() == []
    # At the command line: one line naming what the host refused, exit code 1, nothing left.
    from pipelab.engine.cli.main import main
    assert main(["run", "--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--model", "mlp",
                 "--layers", "2", "--hidden", "16", "--steps", "1"]) == 1
    said = capsys.readouterr().err.strip().splitlines()
    assert said == ["pipelab: error: this host could not run it: [Errno 28] No space left on device"], said
    assert run_leftovers(private_tmp) == []


def test_a_run_clears_the_folders_of_runs_whose_launcher_is_gone(private_tmp):
    # A launcher killed together with its ranks (a server's process group stopped mid-run)
    # cannot remove its run's folder; the next run on the host does, and nothing else.
    import os
    import subprocess
    import sys

    from pipelab.engine.runtime.rank_processes import LAUNCHER_MARK, RUN_FOLDER_PREFIX
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    folders = {"orphan": f"{RUN_FOLDER_PREFIX}{dead_pid}-abc123",
               "running": f"{RUN_FOLDER_PREFIX}{os.getpid()}-def456",
               "no pid": f"{RUN_FOLDER_PREFIX}xyz789", "not a run": "someone-elses-folder"}
    # Multiprocessing folders: a killed launcher's (marked by it), a live one's, another program's.
    marked = {"orphan's": ("pymp-orphan1", f"{LAUNCHER_MARK}{dead_pid}"),
              "running's": ("pymp-running", f"{LAUNCHER_MARK}{os.getpid()}"),
              "another program's": ("pymp-another", "listener-x")}
    for name in folders.values():
        (private_tmp / name).mkdir()
        (private_tmp / name / "rendezvous").write_text("")
    for name, mark in marked.values():
        (private_tmp / name).mkdir()
        (private_tmp / name / mark).write_text("")
    run(TINY)
    left = {p.name for p in private_tmp.iterdir()}
    assert folders["orphan"] not in left and marked["orphan's"][0] not in left
    assert {folders["running"], folders["no pid"], folders["not a run"]} <= left
    assert {marked["running's"][0], marked["another program's"][0]} <= left
