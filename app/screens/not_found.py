"""An address that names no page ("/no-such-page", "/instructor" on a server without an
instructor's token): said so in one line, with the course's lessons linked, each with its claim.

app/navigation.py decides when an address is unknown (``unknown_address``); Streamlit itself
would open the default page, the course overview, as if the student had asked for it."""

from __future__ import annotations

import json

import streamlit as st

from pipelab.app.i18n import t
from pipelab.app.screens.course_overview import lesson_links


def render(address: str, lesson_pages: list) -> None:
    """``address``: the path asked for, without its "/" ("" when the request named only a page
    hash); ``lesson_pages``: the lessons' st.Page objects, in course order (app/navigation.py)."""
    if address:
        keep_address(address)
    st.title(t("not_found.title"))
    st.error(t("not_found.text", path=address) if address else t("not_found.text_unknown"))
    st.subheader(t("not_found.course"))
    lesson_links(lesson_pages)


def keep_address(address: str) -> None:
    """Put the asked-for address back in the browser's address bar. Streamlit's frontend shows
    the default page's address ("/") once the server ran it, so the page said "no page at
    /nowhere" under an address bar reading "/": a reload or a copied link then opened the overview.
    The path is absolute under the server's base path, the query (``?lang=zh``) kept; the script
    runs after the frontend's own update, so it stays."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    path = "/" + "/".join(part for part in (base, address.strip("/")) if part)
    # A JS string literal that cannot close the script element: the address came from the request.
    target = json.dumps(path).replace("<", "\\u003c")
    st.html(f"<script>history.replaceState(history.state, '', {target} + location.search);</script>",
            unsafe_allow_javascript=True)


__all__ = ["keep_address", "render"]
