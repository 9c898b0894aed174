"""The course's questions, read from the catalog: each lesson's predictions and checks.

A lesson's questions live in its folder (lessons/<name>/questions.py, ``Lesson.predictions`` and
``Lesson.checks``); the kinds of question are pipelab.lessons.predictions and
pipelab.lessons.self_checks.
"""

from __future__ import annotations

from pipelab.lessons.predictions import Prediction
from pipelab.lessons.registry import LESSONS
from pipelab.lessons.self_checks import Check


def _lesson(slug: str):
    return next((lesson for lesson in LESSONS if lesson.slug == slug), None)


def predictions_for(lesson: str) -> tuple[Prediction, ...]:
    """The predictions of the lesson with this slug (none for an unknown one)."""
    found = _lesson(lesson)
    return () if found is None else tuple(found.predictions)


def checks_for(lesson: str) -> tuple[Check, ...]:
    """The checks of the lesson with this slug (none for an unknown one)."""
    found = _lesson(lesson)
    return () if found is None else tuple(found.checks)


def all_predictions() -> tuple[Prediction, ...]:
    """Every lesson's predictions, in course order."""
    return tuple(q for lesson in LESSONS for q in lesson.predictions)


def all_checks() -> tuple[Check, ...]:
    """Every lesson's checks, in course order."""
    return tuple(c for lesson in LESSONS for c in lesson.checks)


__all__ = ["all_checks", "all_predictions", "checks_for", "predictions_for"]
