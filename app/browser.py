"""Which browser is this? A random id kept in a cookie, so "My runs" needs no account.

Why a cookie: Streamlit's session ends with every reload, and its query parameters are
dropped when a student moves between pages, but a cookie comes with every new session's
websocket (``st.context.cookies``). Streamlit cannot set one from the server, so the first
session that finds none makes an id, keeps it in ``st.session_state`` at once, and sets the
cookie from a line of JavaScript (``st.html``); the next sessions of that browser read it.
The id only names a browser's list of runs: a run itself is opened by its own link.
"""

from __future__ import annotations

import secrets

import streamlit as st

COOKIE = "pipelab_browser"
MAX_AGE_S = 365 * 24 * 3600
_STATE_KEY = "pipelab:browser-id"


def valid_browser_id(text) -> bool:
    return isinstance(text, str) and len(text) == 22 and all(c.isalnum() or c in "-_" for c in text)


def browser_id() -> str:
    """This browser's id: from the session, else the cookie, else a new one."""
    known = st.session_state.get(_STATE_KEY)
    if known:
        return known
    cookie = st.context.cookies.get(COOKIE)
    known = cookie if valid_browser_id(cookie) else secrets.token_urlsafe(16)
    st.session_state[_STATE_KEY] = known
    return known


def remember() -> None:
    """Set the cookie when this session's browser did not send it (every script run calls
    this; it draws nothing once the cookie is there)."""
    known = browser_id()
    if st.context.cookies.get(COOKIE) != known:
        st.html(f"<script>document.cookie = '{COOKIE}={known}; max-age={MAX_AGE_S}; path=/; SameSite=Lax';</script>",
                unsafe_allow_javascript=True)
