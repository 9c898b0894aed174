"""The app's pages and the server-wide runner, set up on every script run of app/main.py."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pipelab.app import browser, i18n, warm_up
from pipelab.app.runner.runs import get_runner
from pipelab.app.screens import course_overview, instructor, lesson_page, not_found, playground
from pipelab.app.views import (
    charts,  # noqa: F401  (plotly and numpy imported before any background thread)
    course,
)
from pipelab.lessons import LESSONS

SCRIPTS = Path(__file__).resolve().parent / "page_scripts"
OTHER_PAGES = (("recap", "recap.py", "nav.recap"), ("glossary", "glossary.py", "nav.glossary"),
               ("papers", "papers.py", "nav.papers"), ("about", "about.py", "nav.about"),
               ("runs", "my_runs.py", "nav.my_runs"), ("instructor", "instructor.py", "nav.instructor"))
"""The pages that are not lessons, after them in the sidebar: (url path, script in page_scripts/,
title's catalog key). The instructor's page is listed only on a server with an instructor token."""

NAV_WRAP_CSS = ("[data-testid=stSidebarNav] [data-testid=stMarkdownContainer], "
                "[data-testid=stSidebarNav] [data-testid=stMarkdownContainer] * "
                "{ white-space: normal; overflow: visible; text-overflow: clip; }")
"""The sidebar's page links wrap onto a second line rather than end in an ellipsis."""

SCREEN_RENDERERS = {"lesson": lesson_page.render_lesson, "playground": playground.render}
"""Each lesson screen (pipelab.lessons.SCREENS; tests/test_lesson_folders.py checks that all are here) ->
the function that draws a lesson's page, given its slug."""


def lesson_pages() -> list[st.Page]:
    """One page per lesson of the catalog, in course order, at /<slug>: a new lesson folder is
    a new page with no edit here."""
    return [st.Page(functools.partial(SCREEN_RENDERERS[lesson.screen], lesson.slug),
                    title=f"{lesson.number}. {i18n.title(lesson)}", url_path=lesson.slug) for lesson in LESSONS]


_NOT_FOUND = "nav:not_found"
"""Session key: (the unknown address this session was last shown as such, in which language), so
the language switch's rerun of that view says it again instead of opening the overview, while
the overview's own link (the same page hash, the same language) opens it."""


def unknown_address(pages: list, intended_hash: str | None, intended_name: str | None) -> str | None:
    """The address asked for when no page of ``pages`` has it ("no-such-page"; "" when the
    request named only an unknown page hash), else None (a page's address, or the root).
    ``intended_*``: what the browser asked for, as Streamlit's pages manager keeps it."""
    if intended_hash:
        return None if any(page._script_hash == intended_hash for page in pages) else (intended_name or "")
    if intended_name:
        return None if any(page.url_path == intended_name for page in pages) else intended_name.strip("/")
    return None


def _asked_for(pages: list) -> str | None:
    """unknown_address for this script run's request; when it is unknown, the request is
    turned into one for the default page, so that Streamlit does not also pop up its own
    English "Page not found" box, which says it runs the main page (this page says it instead)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return None
    manager = ctx.pages_manager
    missing = unknown_address(pages, manager.intended_page_script_hash, manager.intended_page_name)
    if missing is not None:
        manager.set_script_intent("", "")
    return missing


# The server's event loop answers every request (/_stcore/health included) but must win the
# GIL from up to one script thread per session. Asked to drop the GIL every 1 ms instead of
# Python's 5 ms, those threads let it in sooner: tests/test_load.py's slowest health poll
# (many sessions loading and running lessons at once) fell several-fold.
sys.setswitchinterval(0.001)


def main() -> None:
    st.set_page_config(page_title="PipeLab", page_icon="🧪", layout="wide")
    i18n.language_switch()  # ?lang=zh / ?lang=en, kept in the URL
    course.progress_sidebar()
    pages = lesson_pages()
    pages += [st.Page(str(SCRIPTS / script), title=i18n.t(title_key), url_path=url) for url, script, title_key in
              OTHER_PAGES if url != "instructor" or instructor.configured_token()]
    browser.remember()
    # The root, "/": the course at a glance (every lesson, its claim, this browser's progress).
    # Streamlit serves its default page at "/" only, so no lesson is the default: a lesson
    # made one answered "Page not found" at its own address.
    home = st.Page(functools.partial(course_overview.render, pages[:len(LESSONS)]), title=i18n.t("nav.overview"),
                   url_path="home", default=True)
    # An address no page has: Streamlit falls back to the default page, which would open the
    # overview as if asked for; say instead that the page does not exist, and link the course.
    missing = _asked_for([home, *pages])
    # Every page listed whole: folded, Streamlit hid My runs and About behind its own "View 3
    # more", a string it says in English on every page, the Chinese ones too.
    page = st.navigation([home, *pages], expanded=True)
    # Each page's whole title in the sidebar: Streamlit cuts a link to one line with an ellipsis
    # ("4. 1F1B (PipeDream-Flush): same bu…" in a 1280-px window); it wraps instead. In the
    # sidebar, where the empty element it adds sits below the language switch.
    st.sidebar.html(f"<style>{NAV_WRAP_CSS}</style>")
    shown = st.session_state.get(_NOT_FOUND)
    if missing is None and page is home and shown is not None and shown[1] != i18n.current_lang():
        missing = shown[0]  # the language switch's rerun of that view (home's hash): still not found
    if missing is not None:
        st.session_state[_NOT_FOUND] = (missing, i18n.current_lang())
        not_found.render(missing, pages[:len(LESSONS)])
    else:
        st.session_state.pop(_NOT_FOUND, None)
        page.run()
    warm_up.browser_code()  # after the page, so Run is drawn first
    # The first visitor starts the server-wide runner, which warms the engine (a forkserver
    # importing torch, one tiny run): after the page is drawn, so the two do not share the
    # cores while the first visitor waits for Run.
    get_runner()
