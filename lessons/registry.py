"""The lesson catalog: every lesson folder found, in course order.

A lesson is one folder, lessons/<name>/, a package whose ``__init__.py`` defines ``LESSON``
(a pipelab.lessons.lesson.Lesson): its texts, questions and claim check live beside it.
``discover`` imports every such folder of a package and registers its lesson; the course's
order is each lesson's ``number`` (data), never a file name. ``LESSONS`` is a live view, like
the schedule registry's names: a lesson registered later (a test's, from a temporary folder)
appears on every list and page that reads it, with no other edit.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from pipelab.lessons.lesson import Lesson

_REGISTRY: dict[str, Lesson] = {}
_VERSION = [0]


def version() -> int:
    """A number that changes whenever a lesson is registered or removed (caches key on it)."""
    return _VERSION[0]


def register(lesson: Lesson, folder: Path) -> Lesson:
    """Add ``lesson`` (its texts in ``folder``); a second lesson with its slug or number is refused."""
    if lesson.slug in _REGISTRY:
        raise ValueError(f"lesson {lesson.slug!r} is registered twice")
    taken = {each.number: each.slug for each in _REGISTRY.values()}
    if lesson.number in taken:
        raise ValueError(f"lesson {lesson.slug!r}: number {lesson.number} is taken by lesson {taken[lesson.number]!r}")
    lesson = dataclasses.replace(lesson, folder=Path(folder))
    _REGISTRY[lesson.slug] = lesson
    _VERSION[0] += 1
    return lesson


def unregister(slug: str) -> None:
    """Remove a lesson (a test's own, afterwards)."""
    del _REGISTRY[slug]
    _VERSION[0] += 1


def discover(package: str) -> tuple[str, ...]:
    """Import every sub-package of ``package`` that defines ``LESSON`` and register it; returns
    their module names, in name order (the course's order is the lessons' numbers)."""
    root = importlib.import_module(package)
    found = []
    for info in sorted(pkgutil.iter_modules(root.__path__, package + "."), key=lambda info: info.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        lesson = getattr(module, "LESSON", None)
        if isinstance(lesson, Lesson):
            register(lesson, Path(module.__file__).parent)
            found.append(info.name)
    return tuple(found)


class Lessons(Sequence[Lesson]):
    """The registered lessons in course order (by number), read afresh on every use."""

    def _ordered(self) -> list[Lesson]:
        return sorted(_REGISTRY.values(), key=lambda lesson: lesson.number)

    def __getitem__(self, index):
        return self._ordered()[index]

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __iter__(self) -> Iterator[Lesson]:
        return iter(self._ordered())

    def __repr__(self) -> str:
        return f"Lessons({', '.join(lesson.slug for lesson in self)})"


LESSONS = Lessons()


def get_lesson(slug: str) -> Lesson:
    """The lesson with this slug; an unknown slug raises KeyError listing the valid ones."""
    if slug in _REGISTRY:
        return _REGISTRY[slug]
    raise KeyError(f"unknown lesson {slug!r}; valid lessons: {', '.join(each.slug for each in LESSONS)}")


__all__ = ["LESSONS", "Lessons", "discover", "get_lesson", "register", "unregister", "version"]
