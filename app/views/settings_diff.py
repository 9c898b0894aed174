"""A run's settings in words: the line a result is captioned with, and what changed between two
settings (the stale note above results whose form has moved on, a sweep's knob symbol).

Plain text in the page's language (``lang``, default English), no Streamlit: tests call it
without a page."""

from __future__ import annotations

from pipelab.engine.config import RunConfig
from pipelab.engine.schedules import chunked_schedules
from pipelab.lessons.i18n import model_said, schedule_option, text


def settings_text(config: RunConfig, schedule=None, lang: str = "en") -> str:
    """A run's settings in one line, as a student set them."""
    v = schedule.chunks if schedule is not None else config.chunks or 1
    # v only where the schedule has chunks: lessons 1 to 4 come before v exists (lesson 5).
    chunked = v > 1 or config.schedule in chunked_schedules()
    chunks = text(lang, "results.settings_chunks", v=v) if chunked else ""
    line = text(lang, "results.settings", schedule=schedule_option(lang, config.schedule), p=config.stages,
                m=config.microbatches, chunks=chunks, model=model_said(lang, config.model), layers=config.layers,
                hidden=config.hidden, size=config.microbatch_size, steps=config.steps)
    replicas = ""
    if config.data_parallel > 1:  # replicas side by side: m is each one's (RunConfig.microbatches)
        replicas = text(lang, "results.settings_dp", d=config.data_parallel,
                        where=text(lang, f"results.reduce_{config.reduce_at}"))
    if config.replicas and not isinstance(config.replicas, str) and any(r > 1 for r in config.replicas):
        replicas = text(lang, "results.settings_replicas", replicas="-".join(map(str, config.replicas)),
                        workers=sum(config.replicas))
    return (line + replicas + (text(lang, "results.settings_recompute") if config.recompute else "")
            + (text(lang, "results.settings_overlap") if config.overlap_steps else "")
            + (text(lang, "results.settings_torch") if config.runtime == "torch" else ""))


CHANGED = ("schedule", "stages", "data_parallel", "reduce_at", "replicas", "microbatches", "chunks", "model", "layers",
           "hidden", "microbatch_size", "steps", "recompute", "overlap_steps", "stash", "custom_schedule", "runtime")
"""The settings a stale note names when they changed (catalog ``changed.<name>``)."""


def changed_settings(old: RunConfig, new: RunConfig, lang: str = "en") -> str:
    """The knobs that differ, "m 4 -> 8, layers 8 -> 12", or "" when none does."""
    diffs = []
    for name in CHANGED:
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            label = text(lang, f"changed.{name}")
            diffs.append(label if name in ("custom_schedule", "runtime") else f"{label} {a} → {b}")
    return text(lang, "results.list_sep").join(diffs)
