"""One stored run as the lists, exports and pages see it: its id, who ran it, its settings and
headline figures (``StoredRun``), and what of a RunResult is kept beside the result itself.

The SQLite file that keeps them is app/runner/storage.py. No Streamlit, no SQLite here."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field

from pipelab.lessons.i18n import DEFAULT as ENGLISH
from pipelab.lessons.i18n.run_label import stored_label_text

RUN_ID = re.compile(r"[A-Za-z0-9_-]{12}")
LEGACY_HEADLINE_KEYS = ("reused from",)
"""Headline keys older servers stored and none writes now: "reused from" named the run a cached
answer repeated, when the runner still answered an identical run from its cache."""


def new_run_id() -> str:
    return secrets.token_urlsafe(9)  # 12 characters of [A-Za-z0-9_-]


def valid_run_id(text: str | None) -> bool:
    """Only ids of the form new_run_id makes: nothing else reaches a query."""
    return isinstance(text, str) and RUN_ID.fullmatch(text) is not None


@dataclass(frozen=True)
class StoredRun:
    """One stored run without its result (what lists and exports show)."""

    id: str
    created: float
    """Seconds since the epoch."""
    owner: str
    lesson: str
    label: str
    """As stored: a RunLabel's stored form (lessons/i18n/run_label.py) or plain text."""
    settings: dict
    headline: dict
    context: dict = field(default_factory=dict)
    """What the page knew when Run was pressed, so any page that shows the run later can say
    its verdict (RunContext's keys: kind, batch, index, predictions); {} for runs stored before."""

    def label_in(self, lang: str) -> str:
        """The label in ``lang``, whichever language the run was started in (plain: as stored)."""
        return stored_label_text(lang, self.label)

    def row(self, lang: str = ENGLISH) -> dict:
        """Flat, for tables and CSV: settings and headline figures as columns, the label in
        ``lang`` (English by default: exports read the same whoever started the run)."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.created))
        return {"run": self.id, "time": when, "lesson": self.lesson, "label": self.label_in(lang),
                **{f"setting {k}": v for k, v in self.settings.items()}, **self.headline}


KIND, BATCH, INDEX, PREDICTIONS = "kind", "batch", "index", "predictions"
"""A stored run's context: the verdict's kind (pipelab.lessons.claims RUN, COMPARISON or SWEEP);
the id every run of its button's batch shares (a comparison's verdict judges them together)
and its place in it; the predictions locked in before it ran ({"knobs": {...}, "values":
{question id: value}}), or None."""


def run_context(kind: str, batch: str, index: int, predictions: dict | None = None) -> dict:
    """A stored run's context, JSON-ready."""
    return {KIND: kind, BATCH: batch, INDEX: index, PREDICTIONS: predictions}


SETTING_KEYS = ("schedule", "stages", "microbatches", "chunks", "model", "layers", "hidden", "microbatch_size",
                "steps", "recompute", "stash")


def settings_of(result) -> dict:
    config = result.config.to_dict()
    return {k: config[k] for k in SETTING_KEYS}


def headline_of(result) -> dict:
    """The figures a class compares, rounded as the pages show them."""
    m = result.metrics

    def r(x, digits=3):
        return None if x is None else round(x, digits)
    return {"bubble (device)": r(m.device_bubble_fraction), "bubble (wall)": r(m.wall_bubble_fraction),
            "bubble (simulated)": r(m.simulated_bubble_fraction),
            "bubble (formula)": r(m.formula_bubble_fraction),
            "step ms (device)": r(m.device_step_time_s * 1e3, 2), "step ms (wall)": r(m.wall_step_time_s * 1e3, 2),
            "final loss": r(result.losses[-1], 4) if result.losses else None,
            "grad check max rel diff": None if result.check is None else result.check.grad_max_rel_diff,
            "run seconds": r(m.run_seconds, 2)}
