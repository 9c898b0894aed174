"""The "show all steps" toggle of a timeline, and a timeline figure with its step marks.

One step of a run whose steps overlap (engine/schedules/stream.py) is cut out of a stream: its own
actions only, with holes where the other steps' actions ran. So such a run shows all its
steps by default, each device's step starts marked (app/views/step_marks.py), and the tiling is
visible; any multi-step run can show them.
"""

from __future__ import annotations

from pipelab.app.i18n import t
from pipelab.app.views import charts
from pipelab.app.views.step_marks import add_step_marks


def all_steps_toggle(container, num_steps: int, overlapped: bool, key: str) -> bool:
    """A checkbox in ``container`` (on by default when the steps overlap); False, with no
    checkbox, for a one-step run."""
    if num_steps < 2:
        return False
    return container.checkbox(t("steps.all_toggle"), value=overlapped, key=f"{key}:all-steps",
                              help=t("steps.all_toggle_help"))


def marked_timeline(events, num_ranks: int, title: str, x_max_ms: float | None = None, **kwargs):
    """charts.timeline_figure with each device's step starts marked when it shows several steps."""
    scale = 1e3 if kwargs.get("unit", "ms") == "ms" else 1.0
    return add_step_marks(charts.timeline_figure(events, num_ranks, title, x_max_ms, **kwargs), events, num_ranks,
                          scale, kwargs.get("lang", "en"))
