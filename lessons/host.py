"""The host the runs share: how many cores it has, so the lessons and pages can say it.

A run starts one process per rank. With fewer cores than ranks the processes take turns and
the wall clock counts the waits; with a core for each rank they do not. The texts say which
holds on the host that serves them, from its real core count (never a number typed in).
"""

from __future__ import annotations

from pipelab.engine.config import usable_cores


def host_cores() -> int:
    """Cores this server may run on (pipelab.engine.config.usable_cores: its CPU affinity)."""
    return usable_cores()


def phrase_key(ranks: int, cores: int) -> str:
    """The catalog key that says how ``ranks`` processes sit on ``cores`` cores."""
    if ranks <= cores:
        return "host.own"
    return "host.shared_one" if cores == 1 else "host.shared"


__all__ = ["host_cores", "phrase_key"]
