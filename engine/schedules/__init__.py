"""Schedule builders, registered by name. Importing this package imports every module in it
(``discover``), and each schedule module registers its builders: a new schedule is one new file.
"""

from __future__ import annotations

import importlib
import pkgutil

from engine.schedules.base import Schedule
from engine.schedules.chunks import ONE_CHUNK, AnyChunks, ChunkRule, FixedChunks
from engine.schedules.registry import (
    REGISTRY,
    SCHEDULE_NAMES,
    ScheduleInfo,
    build_schedule,
    chunked_schedules,
    chunks_for,
    get_schedule_info,
    register,
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

__all__ = ["MODULES", "ONE_CHUNK", "REGISTRY", "SCHEDULE_NAMES", "AnyChunks", "ChunkRule", "FixedChunks", "Schedule",
           "ScheduleInfo", "build_schedule", "chunked_schedules", "chunks_for", "discover", "get_schedule_info",
           "register", "unregister"]
