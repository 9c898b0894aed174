"""A question's kinds of answer (a number, or one of its options), and when an answer is right."""

from __future__ import annotations

NUMBER = "number"
CHOICE = "choice"

Value = float | str
"""A number for NUMBER questions, an option id for CHOICE questions."""


def is_right(kind: str, value: Value, answer: Value, tolerance: float) -> bool:
    if kind == CHOICE:
        return value == answer
    return abs(float(value) - float(answer)) <= tolerance + 1e-9


__all__ = ["CHOICE", "NUMBER", "Value", "is_right"]
