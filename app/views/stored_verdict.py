"""A stored run shown as its lesson page showed it: the claim, the verdict and the predictions it
was made with, then the run. Used wherever a run is shown again (a shared link, My runs, the
instructor's page).

Nothing is judged anew here beyond calling the lesson's own check: the verdict is
pipelab.lessons.claims.verdict on the runs of the stored run's batch (a comparison is judged on
all its runs), drawn by verdict_box, and the predictions by the course's report.
"""

from __future__ import annotations

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner.storage import RunStore
from pipelab.app.runner.stored_run import KIND, PREDICTIONS, StoredRun
from pipelab.app.views import course, results
from pipelab.lessons import LESSONS, claims

NO_PREDICTION = {"knobs": None, "values": {}}


def batch_entries(store: RunStore, run: StoredRun, result, batch: list[StoredRun]) -> list[tuple[str, object]]:
    """The (label, result) pairs of ``run``'s batch (``store.batch(run)``), in the order its page
    ran them (labels in the page's language); ``result`` is ``run``'s own, already loaded."""
    lang = i18n.current_lang()
    entries = []
    for other in batch:
        loaded = result if other.id == run.id else store.load(other.id)
        if loaded is not None:
            entries.append((other.label_in(lang), loaded))
    return entries


def stored_verdict(store: RunStore, run: StoredRun, result, batch: list[StoredRun]):
    """(verdict, the (label, result) pairs it judged) for a stored run of ``batch``
    (``store.batch(run)``), or (None, []) for a run no lesson's claim judges (a playground's
    custom schedule, an extra's run, a run stored before runs kept their context)."""
    lesson = next((lesson for lesson in LESSONS if lesson.slug == run.lesson), None)
    kind = run.context.get(KIND)
    if lesson is None or kind is None:
        return None, []
    entries = batch_entries(store, run, result, batch)
    return claims.verdict(lesson.slug, i18n.claim(lesson), kind, entries, lang=i18n.current_lang()), entries


def batch_note(run: StoredRun, batch: list[StoredRun]) -> str | None:
    """For a run that was one of several one click started (a comparison, ``batch``): that the
    verdict shown with it judges them together, with a link to each of the others; None for a
    run of its own."""
    others = [other for other in batch if other.id != run.id]
    if not others:
        return None
    lang = i18n.current_lang()
    links = t("results.list_sep").join(f"[{other.label_in(lang)}](runs?run={other.id})" for other in others)
    return t("runs.batch_note", count=len(others) + 1, links=links)


def stored_run_view(store: RunStore, run: StoredRun, result, key: str) -> None:
    """The claim, the verdict and the predictions the run was made with, then the run itself."""
    batch = store.batch(run)  # one query for the verdict and the note
    verdict, entries = stored_verdict(store, run, result, batch)
    note = batch_note(run, batch) if verdict is not None else None
    if note is not None:  # the verdict below is the comparison's, not this one run's
        st.caption(note)
    lesson = next((lesson for lesson in LESSONS if lesson.slug == run.lesson), None)
    report = None
    kind = run.context.get(KIND)
    if verdict is not None and lesson is not None and kind != claims.SWEEP:  # a sweep's page asks no prediction
        first = entries[0][1] if entries else result  # the lesson's own run: the page's report reads it
        stored = course.from_stored(run.context.get(PREDICTIONS)) or NO_PREDICTION

        def report() -> None:
            course.prediction_report(lesson, lesson.defaults, first, entries if kind == claims.COMPARISON else None,
                                     stored=stored)
    results.run_view(result, key=key, verdict=verdict, after_verdict=report)


__all__ = ["batch_entries", "batch_note", "stored_run_view", "stored_verdict"]
