"""Numbers as students type and read them."""

from __future__ import annotations

from fractions import Fraction

from pipelab.lessons.answer_kinds import Value, fits


def parse_number(text: str) -> float:
    """A number as typed: "0.16", "16%", "3/19" or "3 / 19"; ValueError names what is accepted."""
    raw = (text or "").strip().replace(",", ".").replace("／", "/").replace("％", "%")
    try:
        if raw.endswith("%"):
            return float(raw[:-1]) / 100
        if "/" in raw:
            top, bottom = raw.split("/", 1)
            return float(top) / float(bottom)
        return float(raw)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"not a number: {text!r}") from None


def read_answer(kind: str, text: str) -> float:
    """A typed answer of a numeric ``kind`` (pipelab.lessons.answer_kinds): parse_number's value
    when the kind can take it; ValueError when it is no number or one the kind cannot be (a
    bubble of 1.5 or -1, a count of 2.5), which a page refuses before locking it in, under
    ``predict.bad.<kind>``."""
    value = parse_number(text)
    if not fits(kind, value):
        raise ValueError(f"not a {kind}: {text!r}")
    return value


def format_value(value: Value | None, exact: bool = False) -> str:
    """Whole numbers as such, others to three decimals; an ``exact`` value (a formula's or the
    simulator's on unit costs) as "3/19 ≈ 0.158" when a small fraction fits it."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if abs(value - round(value)) < 1e-9:
        return str(int(round(value)))
    fraction = Fraction(value).limit_denominator(100)
    if exact and abs(float(fraction) - value) < 1e-9:
        return f"{fraction.numerator}/{fraction.denominator} ≈ {value:.3f}"
    return f"{value:.3f}"


__all__ = ["format_value", "parse_number", "read_answer"]
