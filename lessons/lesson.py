"""A lesson's catalog entry: what its page teaches, its claim, the runs it offers, and its parts.

Plain data, no Streamlit and no torch. Each lesson is a folder, lessons/<name>/, whose
``__init__.py`` defines ``LESSON``, a Lesson; the catalog (pipelab.lessons.registry) finds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipelab.engine.schedules import get_schedule_info
from pipelab.lessons.extra_kinds import Extra
from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import KNOB_NAMES, Knobs
from pipelab.lessons.own_keys import asked_by, shown_by

if TYPE_CHECKING:
    from pipelab.lessons.predictions import Prediction
    from pipelab.lessons.self_checks import Check
    from pipelab.lessons.verdict import Verdict

SCREENS = ("lesson", "playground")
"""The app's page layouts (pipelab.app.navigation): the common lesson page, or the
playground's own (custom schedules)."""


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """A second run shown beside the lesson's own, e.g. 1F1B next to GPipe."""

    label: str
    """Legend text, e.g. "GPipe (same m)"."""
    overrides: dict
    """Knob name -> value applied on top of the lesson's defaults (or the student's form)."""


@dataclass(frozen=True, kw_only=True)
class Lesson:
    slug: str
    """URL-safe id, e.g. "gpipe"."""
    number: int
    """Position in the course, 1-based."""
    title: str
    claim: str
    """The lesson's main checkable claim in one sentence."""
    defaults: Knobs
    schedules: Sequence[str]
    """Schedules the student may pick on this page (registered names); must include
    defaults.schedule. SCHEDULES offers every registered one."""
    comparisons: tuple[Comparison, ...] = ()
    sweep: dict | None = None
    """{"knob": name, "values": [...]}: run the lesson once per value and plot against theory."""
    editable: tuple[str, ...] = ("stages", "microbatches", "model", "layers", "hidden")
    """Knobs shown on the run form; the rest stay at their defaults."""
    claim_compares: bool = False
    """The claim is a comparison (interleaved against 1F1B, say): Run runs the lesson's
    comparisons with it, side by side (engine/runtime/paired.py), and judges them; one run alone
    cannot test it."""
    example_schedule: str = ""
    """Text prefilled in the custom-schedule box (playground only), after a comment line
    that says what it is in the page's language (``playground.example_comment``)."""
    claim_check: Callable[[str, str, Sequence], Verdict] | None = None
    """Does the claim hold in what a page finished? (claim, kind, (label, result) pairs) ->
    a pipelab.lessons.verdict.Verdict; the lesson's own claim.py (pipelab.lessons.claims.verdict)."""
    headline: Callable[[Sequence[object]], float] | None = None
    """The figure a comparison's rounds are ranked by (engine/runtime/paired.py: the page shows
    the round of the median one), from one round's results in the comparison's order; None:
    the first run's step time ranks."""
    headline_row: HeadlineRow | None = None
    """Which row of the claim check carries the lesson's headline, for the benchmarks' figure 7
    (bench/lesson_headlines.py); None: the lesson has no figure-7 row (the playground's claim is
    figure 2's)."""
    predictions: tuple[Prediction, ...] = ()
    """Questions asked before Run (pipelab.lessons.predictions.Prediction), in page order."""
    checks: tuple[Check, ...] = ()
    """Questions at the end of the page (pipelab.lessons.self_checks.Check), in page order."""
    extras: tuple[Extra, ...] = ()
    """What the page shows beyond the common views (pipelab.lessons.extra_kinds), in page order."""
    screen: str = "lesson"
    """How the app draws the page: one of SCREENS."""
    folder: Path | None = None
    """The lesson's folder (its texts: en.md, zh.md, extra/, en.json, zh.json); set when the
    catalog registers it (pipelab.lessons.registry)."""

    def __post_init__(self) -> None:
        # Catch typos in the catalog at import time rather than in a student's browser.
        for name in self.schedules:
            get_schedule_info(name)  # ScheduleError listing the registered names
        for name in self.editable:
            if name not in KNOB_NAMES:
                raise ValueError(f"lesson {self.slug}: editable knob {name!r} unknown; valid: {', '.join(KNOB_NAMES)}")
        for comparison in self.comparisons:
            self.defaults.with_overrides(comparison.overrides).check()
        if self.sweep is not None:
            for value in self.sweep["values"]:
                self.defaults.with_overrides({self.sweep["knob"]: value}).check()
        self.defaults.check()
        if self.screen not in SCREENS:
            raise ValueError(f"lesson {self.slug}: screen {self.screen!r} unknown; valid: {', '.join(SCREENS)}")
        # The folder writes its questions and extras without its own name; the lesson puts its
        # slug in, so a copy of the folder under another slug has names of its own.
        object.__setattr__(self, "predictions", tuple(asked_by(q, self.slug) for q in self.predictions))
        object.__setattr__(self, "checks", tuple(asked_by(c, self.slug) for c in self.checks))
        object.__setattr__(self, "extras", tuple(shown_by(extra, self.slug) for extra in self.extras))

    def text(self) -> str:
        """The lesson's English markdown, read from its folder."""
        return (self.folder / "en.md").read_text(encoding="utf-8")

    def comparison_knobs(self, base: Knobs | None = None) -> tuple[tuple[str, Knobs], ...]:
        """(label, knobs) for each comparison, applied on ``base`` (the student's form) or the defaults."""
        base = base or self.defaults
        return tuple((c.label, base.with_overrides(c.overrides)) for c in self.comparisons)

    def sweep_knobs(self, base: Knobs | None = None) -> tuple[tuple[object, Knobs], ...]:
        """(value, knobs) for each point of the sweep; empty if the lesson has none."""
        if self.sweep is None:
            return ()
        base = base or self.defaults
        return tuple((v, base.with_overrides({self.sweep["knob"]: v})) for v in self.sweep["values"])


__all__ = ["Comparison", "Lesson", "SCREENS"]
