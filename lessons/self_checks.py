"""A check: a short question at the end of a lesson, with feedback for a right and a wrong answer.

Plain data, no Streamlit and no torch. Texts live in the catalogs under ``check.<id>.*`` (in its
lesson's folder, written without the lesson's name); each lesson's folder lists its own
(lessons/<name>/questions.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pipelab.lessons.answer_kinds import Value, is_numeric, is_right
from pipelab.lessons.numbers import format_value


@dataclass(frozen=True, kw_only=True)
class Check:
    """A short question at the end of a lesson, with feedback for a right and a wrong answer."""

    id: str
    """As the lesson's folder writes it ("idle"); the lesson that asks it puts its slug in front
    ("naive.idle", pipelab.lessons.own_keys.asked_by)."""
    lesson: str = ""
    """Slug of the lesson that asks it, set by that lesson."""
    kind: str
    """FRACTION, COUNT, NUMBER or CHOICE (pipelab.lessons.answer_kinds)."""
    answer_fn: Callable[[], Value]
    """Computed from the engine at the settings the prompt names (``settings``)."""
    settings: dict
    """Values the prompt and the feedback name, e.g. {"p": 4, "m": 16}."""
    options: tuple[str, ...] = ()
    tolerance: float = 0.0

    @property
    def prompt(self) -> str:
        return f"check.{self.id}.prompt"

    @property
    def right(self) -> str:
        return f"check.{self.id}.right"

    @property
    def wrong(self) -> str:
        return f"check.{self.id}.wrong"

    def option_key(self, option: str) -> str:
        return f"check.{self.id}.option.{option}"

    def answer(self) -> Value:
        return self.answer_fn()

    def is_right(self, value: Value) -> bool:
        return is_right(self.kind, value, self.answer(), self.tolerance)

    def context(self) -> dict:
        answer = self.answer()
        return {**self.settings, "answer": format_value(answer, exact=True) if is_numeric(self.kind) else answer}


__all__ = ["Check"]
