"""My runs: every run this browser started, one opened or two side by side; and the page a
run's link (``runs?run=ID``) opens, which shows that run alone."""

from __future__ import annotations

import streamlit as st

from pipelab.app import browser
from pipelab.app.i18n import current_lang, error_text, t
from pipelab.app.runner.runs import get_store
from pipelab.app.runner.storage import RunStore
from pipelab.app.runner.stored_run import StoredRun, valid_run_id
from pipelab.app.views import results
from pipelab.app.views.stored_verdict import stored_run_view
from pipelab.engine.errors import Message, message_of
from pipelab.engine.results.schema import ResultSchemaError
from pipelab.lessons import KNOB_NAMES
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.i18n import lesson_title, model_said, schedule_said
from pipelab.lessons.registry import get_lesson

RUN_PARAM = "run"
LIST_COLUMNS = ("label", "bubble (device)", "step ms (device)", "setting schedule", "setting stages",
                "setting microbatches", "lesson", "setting model", "time", "run")
"""My runs' list, in this order: which run and its headline numbers first, where a narrow
page shows them without a sideways scroll; the id and time, which a student rarely reads, last."""


OWN_COLUMNS = {"link": "my_runs.col.link", "time": "my_runs.col.time", "lesson": "my_runs.col.lesson",
               "label": "my_runs.col.label",
               "browser": "my_runs.col.browser", "grad check max rel diff": "my_runs.col.grad_check",
               "run seconds": "my_runs.col.run_seconds"}
"""StoredRun.row's columns that the results' tables do not have -> catalog keys."""


def column_name(column: str) -> str:
    """A stored run's table column (StoredRun.row's English key) in the page's language."""
    if column.startswith("setting "):
        name = column.removeprefix("setting ")
        return t("my_runs.col.setting", name=t(f"knob.{name}") if name in KNOB_NAMES else name)
    if column in results.COLUMNS:
        return t(results.COLUMNS[column])
    return t(OWN_COLUMNS[column]) if column in OWN_COLUMNS else column


def shown_columns(rows: list[dict]) -> list[dict]:
    """The rows with their column names in the page's language (CSV and JSON keep English)."""
    return [{column_name(c): v for c, v in row.items()} for row in rows]


LINK = "link"
"""The list's column of each run's share link, beside its label."""


def share_link(run_id: str) -> str:
    """The address that opens a run for anyone on this server: this page with ``?run=ID``
    (shared_run), relative, so it holds under whatever host and base path the server has."""
    return f"runs?{RUN_PARAM}={run_id}"


def lesson_said(slug: str, lang: str) -> str:
    """A stored run's lesson as the course names it in ``lang`` (the walk found the Chinese list
    reading "playground", then "recap"): a lesson's title, another page's sidebar name (the
    recap's), else the slug as stored."""
    try:
        return lesson_title(get_lesson(slug), lang)
    except KeyError:
        key = f"nav.{slug}"
        return catalogs.text(lang, key) if catalogs.has(lang, key) else slug


def label_said(run: StoredRun, lang: str) -> str:
    """A run's label in ``lang``; a plain one that is a schedule's id (a playground run's) is
    named as sentences name that schedule."""
    label = run.label_in(lang)
    return schedule_said(lang, label) if label == run.settings.get("schedule") else label


def list_row(run: StoredRun) -> dict:
    """One run of the list: its label, its share link, then LIST_COLUMNS in order, the lesson,
    schedule and model in the page's language."""
    lang = current_lang()
    row = run.row(lang)
    listed = {c: row.get(c) for c in LIST_COLUMNS}
    listed["lesson"] = lesson_said(run.lesson, lang)
    listed["setting schedule"] = schedule_said(lang, listed["setting schedule"])
    listed["setting model"] = model_said(lang, listed["setting model"])
    listed.pop("label")
    return {"label": label_said(run, lang), LINK: share_link(run.id), **listed}


def share_line(run: StoredRun) -> None:
    """An opened run's share link, as a link (copy it, or open it in a tab of its own)."""
    link = share_link(run.id)
    st.markdown(t("my_runs.share", link=f"[{link}]({link})"))


def title(run: StoredRun) -> str:
    """A run's name in a picker and above its view: label, lesson, p and m, id; in the page's
    language and punctuation (full-width brackets and commas in Chinese)."""
    lang, s = current_lang(), run.settings
    return t("my_runs.run_title", label=label_said(run, lang), lesson=lesson_said(run.lesson, lang),
             p=s["stages"], m=s["microbatches"], run_id=run.id)


def opened(store: RunStore, run_id: str):
    """The stored RunResult, None if there is none, or False after saying in one line why it
    cannot be opened (saved by a newer PipeLab, say: docs/results.md, "Versions")."""
    try:
        return store.load(run_id)
    except ResultSchemaError as err:
        st.error(error_text(Message.of("cannot_open", run_id=run_id, reason=message_of(err))))
        return False


def shared_run(store: RunStore, run_id: str) -> None:
    """The run a link names, and nothing else of this server's."""
    if not valid_run_id(run_id):
        st.error(t("my_runs.bad_link"))
        return
    run = store.get(run_id)
    result = opened(store, run_id) if run else None
    if result is False:
        return
    if result is None:
        st.warning(t("my_runs.not_found", run_id=run_id))
        return
    st.subheader(title(run))
    st.caption(t("my_runs.kept", time=run.row()["time"], run_id=run.id))
    stored_run_view(store, run, result, key=f"stored:{run.id}")


def my_runs(store: RunStore) -> None:
    runs = store.runs_of(browser.browser_id())
    if not runs:
        st.info(t("my_runs.none"))
    else:
        st.dataframe(shown_columns([list_row(r) for r in runs]), hide_index=True, width="stretch",
                     column_config={column_name(LINK): st.column_config.LinkColumn(help=t("my_runs.link_help"))})
    by_id = {r.id: r for r in runs}
    added = st.session_state.setdefault("my-runs:added", [])  # others' runs added in this session
    other = st.text_input(t("my_runs.add"), key="my-runs:other", placeholder=t("my_runs.add_placeholder")).strip()
    if other:
        other_id = other.rsplit("=", 1)[-1]
        found = store.get(other_id) if valid_run_id(other_id) else None
        if found is None:
            st.error(t("my_runs.add_not_found", run_id=repr(other_id)))
        elif found.id not in added:
            added.append(found.id)
    for run_id in added:
        found = by_id.get(run_id) or store.get(run_id)
        if found is not None:
            by_id[run_id] = found
    if not by_id:
        return
    chosen = st.multiselect(t("my_runs.choose"), list(by_id), placeholder=t("my_runs.choose_placeholder"),
                            format_func=lambda rid: title(by_id[rid]), max_selections=2, key="my-runs:chosen")
    loaded = [(title(by_id[rid]), opened(store, rid)) for rid in chosen]
    loaded = [(label, result) for label, result in loaded if result]
    for rid in chosen:
        share_line(by_id[rid])
    if len(loaded) == 1:
        stored_run_view(store, by_id[chosen[0]], loaded[0][1], key=f"stored:{chosen[0]}")
    elif len(loaded) == 2:
        results.comparison_view(loaded, key="stored:compare")


def render() -> None:
    st.title(t("my_runs.title"))
    store = get_store()
    if store.notice:
        st.warning(error_text(store.notice))
    run_id = st.query_params.get(RUN_PARAM)
    if run_id is not None:
        shared_run(store, run_id)
        return
    st.caption(t("my_runs.caption"))
    my_runs(store)
