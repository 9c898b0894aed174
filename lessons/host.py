"""The host the runs share: how many cores it has, so the lessons and pages can say it.

A run starts one process per rank. With fewer cores than ranks the processes take turns and
the wall clock counts the waits; with a core for each rank they do not. The texts say which
holds on the host that serves them, from its real core count (never a number typed in).
"""

from __future__ import annotations

import os


def host_cores() -> int:
    """Cores this server may run on: its CPU affinity (what a container's cpuset allows),
    else every core the OS reports."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def phrase_key(ranks: int, cores: int) -> str:
    """The catalog key that says how ``ranks`` processes sit on ``cores`` cores."""
    if ranks <= cores:
        return "host.own"
    return "host.shared_one" if cores == 1 else "host.shared"


__all__ = ["host_cores", "phrase_key"]
