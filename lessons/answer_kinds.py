"""A question's kinds of answer (a number of some kind, or one of its options), which values
each kind can take, and when an answer is right."""

from __future__ import annotations

import math

NUMBER = "number"
"""Any finite number (a question that says no more about its answer)."""
FRACTION = "fraction"
"""A share of a whole, from 0 to 1: a bubble fraction, ZB-H1's idle time as a share of 1F1B's."""
COUNT = "count"
"""A whole number, 0 or more: micro-batches held, devices busy, weight versions, messages."""
CHOICE = "choice"
NUMERIC = (NUMBER, FRACTION, COUNT)
"""The kinds typed as a number; a CHOICE is picked among its options."""

Value = float | str
"""A number for the numeric kinds, an option id for CHOICE questions."""


def is_numeric(kind: str) -> bool:
    return kind in NUMERIC


def fits(kind: str, value: float) -> bool:
    """False for a number no answer of this kind can be (a bubble of 1.5, a count of 2.5):
    refused when typed, never graded."""
    value = float(value)
    if not math.isfinite(value):
        return False
    if kind == FRACTION:
        return -1e-9 <= value <= 1 + 1e-9
    if kind == COUNT:
        return value >= -1e-9 and abs(value - round(value)) < 1e-9
    return True


def is_right(kind: str, value: Value, answer: Value, tolerance: float) -> bool:
    if kind == CHOICE:
        return value == answer
    return abs(float(value) - float(answer)) <= tolerance + 1e-9


__all__ = ["CHOICE", "COUNT", "FRACTION", "NUMBER", "NUMERIC", "Value", "fits", "is_numeric", "is_right"]
