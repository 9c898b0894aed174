"""Faults for tests, injected at one place: a rank that crashes or hangs at a given step.

The launcher reads ``PIPELAB_TEST_FAULT`` when it starts a launch's ranks (launch.start_ranks)
and hands the fault to every rank, whose step hook (rank_entry.py) acts on it: no other engine
or app function takes a fault. So a test of the engine (``with injected("crash", 1, 1): run(...)``),
an AppTest page (monkeypatch.setenv) and a browser test (the server started with the variable)
all reach the same code. Never set it on a real server.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

FAULT_ENV = "PIPELAB_TEST_FAULT"
"""``crash:RANK:STEP`` or ``hang:RANK:STEP``: process RANK (as torch.distributed numbers it) exits,
or sleeps for an hour, as it turns to step STEP."""

KINDS = ("crash", "hang")

Fault = tuple[str, int, int]
"""(kind, rank, step)."""


def planned_fault() -> Fault | None:
    """The fault ``PIPELAB_TEST_FAULT`` names now, or None; a malformed value is refused in one line."""
    spec = os.environ.get(FAULT_ENV, "").strip()
    if not spec:
        return None
    kind, _, place = spec.partition(":")
    rank, _, step = place.partition(":")
    if kind not in KINDS or not rank.isdigit() or not step.isdigit():
        raise ValueError(f"{FAULT_ENV} must be crash:RANK:STEP or hang:RANK:STEP, got {spec!r}")
    return kind, int(rank), int(step)


@contextmanager
def injected(kind: str, rank: int, step: int) -> Iterator[None]:
    """Every launch started inside the block injects this fault (a test's engine runs)."""
    before = os.environ.get(FAULT_ENV)
    os.environ[FAULT_ENV] = f"{kind}:{rank}:{step}"
    try:
        planned_fault()  # refuse a bad one here, in the test's own line
        yield
    finally:
        if before is None:
            os.environ.pop(FAULT_ENV, None)
        else:
            os.environ[FAULT_ENV] = before
