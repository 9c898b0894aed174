"""PipeLab classroom app: ``streamlit run app/main.py`` from the repository root."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # so `engine`, `lessons` and `app` import however streamlit is started
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import charts  # noqa: E402,F401  (plotly and numpy imported before any background thread)
from app.runs import get_runner  # noqa: E402
from lessons import LESSONS  # noqa: E402

HERE = Path(__file__).resolve().parent
PAGE_FILES = {lesson.slug: f"lesson_pages/{lesson.number}_{lesson.slug.replace('-', '_')}.py" for lesson in LESSONS}

st.set_page_config(page_title="PipeLab", page_icon="🧪", layout="wide")
get_runner()  # the first visitor starts the server-wide runner and warms the engine
pages = [st.Page(str(HERE / PAGE_FILES[lesson.slug]), title=f"{lesson.number}. {lesson.title}",
                 url_path=lesson.slug, default=lesson.number == 1) for lesson in LESSONS]
pages.append(st.Page(str(HERE / "lesson_pages/8_about.py"), title="About: the clocks", url_path="about"))
st.navigation(pages).run()
