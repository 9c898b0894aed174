"""The app's pages and the server-wide runner, set up on every script run of app/main.py."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import streamlit as st

from pipelab.app import browser, i18n, warm_up
from pipelab.app.runner.runs import get_runner
from pipelab.app.screens import instructor, lesson_page, playground
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

SCREEN_RENDERERS = {"lesson": lesson_page.render_lesson, "playground": playground.render}
"""Each lesson screen (pipelab.lessons.SCREENS; tests/test_lesson_folders.py checks that all are here) ->
the function that draws a lesson's page, given its slug."""


def lesson_pages() -> list[st.Page]:
    """One page per lesson of the catalog, in course order, at /<slug>: a new lesson folder is
    a new page with no edit here."""
    return [st.Page(functools.partial(SCREEN_RENDERERS[lesson.screen], lesson.slug),
                    title=f"{lesson.number}. {i18n.title(lesson)}", url_path=lesson.slug) for lesson in LESSONS]


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
    # Streamlit serves its default page at "/" only, so a lesson made the default answered
    # "Page not found" at its own address: the root is a hidden page that opens lesson 1.
    home = st.Page(lambda: st.switch_page(pages[0], query_params=dict(st.query_params)), title="PipeLab",
                   url_path="home", default=True, visibility="hidden")
    # Every page listed whole: folded, Streamlit hid My runs and About behind its own "View 3
    # more", a string it says in English on every page, the Chinese ones too.
    st.navigation([home, *pages], expanded=True).run()
    warm_up.browser_code()  # after the page, so Run is drawn first
    # The first visitor starts the server-wide runner, which warms the engine (a forkserver
    # importing torch, one tiny run): after the page is drawn, so the two do not share the
    # cores while the first visitor waits for Run.
    get_runner()
