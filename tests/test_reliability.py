"""Many runs in a row leave nothing behind: no rank process, no listening port, no temp file."""

from engine.config import RunConfig
from engine.launch import RunFailed, run
from tests.conftest import run_leftovers, shared_memory_names, wait_until_gone

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
        fault = ("crash", 1, 0) if i % 10 == 9 else None  # every tenth run loses a rank
        try:
            run(TINY, fault=fault)
        except RunFailed:
            failures += 1
    assert failures == 10
    assert wait_until_gone() == []
    assert listening_ports() <= ports_before
    assert run_leftovers(private_tmp) == []
    assert shared_memory_names() <= shm_before
