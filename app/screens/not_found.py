"""An address that names no page ("/no-such-page", "/instructor" on a server without an
instructor's token): said so in one line, with the course's lessons linked, each with its claim.

app/navigation.py decides when an address is unknown (``unknown_address``); Streamlit itself
would open the default page, the course overview, as if the student had asked for it."""

from __future__ import annotations

import streamlit as st

from pipelab.app.i18n import t
from pipelab.app.screens.course_overview import lesson_links


def render(address: str, lesson_pages: list) -> None:
    """``address``: the path asked for, without its "/" ("" when the request named only a page
    hash); ``lesson_pages``: the lessons' st.Page objects, in course order (app/navigation.py)."""
    st.title(t("not_found.title"))
    st.error(t("not_found.text", path=address) if address else t("not_found.text_unknown"))
    st.subheader(t("not_found.course"))
    lesson_links(lesson_pages)


__all__ = ["render"]
