"""What torch's runtime (``RunConfig.runtime == "torch"``, engine/torch_bridge/launch.py) cannot
run here, each as one coded line. This module only finds the refusal; RunConfig.check_values
(engine/config.py, the one place that says which values are allowed) raises it as a
ConfigError before any process starts, and a page shows the same line beside the runtime
choice it disables.

No torch import: the check runs on every page rerun and from the command line's parser.
"""

from __future__ import annotations

from pipelab.engine.actions import ScheduleError
from pipelab.engine.errors import Message

REFUSED = (
    # field, its default, the error code (engine/errors.py says why torch's runtime cannot take it).
    # The device is not among them: on a GPU torch's stages live there, and ranks sharing one
    # GPU message through host memory (engine/torch_bridge/host_staging.py).
    ("overlap_steps", False, "torch_overlap"),
    ("clip_grad_norm", None, "torch_clip"),
    ("recompute", False, "torch_recompute"),
)


def torch_settings_refusal(config) -> Message | None:
    """The line for the first setting torch's runtime does not take here, or None."""
    for name, default, code in REFUSED:
        if getattr(config, name) != default:
            return Message.of(code)
    return None


def torch_schedule_refusal(schedule) -> Message | None:
    """The line for a schedule torch's CSV cannot express (an update inside the step), or
    whose placement torch would infer otherwise (engine/torch_bridge/csv_format.py), or None."""
    from pipelab.engine.torch_bridge.csv_format import export_rows
    try:
        export_rows(schedule)
    except ScheduleError as err:  # the same coded line, as the settings error a page shows
        return err.args[0]
    return None
