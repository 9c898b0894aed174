"""Which of a lesson's claim-check rows carries its headline: what bench/lesson_headlines.py
(figure 7) measures and reports for the lesson, declared in the lesson's own folder."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HeadlineRow:
    kind: str
    """Which of the page's runs tests the claim: lessons.verdict.RUN, COMPARISON or SWEEP."""
    quantity: str
    """The check's rows whose quantity starts with this carry the headline."""
    target: str
    """The check's threshold in words; the lesson's claim.py is where it is applied."""
