"""The page's language: ``?lang=zh`` / ``?lang=en`` in the URL, remembered for the session.

The query parameter wins, so a shared link opens in the sender's language; a page without
one keeps the session's choice and writes it back into the URL, so the address bar always
holds a link that reproduces the page. Texts come from pipelab.lessons.i18n (plain data).
"""

from __future__ import annotations

import streamlit as st

from pipelab.engine.errors import message_of
from pipelab.engine.theory.validate import TableWords
from pipelab.lessons import Lesson
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.i18n.run_label import RunLabel

LANGUAGES = catalogs.LANGUAGES
_STATE = "course:lang"


def current_lang() -> str:
    """The language of this script run: the URL's ``lang`` if valid, else the session's, else English."""
    asked = st.query_params.get("lang")
    if asked in LANGUAGES:
        st.session_state[_STATE] = asked
        return asked
    lang = st.session_state.get(_STATE, catalogs.DEFAULT)
    if lang != catalogs.DEFAULT or asked is not None:  # keep the link shareable; drop a bad value
        st.query_params["lang"] = lang
    return lang


def set_lang(lang: str) -> None:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; valid languages: {', '.join(LANGUAGES)}")
    st.session_state[_STATE] = lang
    st.query_params["lang"] = lang


def t(key: str, **values) -> str:
    """The text under ``key`` in the current language, with ``{name}`` filled from ``values``."""
    return catalogs.text(current_lang(), key, **values)


def has_text(key: str) -> bool:
    """True when the current language's catalog has ``key``."""
    return catalogs.has(current_lang(), key)


def title(lesson: Lesson) -> str:
    return catalogs.lesson_title(lesson, current_lang())


def claim(lesson: Lesson) -> str:
    return catalogs.lesson_claim(lesson, current_lang())


def schedule_summary(name: str) -> str:
    """Registered schedule ``name``'s one-line summary in the current language."""
    return catalogs.schedule_summary(current_lang(), name)


def schedule_constraint(name: str) -> str:
    """What registered schedule ``name`` refuses or gives up, in the current language."""
    return catalogs.schedule_constraint(current_lang(), name)


def run_label(label: object) -> object:
    """A page's run label as the page shows it: a RunLabel in the page's language; a schedule's
    id as the page's pickers show it (the id in English, 交错式 1F1B（interleaved）or PipeDream on a
    Chinese page: the walk read "稳态下 pipedream"); anything else (a sweep value) as it is."""
    if isinstance(label, RunLabel):
        return label.text(current_lang())
    if isinstance(label, str) and catalogs.has(catalogs.DEFAULT, f"schedule.said.{label}"):
        return catalogs.schedule_option(current_lang(), label)
    return label


def error_text(error: str | BaseException) -> str:
    """An engine's one-line error (a coded Message, or the exception that carries one) in
    the page's language (pipelab.lessons.i18n.error_text)."""
    message = message_of(error) if isinstance(error, BaseException) else error
    return catalogs.error_text(current_lang(), message)


def table_words() -> TableWords:
    """The words of a schedule table (pipelab.lessons.schedule_table) in the page's language."""
    return TableWords(step=t("table.step"), rank=t("table.rank"), here=t("table.here"))


def progress_text(line: str) -> str:
    """A runner's progress line in the page's language (pipelab.lessons.i18n.progress_text)."""
    return catalogs.progress_text(current_lang(), line)


def lesson_markdown(lesson: Lesson) -> str:
    return catalogs.lesson_markdown(lesson, current_lang())


def extra_markdown(lesson: Lesson) -> str | None:
    return catalogs.extra_markdown(lesson, current_lang())


def language_switch() -> str:
    """A switch in the sidebar; choosing writes the query parameter. Returns the language."""
    lang = current_lang()
    labels = {code: catalogs.text(code, f"lang.{code}") for code in LANGUAGES}

    def chosen() -> None:
        set_lang(st.session_state["course:lang_switch"])

    st.session_state["course:lang_switch"] = lang  # follow the URL when it changed the language
    st.sidebar.radio(t("lang.label"), LANGUAGES, format_func=labels.get, key="course:lang_switch",
                     horizontal=True, on_change=chosen)
    return lang


__all__ = ["LANGUAGES", "claim", "current_lang", "error_text", "has_text", "extra_markdown",
           "language_switch", "lesson_markdown", "progress_text", "run_label", "set_lang", "t", "table_words", "title"]
