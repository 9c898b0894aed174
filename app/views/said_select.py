"""A picker whose options are ids (a schedule's, a model's) shown in the page's words.

Streamlit keeps a select box's choice as the option's shown text, so one widget whose words
change with the language would lose the choice on a switch (the English "interleaved" is no
option of the Chinese box). Each language gets a box of its own, and the choice, as an id,
lives beside them in the session: a switch keeps it. English shows the id itself, so the
English box keeps the plain key that tests and links use.
"""

from __future__ import annotations

from typing import Callable, Sequence

import streamlit as st

from pipelab.app import i18n
from pipelab.lessons.i18n import DEFAULT


def chosen_key(key: str) -> str:
    """Where the choice lives, as an id, whatever the page's language."""
    return f"{key}:chosen"


def chosen(key: str, default: str) -> str:
    """The id chosen in the box ``key`` so far (this run's or an earlier one's), or ``default``."""
    return st.session_state.get(chosen_key(key), default)


def said_selectbox(where, label: str, options: Sequence[str], default: str, key: str,
                   said: Callable[[str, str], str]) -> str:
    """A select box in ``where`` (st or a column) over ``options`` (ids), each shown as
    ``said(lang, id)``; returns the chosen id."""
    lang = i18n.current_lang()
    options = list(options)
    current = chosen(key, default)
    index = options.index(current) if current in options else options.index(default) if default in options else 0
    widget_key = key if lang == DEFAULT else f"{key}:{lang}"
    value = where.selectbox(label, options, index=index, key=widget_key,
                            format_func=lambda option: said(lang, option))
    st.session_state[chosen_key(key)] = value
    return value


__all__ = ["chosen", "chosen_key", "said_selectbox"]
