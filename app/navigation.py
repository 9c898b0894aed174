"""The app's pages and the server-wide runner, set up on every script run of app/main.py."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

from app import charts  # noqa: F401  (plotly and numpy imported before any background thread)
from app import browser, instructor
from app.runs import get_runner
from lessons import LESSONS

HERE = Path(__file__).resolve().parent
PAGE_FILES = {lesson.slug: f"lesson_pages/{lesson.number}_{lesson.slug.replace('-', '_')}.py" for lesson in LESSONS}


# The server's event loop answers every request (/_stcore/health included) but must win the
# GIL from up to one script thread per session. Asked to drop the GIL every 1 ms instead of
# Python's 5 ms, those threads let it in sooner: in tests/test_load.py (8 sessions loading
# and running lessons at once) the slowest health poll was 0.01-0.06 s, against 0.04-0.13 s
# with 5 ms (3 runs each).
sys.setswitchinterval(0.001)


def main() -> None:
    st.set_page_config(page_title="PipeLab", page_icon="🧪", layout="wide")
    get_runner()  # the first visitor starts the server-wide runner and warms the engine
    pages = [st.Page(str(HERE / PAGE_FILES[lesson.slug]), title=f"{lesson.number}. {lesson.title}",
                     url_path=lesson.slug, default=lesson.number == 1) for lesson in LESSONS]
    pages.append(st.Page(str(HERE / "lesson_pages/8_about.py"), title="About: the clocks", url_path="about"))
    pages.append(st.Page(str(HERE / "lesson_pages/9_my_runs.py"), title="My runs", url_path="runs"))
    if instructor.configured_token():
        pages.append(st.Page(str(HERE / "lesson_pages/10_instructor.py"), title="Instructor", url_path="instructor"))
    browser.remember()
    st.navigation(pages).run()
