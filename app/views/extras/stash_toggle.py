"""A switch under the run form: weight stashing on (the default) or off, for the schedules the extra names."""

from __future__ import annotations

import streamlit as st

from pipelab.app.i18n import t
from pipelab.lessons import Extra, Knobs, Lesson


def render(lesson: Lesson, extra: Extra, knobs: Knobs) -> dict:
    """The run's extra settings: {"stash": False} when the student turned stashing off."""
    if knobs.schedule not in extra.schedules:
        return {}
    if not st.checkbox(t(extra.key("label")), value=True, key=f"{lesson.slug}:stash", help=t(extra.key("help"))):
        return {"stash": False}
    return {}
