"""Schedule builders, registered by name. Import this package to fill the registry."""

from engine.schedules.base import (REGISTRY, Schedule, ScheduleInfo, build_schedule,
                                   get_schedule_info)
from engine.schedules import classic, interleaved, pipedream, zero_bubble  # noqa: F401 (register)
from engine.schedules import dualpipev  # noqa: F401, E402 (registers last: listed after the papers it builds on)

__all__ = ["REGISTRY", "Schedule", "ScheduleInfo", "build_schedule", "get_schedule_info"]
