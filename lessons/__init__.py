"""The course: one folder per lesson (lessons/<name>/), found and ordered by the catalog.

Plain data, no Streamlit and no torch, so the app, the CLI and the tests can all read it.
The run settings are pipelab.lessons.knobs, a lesson's entry pipelab.lessons.lesson, the
catalog that finds every lesson folder pipelab.lessons.registry; a new lesson is one new
folder here whose ``__init__.py`` defines ``LESSON``.
"""

from __future__ import annotations

from pipelab.lessons.extra_kinds import EXTRA_KINDS, Extra
from pipelab.lessons.knobs import KNOB_NAMES, MODELS, SCHEDULES, Knobs
from pipelab.lessons.lesson import SCREENS, Comparison, Lesson
from pipelab.lessons.registry import LESSONS, discover, get_lesson

FOLDERS = discover(__name__)
"""The lesson folders found in this package (module names)."""

__all__ = ["Comparison", "EXTRA_KINDS", "Extra", "FOLDERS", "KNOB_NAMES", "LESSONS", "Knobs", "Lesson", "MODELS",
           "SCHEDULES", "SCREENS", "get_lesson"]
