"""The vocabulary of a claim's verdict: its statuses, tolerances, rows, and the language it is said in.

A check (each lesson's claim.py) takes what a page finished (its one run, its comparison, or
its sweep) as (label, result) pairs and returns a Verdict: the claim, the one or two numbers
that test it (measured on the device clock beside the formula and the simulator), and the
verdict in words. Texts come from the course's catalogs (lessons/i18n and each lesson's
folder) in the language ``speaking`` sets; the status stays a language-neutral id (HOLDS,
...), which the app shows through the catalog's ``verdict.status.<id>``.

Where a verdict states a limit, it judges its figure by that limit as it prints both
(pipelab.lessons.judging.against): "holds" never sits beside a figure past its limit, and
"holds within noise" comes with the noise band allowed beyond it (BUBBLE_NOISE, RATIO_NOISE)
and where that band comes from, in the speaking lesson's ``claims.band``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pipelab.lessons.i18n import join_sentences, text
from pipelab.lessons.own_keys import own_key

_LANG: contextvars.ContextVar[str] = contextvars.ContextVar("claims_lang", default="en")
"""The language of the verdict being built (set by ``verdict``), so every check writes in it
without passing it through each helper."""


_LESSON: contextvars.ContextVar[str] = contextvars.ContextVar("claims_lesson", default="")
"""Slug of the lesson whose check is speaking (set by ``speaking``), for ``say_own``."""


def say(key: str, **values) -> str:
    """A sentence of the course's shared vocabulary: ``claims.<key>`` in lessons/i18n."""
    return text(_LANG.get(), f"claims.{key}", **values)


def say_sentences(sentences) -> str:
    """Whole sentences (each ending in its full stop) as one text in the speaking language."""
    return join_sentences(_LANG.get(), [s for s in sentences if s])


def say_own(key: str, **values) -> str:
    """A sentence of the speaking lesson's own: ``claims.<key>`` in its folder's catalog,
    qualified with its slug (pipelab.lessons.own_keys), so a copied folder says its own."""
    lesson = _LESSON.get()
    if not lesson:
        raise LookupError(f"say_own({key!r}) outside a lesson's check: judge it through pipelab.lessons.claims.verdict")
    return text(_LANG.get(), own_key(lesson, f"claims.{key}"), **values)


@contextlib.contextmanager
def speaking(lang: str, lesson: str = "") -> Iterator[None]:
    """Every ``say`` inside writes in ``lang``, and every ``say_own`` in lesson ``lesson``'s words."""
    tokens = _LANG.set(lang), _LESSON.set(lesson)
    try:
        yield
    finally:
        _LANG.reset(tokens[0])
        _LESSON.reset(tokens[1])


HOLDS = "holds"

NOISE = "holds within noise"

FAILS = "does not hold here"

UNTESTED = "not tested by this run"

STATUS_KEYS = {HOLDS: "verdict.status.holds", NOISE: "verdict.status.noise", FAILS: "verdict.status.fails",
               UNTESTED: "verdict.status.untested"}
"""Each status's catalog key: the words a page shows for it."""

BUBBLE_TOLERANCE = 0.05
"""How far a measured bubble fraction may sit from the formula's and still follow it."""

BUBBLE_NOISE = 0.03
"""Beyond the tolerance, this much more is "within noise": what a busy shared host moves a
device-clock bubble between two identical runs (tests/test_lesson_claims.py takes medians)."""

RATIO_NOISE = 0.10
"""The same for a ratio of two runs: a threshold missed by under 10 % holds within noise."""

RATIO_TOLERANCE = 0.10
"""How far a measured ratio of two runs may sit from theory at the runs' own costs."""

RUN, COMPARISON, SWEEP = "run", "comparison", "sweep"


@dataclass(frozen=True)
class ClaimRow:
    quantity: str
    measured: float | None
    """On the device clock (memory and counts as the ranks measured them)."""
    formula: float | None
    simulated: float | None
    unit: str = ""
    """"" for a fraction, or "ms", "MiB", "x" (a ratio), "count"."""
    spread: tuple[float, float] | None = None
    """(lowest, highest) of the measured figure over the pairs of steps (or rounds) it is the
    median of; None for a figure of one run."""


EQUAL_COSTS_LABEL = "formula: T_F = T_I = T_W, free messages"
"""The walk's first row: the claim's own number, as its paper states it."""


@dataclass(frozen=True)
class WalkRow:
    """One step of the walk from the claim's number to the measured one."""
    label: str
    """pipelab.engine.theory.breakdown's row label (English, as results keep it), or EQUAL_COSTS_LABEL."""
    value: float
    change: float | None = None
    """From the row above; None on the first."""


@dataclass(frozen=True)
class Verdict:
    claim: str
    rows: tuple[ClaimRow, ...]
    status: str
    """HOLDS, NOISE, FAILS or UNTESTED."""
    reason: str
    """One or two sentences: what the numbers say, and when it fails, why."""
    columns: tuple[str, ...] = ()
    """Columns of the app's comparison and sweep tables that test the claim (shown first)."""
    tests: str = ""
    """The part of the claim this run, comparison or sweep can test (a run of 1F1B alone tests
    its memory, not that its bubble is GPipe's), in the verdict's language."""
    walk: tuple[WalkRow, ...] = ()
    """From the claim's number to the measured one, one effect a row: the formula at equal costs,
    at this run's costs, with messages, with the engine's own time, ..., measured (a bubble claim)."""


Entries = Sequence[tuple[object, object]]
"""(label, result) pairs: one for a run, the lesson's run first for a comparison, one per
swept value for a sweep."""

BUBBLE_COLUMNS = ("bubble (device)", "bubble (formula)", "bubble (simulated)")

STEP_COLUMNS = ("step ms (device)",)


__all__ = ["BUBBLE_COLUMNS", "BUBBLE_NOISE", "BUBBLE_TOLERANCE", "COMPARISON", "ClaimRow", "EQUAL_COSTS_LABEL",
           "Entries", "FAILS", "HOLDS", "NOISE", "RATIO_NOISE", "RATIO_TOLERANCE", "RUN", "STATUS_KEYS",
           "STEP_COLUMNS", "SWEEP", "UNTESTED", "Verdict", "WalkRow", "say", "say_own", "say_sentences",
           "speaking"]
