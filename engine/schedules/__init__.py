"""Schedule builders, registered by name. Importing this package imports every module in it
(``discover``), and each schedule module registers its builders: a new schedule is one new file.

A new schedule, say ``engine/schedules/my_schedule.py``::

    from pipelab.engine.theory import formulas as theory
    from pipelab.engine.actions import B, F
    from pipelab.engine.schedules.base import Schedule, linear_placement
    from pipelab.engine.schedules.registry import register
    from pipelab.engine.theory.schedule_theory import ScheduleTheory

    @register("my-schedule",
              summary={"en": "one line: what it does", "zh": "一句话：它做什么"},
              constraint={"en": "m a multiple of p", "zh": "m 是 p 的倍数"},  # what it refuses; "none" / "无"
              paper="where it comes from, arXiv ID",
              theory=ScheduleTheory(bubble_fraction=lambda c: theory.gpipe_bubble_fraction(c.p, c.m),
                                    bubble_text="(p-1)/(m+p-1)"))  # theory=NO_THEORY if it has none
    def my_schedule(ranks: int, microbatches: int, chunks: int = 1) -> Schedule:
        actions = ...  # per rank, a tuple of Actions: F(stage, micro-batch), B(...), I, W, U
        return Schedule("my-schedule", ranks, microbatches, linear_placement(ranks), actions)

``chunks=AnyChunks()`` or ``FixedChunks(2)`` (engine/schedules/chunks.py) if it places more
than one chunk per rank; ``synchronous=False`` if it updates inside the step (U actions);
``order=`` for its place in the lists. It then appears in ``pipelab list``, the
simulator and the executor, the lessons' playground (``lessons.SCHEDULES``) with its summary
in the page's language, the recap's table, the benchmarks and the errors that list the valid
schedules. tests/test_schedule_contract.py holds every registered schedule to this: it
validates, simulates and has its texts in every language; tests/test_theory.py holds it to its
closed forms. A golden grid in tests/test_golden.py (or a reason there why not) comes when the
schedule ships, with its name in the built-in list (docs/design.md, "Adding things").
"""

from __future__ import annotations

import importlib
import pkgutil

from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.chunks import ONE_CHUNK, AnyChunks, ChunkRule, FixedChunks
from pipelab.engine.schedules.registry import (
    CUSTOM,
    REGISTRY,
    SCHEDULE_NAMES,
    ScheduleInfo,
    build_schedule,
    chunked_schedules,
    chunks_for,
    cost_aware_schedules,
    get_schedule_info,
    register,
    schedule_label,
    torch_classes,
    unregister,
)


def discover(package: str) -> tuple[str, ...]:
    """Import every module of ``package`` (their ``@register`` calls fill the registry), in
    name order; returns the module names. Listing order comes from ``register(order=...)``."""
    root = importlib.import_module(package)
    names = tuple(sorted(info.name for info in pkgutil.iter_modules(root.__path__, package + ".")))
    for name in names:
        importlib.import_module(name)
    return names


MODULES = discover(__name__)
"""The schedule modules found in this package."""

__all__ = ["CUSTOM", "MODULES", "ONE_CHUNK", "REGISTRY", "SCHEDULE_NAMES", "AnyChunks", "ChunkRule", "FixedChunks",
           "Schedule", "ScheduleInfo", "build_schedule", "chunked_schedules", "chunks_for", "cost_aware_schedules",
           "discover", "get_schedule_info", "register", "schedule_label", "torch_classes", "unregister"]
