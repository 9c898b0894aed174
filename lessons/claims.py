"""Does a lesson's claim hold in this run? The verdict of the lesson's own check, in a language.

Each lesson's folder holds its check (lessons/<name>/claim.py, ``Lesson.claim_check``); this
module asks the lesson named by a page for it, in the page's language, and adds the part of
the claim that the run, comparison or sweep can test (``claims.tests.<kind>`` in the
lesson's folder). The vocabulary (statuses, rows, tolerances) is pipelab.lessons.verdict, named here again for
the pages that show a verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from pipelab.lessons.i18n import has
from pipelab.lessons.judging import idle_ms
from pipelab.lessons.own_keys import own_key
from pipelab.lessons.registry import LESSONS
from pipelab.lessons.verdict import (
    BUBBLE_NOISE,
    BUBBLE_TOLERANCE,
    COMPARISON,
    EQUAL_COSTS_LABEL,
    FAILS,
    HOLDS,
    NOISE,
    RATIO_NOISE,
    RATIO_TOLERANCE,
    RUN,
    STATUS_KEYS,
    SWEEP,
    UNTESTED,
    ClaimRow,
    Entries,
    Verdict,
    say_own,
    speaking,
)
from pipelab.lessons.why import largest_effect


def _lesson(slug: str):
    return next((lesson for lesson in LESSONS if lesson.slug == slug), None)


def headline(slug: str) -> Callable[[Sequence[object]], float] | None:
    """The lesson's comparison headline (Lesson.headline), or None (the first run's step time ranks)."""
    lesson = _lesson(slug)
    return None if lesson is None else lesson.headline


def verdict(slug: str, claim: str, kind: str, entries: Entries, lang: str = "en") -> Verdict | None:
    """The lesson's verdict on what a page finished (kind: RUN, COMPARISON or SWEEP), its
    texts in ``lang``, or None when there is nothing to judge."""
    lesson = _lesson(slug)
    if not entries or lesson is None or lesson.claim_check is None:
        return None
    with speaking(lang, lesson=slug):
        judged = lesson.claim_check(claim, kind, list(entries))
        if judged.status != UNTESTED and has(lang, own_key(slug, f"claims.tests.{kind}")):
            tests = say_own(f"tests.{kind}")
            if kind == COMPARISON and not lesson.claim_compares:
                # A side comparison (Compare) tests its own claim, not the lesson's: the box says that one.
                return dataclasses.replace(judged, claim=tests[:1].upper() + tests[1:], tests="")
            judged = dataclasses.replace(judged, tests=tests)
        return judged


__all__ = ["BUBBLE_NOISE", "BUBBLE_TOLERANCE", "COMPARISON", "ClaimRow", "EQUAL_COSTS_LABEL", "Entries", "FAILS",
           "HOLDS", "NOISE", "RATIO_NOISE", "RATIO_TOLERANCE", "RUN", "STATUS_KEYS", "SWEEP", "UNTESTED", "Verdict",
           "headline", "idle_ms", "largest_effect", "verdict"]
