"""What a lesson may show beyond the common run, comparison and sweep views: its extras, as data.

A lesson declares its extras in its catalog entry (``Lesson.extras``), each an ``Extra`` of
one of the kinds below with the catalog keys of the texts it shows (its header, title,
caption...). The app draws each kind in its place on any lesson's page
(pipelab.app.views.extras): it decides by kind, never by a lesson's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

EXTRA_KINDS: Mapping[str, tuple[str, ...]] = {
    # A switch under the run form: weight stashing on or off, for the schedules it names.
    "stash_toggle": ("label", "help"),
    # Below a comparison: the weight versions each device kept, per run.
    "weight_versions": ("title", "caption"),
    # Below a comparison: the loss over steps of each run.
    "loss_streams": ("title", "caption"),
    # A section: the DualPipe README's table at the student's p and m, and the four runs.
    "dualpipe_table": ("header", "intro"),
    # A section: bubble against held activations for every synchronous schedule.
    "memory_tradeoff": ("header", "intro"),
    # A section: PipeDream's planner on a model with one heavy layer, and its plans run side by side.
    "split_or_replicate": ("header", "intro"),
}
"""Each kind -> the text roles it needs (catalog keys given by the lesson)."""


@dataclass(frozen=True, kw_only=True)
class Extra:
    kind: str
    """One of EXTRA_KINDS."""
    texts: Mapping[str, str] = field(default_factory=dict)
    """Role (EXTRA_KINDS[kind]) -> catalog key in the lesson's folder, e.g. {"title": "extras.versions_title"};
    qualified with the lesson's slug when the lesson takes it in (pipelab.lessons.own_keys)."""
    schedules: tuple[str, ...] = ()
    """The schedules it applies to, for a kind that applies to some only (stash_toggle)."""
    lesson: str = ""
    """Slug of the lesson that shows it, set by that lesson (its texts' keys are then qualified)."""

    def __post_init__(self) -> None:
        if self.kind not in EXTRA_KINDS:
            raise ValueError(f"extra kind {self.kind!r} unknown; valid kinds: {', '.join(EXTRA_KINDS)}")
        missing = sorted(set(EXTRA_KINDS[self.kind]) - set(self.texts))
        if missing:
            raise ValueError(f"extra {self.kind!r} needs texts for {', '.join(missing)}")

    def key(self, role: str) -> str:
        """The catalog key of this extra's text in ``role``."""
        return self.texts[role]


__all__ = ["EXTRA_KINDS", "Extra"]
