"""A lesson's extras, drawn by kind: each lesson declares its own as data (``Lesson.extras``,
pipelab.lessons.extra_kinds), and its page draws each in the kind's place. Nothing here knows
a lesson by name.

Places on the page: ``form`` (under the run form; returns extra run settings), ``comparison``
(below a comparison's results), ``section`` (a section of its own after the sweep).
"""

from __future__ import annotations

from pipelab.app.views.extras import (
    dualpipe_table,
    loss_streams,
    memory_tradeoff,
    split_or_replicate,
    stash_toggle,
    weight_versions,
)
from pipelab.lessons import Knobs, Lesson

FORM, COMPARISON, SECTION = "form", "comparison", "section"

PLACES = {
    "stash_toggle": (FORM, stash_toggle.render),
    "weight_versions": (COMPARISON, weight_versions.render),
    "loss_streams": (COMPARISON, loss_streams.render),
    "dualpipe_table": (SECTION, dualpipe_table.render),
    "memory_tradeoff": (SECTION, memory_tradeoff.render),
    "split_or_replicate": (SECTION, split_or_replicate.render),
}
"""Each kind (pipelab.lessons.extra_kinds.EXTRA_KINDS) -> its place and its view."""


def _of(lesson: Lesson, place: str):
    return [(extra, PLACES[extra.kind][1]) for extra in lesson.extras if PLACES[extra.kind][0] == place]


def under_form(lesson: Lesson, knobs: Knobs) -> dict:
    """The lesson's extras under its run form; returns the extra run settings they chose."""
    settings = {}
    for extra, render in _of(lesson, FORM):
        settings.update(render(lesson, extra, knobs))
    return settings


def after_comparison(lesson: Lesson, entries, key: str) -> None:
    """The lesson's extras below a finished comparison."""
    if not entries:
        return
    for extra, render in _of(lesson, COMPARISON):
        render(extra, entries, key)


def sections(lesson: Lesson, knobs: Knobs, error) -> None:
    """The lesson's sections of their own, after its sweep."""
    for extra, render in _of(lesson, SECTION):
        render(lesson, extra, knobs, error)


__all__ = ["COMPARISON", "FORM", "PLACES", "SECTION", "after_comparison", "sections", "under_form"]
