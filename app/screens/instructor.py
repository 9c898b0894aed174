"""The instructor's view of a class: every stored run, filtered by lesson, as CSV or JSON.

Shown only after the token set in PIPELAB_INSTRUCTOR_TOKEN is typed in: compared in constant
time (hmac.compare_digest), kept in this session only, never printed or logged.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import os

import streamlit as st

from pipelab.app.i18n import current_lang, error_text, t
from pipelab.app.runner.runs import get_store
from pipelab.app.runner.stored_run import StoredRun
from pipelab.app.screens.my_runs import opened, shown_columns, title
from pipelab.app.views.stored_verdict import stored_run_view
from pipelab.lessons.i18n import DEFAULT as ENGLISH

TOKEN_ENV = "PIPELAB_INSTRUCTOR_TOKEN"
ALL = ""  # the lesson filter's "all lessons" (no lesson has an empty slug)


def configured_token() -> str | None:
    return os.environ.get(TOKEN_ENV) or None


def token_matches(typed: str | None, token: str | None) -> bool:
    """False unless a token is configured and ``typed`` equals it (constant time)."""
    if not token or not typed:
        return False
    return hmac.compare_digest(typed.encode(), token.encode())


def pseudonym(owner: str) -> str:
    """Tells students' browsers apart without handing out the ids that list their runs."""
    return hashlib.sha256(owner.encode()).hexdigest()[:8]


def rows(runs: list[StoredRun], lang: str = ENGLISH) -> list[dict]:
    """One row a run, its label in ``lang`` (English in the exports, whoever started the run)."""
    return [{**r.row(lang), "browser": pseudonym(r.owner)} for r in runs]


def to_csv(runs: list[StoredRun]) -> str:
    rows_ = rows(runs)
    columns = list(dict.fromkeys(k for row in rows_ for k in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows_)
    return out.getvalue()


def to_json(runs: list[StoredRun]) -> str:
    return json.dumps([{"id": r.id, "created": r.created, "browser": pseudonym(r.owner), "lesson": r.lesson,
                        "label": r.label_in(ENGLISH), "settings": r.settings, "headline": r.headline}
                       for r in runs], indent=1)


def render() -> None:
    st.title(t("instructor.title"))
    token = configured_token()
    if token is None:
        st.info(t("instructor.off", env=TOKEN_ENV))
        return
    typed = st.text_input(t("instructor.token"), type="password", key="instructor:token")
    if not token_matches(typed, token):
        if typed:
            st.error(t("instructor.wrong_token"))
        return
    store = get_store()
    if store.notice:
        st.warning(error_text(store.notice))
    lessons = store.lessons()
    lesson = st.selectbox(t("instructor.lesson"), [ALL] + lessons, key="instructor:lesson",
                          format_func=lambda x: t("instructor.all_lessons") if x == ALL else x)
    runs = store.all_runs(lesson=None if lesson == ALL else lesson)
    st.caption(t("instructor.caption", count=len(runs), mib=f"{store.stored_bytes() / 2**20:.1f}"))
    st.dataframe(shown_columns(rows(runs, current_lang())), hide_index=True, width="stretch")
    c1, c2, _ = st.columns([1, 1, 4])
    name = f"pipelab-runs-{'all-lessons' if lesson == ALL else lesson}"
    c1.download_button(t("instructor.csv"), to_csv(runs), file_name=f"{name}.csv", mime="text/csv",
                       key="instructor:csv")
    c2.download_button(t("instructor.json"), to_json(runs), file_name=f"{name}.json", mime="application/json",
                       key="instructor:json")
    open_run(store, runs)


def open_run(store, runs: list[StoredRun]) -> None:
    """One run of the list opened as its student saw it: the claim, the verdict, the
    predictions it was made with, the run."""
    by_id = {r.id: r for r in runs}
    chosen = st.selectbox(t("instructor.open"), list(by_id), index=None, key="instructor:open",
                          placeholder=t("instructor.open_placeholder"), format_func=lambda rid: title(by_id[rid]))
    if chosen is None:
        return
    result = opened(store, chosen)
    if result:
        stored_run_view(store, by_id[chosen], result, key=f"instructor:{chosen}")
