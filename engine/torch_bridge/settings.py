"""What torch's runtime (``RunConfig.runtime == "torch"``, engine/torch_bridge/launch.py) cannot
run here, each as one coded line: RunConfig.check_values raises it before any process
starts, and a page shows the same line beside the runtime choice it disables.

No torch import: the check runs on every page rerun and from the command line's parser.
"""

from __future__ import annotations

from pipelab.engine.actions import ScheduleError

REFUSED = (
    # field, its default, the error code (engine/errors.py says why torch's runtime cannot take it)
    ("overlap_steps", False, "torch_overlap"),
    ("clip_grad_norm", None, "torch_clip"),
    ("recompute", False, "torch_recompute"),
    ("device", "cpu", "torch_device"),
)


def check_torch_settings(config) -> None:
    """Raise ConfigError (one line) for a setting torch's runtime does not take here."""
    from pipelab.engine.config import ConfigError
    for name, default, code in REFUSED:
        if getattr(config, name) != default:
            raise ConfigError.of(code)


def check_torch_schedule(schedule) -> None:
    """Raise ConfigError for a schedule torch's CSV cannot express (an update inside the
    step), or whose placement torch would infer otherwise (engine/torch_bridge/csv_format.py)."""
    from pipelab.engine.config import ConfigError
    from pipelab.engine.torch_bridge.csv_format import export_rows
    try:
        export_rows(schedule)
    except ConfigError:
        raise
    except ScheduleError as err:  # the same coded line, as the settings error a page shows
        raise ConfigError(err.args[0]) from None
