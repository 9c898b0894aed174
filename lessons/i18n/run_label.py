"""A run's label in no language, so a stored run reads in its reader's language.

A label a page makes from the catalogs ("this lesson (gpipe)", a lesson's comparison) is a
RunLabel: the catalog key and the values that fill it. The page that starts the run shows it
in its own language (``text``); the store keeps ``stored()``, and every page that lists the
run later says it again in its reader's language (``stored_label_text``).

Labels that read the same in every language (a schedule's name, a sweep value, "custom") stay
plain text, and so do the labels of runs stored before labels had keys: both show as stored.
A stored RunLabel is a JSON object; no plain label ever started with "{", so the two cannot
be confused, and the database keeps its one ``label`` column.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pipelab.engine.schedules.registry import schedule_label
from pipelab.lessons import LESSONS, Lesson
from pipelab.lessons.i18n import DEFAULT, comparison_label, has, schedule_said, text
from pipelab.lessons.own_keys import own_key

_COMPARISON = re.compile(r"lesson\.(?P<slug>[\w-]+)\.comparison\.(?P<index>\d+)")
_FIELDS = {"key", "values"}


def schedule_in(lang: str, name: str) -> str:
    """Schedule ``name`` as a sentence names it (pipelab.lessons.i18n.schedule_said: "朴素方式",
    "ZB-H1"), else its registered label: one lookup for questions, run labels and charts."""
    said = schedule_said(lang, name)
    return schedule_label(name) if said == name else said


@dataclass(frozen=True)
class RunLabel:
    """What a run's label says: a catalog ``key`` (or a lesson's comparison,
    ``lesson.<slug>.comparison.<i>``) and the ``values`` that fill it."""

    key: str
    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, key: str, /, **values) -> "RunLabel":
        """``RunLabel.of("page.this_lesson", schedule="gpipe")``; an unknown key is a bug."""
        label = cls(key, tuple(sorted((name, str(value)) for name, value in values.items())))
        if not label.sayable():
            raise KeyError(f"no catalog text for run label {key!r}")
        return label

    @classmethod
    def own_run(cls, slug: str) -> "RunLabel | None":
        """A lesson's own name for its run beside its comparisons (``lesson.this_run`` in its
        catalog: lesson 7 names its layout, as its comparisons do), or None."""
        own = own_key(slug, "lesson.this_run")
        return cls.of(own) if has(DEFAULT, own) else None

    @classmethod
    def this_lesson(cls, slug: str, schedule: str) -> "RunLabel":
        """The label of a lesson's own run beside its comparisons: its own_run, else "this lesson (<schedule>)"."""
        return cls.own_run(slug) or cls.of("page.this_lesson", schedule=schedule)

    @classmethod
    def comparison(cls, slug: str, index: int) -> "RunLabel":
        """The label of the lesson's ``index``-th comparison (its English: ``Comparison.label``)."""
        return cls.of(own_key(slug, f"lesson.comparison.{index}"))

    def sayable(self) -> bool:
        """True when some text says this label (a stored key may name a comparison since removed)."""
        if _COMPARISON.fullmatch(self.key):
            return self._comparison() is not None
        return has(DEFAULT, self.key)

    def text(self, lang: str) -> str:
        comparison = self._comparison()
        if comparison is not None:
            return comparison_label(*comparison, lang)
        values = dict(self.values)
        said = f"schedule.said.{values.get('schedule')}"  # Chinese says "naive" as 朴素方式
        if "schedule" in values and has(lang, said):
            values["schedule"] = text(lang, said)
        if "id" in values:  # a schedule's id, said as the trade-off chart names its point: "朴素方式", "ZB-H1"
            values["id"] = schedule_in(lang, values["id"])
        return text(lang, self.key, **values)

    def _comparison(self) -> tuple[Lesson, int] | None:
        """(lesson, index) when the key names one of a lesson's comparisons, else None."""
        found = _COMPARISON.fullmatch(self.key)
        lesson = next((each for each in LESSONS if found and each.slug == found["slug"]), None)
        if lesson is None or int(found["index"]) >= len(lesson.comparisons):
            return None
        return lesson, int(found["index"])

    def stored(self) -> str:
        """What the store keeps in its ``label`` column."""
        return json.dumps({"key": self.key, "values": dict(self.values)}, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_stored(cls, stored: str) -> "RunLabel | None":
        """The RunLabel ``stored()`` wrote, or None for a plain label (or one no text says now)."""
        if not stored.startswith("{"):
            return None
        try:
            data = json.loads(stored)
        except ValueError:
            return None
        if not isinstance(data, dict) or set(data) != _FIELDS or not isinstance(data["key"], str) \
                or not isinstance(data["values"], dict):
            return None
        label = cls(data["key"], tuple(sorted((str(k), str(v)) for k, v in data["values"].items())))
        return label if label.sayable() else None


def stored_form(label: object) -> str:
    """What the store keeps of a page's label: a RunLabel's stored form, anything else as text."""
    return label.stored() if isinstance(label, RunLabel) else str(label)


def stored_label_text(lang: str, stored: str) -> str:
    """A stored run's label in ``lang``; a plain one (an old run's, a schedule's name) as stored."""
    label = RunLabel.from_stored(stored)
    return stored if label is None else label.text(lang)


__all__ = ["RunLabel", "stored_form", "stored_label_text"]
