"""The course at a glance, at "/": what PipeLab does, every lesson linked with its claim and
whether this browser has checked it, and a link to the lesson to go on with.

The lessons' list is shared with the page an unknown address opens (app/screens/not_found.py).
The progress is the sidebar's (app/views/course.py), kept per browser with the runs."""

from __future__ import annotations

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.views import course
from pipelab.lessons import LESSONS
from pipelab.lessons.questions import checks_for

CHECKED_ICON = ":material/check_circle:"
UNCHECKED_ICON = ":material/menu_book:"
"""A lesson to read (not a box to tick: that looked like a radio button the link would set)."""
NO_CHECKS_ICON = ":material/science:"
"""A lesson without questions to check (the playground): nothing to tick."""


def lesson_links(lesson_pages: list, checked: set[str] | None = None) -> None:
    """Every lesson linked, in course order, each with its claim under it. ``checked``: the lessons
    this browser has checked, each marked (None: no marks, as the not-found page lists them)."""
    for lesson, page in zip(LESSONS, lesson_pages):
        icon = None
        if checked is not None:
            icon = NO_CHECKS_ICON if not checks_for(lesson.slug) else \
                CHECKED_ICON if lesson.slug in checked else UNCHECKED_ICON
        with st.container(gap=None):  # the claim close under its own link, apart from the next lesson's
            st.page_link(page, label=f"{lesson.number}. {i18n.title(lesson)}", icon=icon)
            st.caption(i18n.claim(lesson))


def next_lesson(checked: set[str]) -> int | None:
    """The index in LESSONS of the first lesson with questions not yet checked; None when all are."""
    return next((i for i, lesson in enumerate(LESSONS) if checks_for(lesson.slug) and lesson.slug not in checked),
                None)


def render(lesson_pages: list) -> None:
    """``lesson_pages``: the lessons' st.Page objects, in course order (app/navigation.py)."""
    checked = set(course.checked_lessons())
    total = sum(1 for lesson in LESSONS if checks_for(lesson.slug))
    st.title(t("overview.title"))
    st.markdown(t("overview.intro"))
    go_on = next_lesson(checked)
    if go_on is None:
        st.success(t("overview.all_checked"))
    else:
        lesson = LESSONS[go_on]
        key = "overview.start" if not checked else "overview.continue"
        with st.container(border=True):
            st.page_link(lesson_pages[go_on], label=t(key, number=lesson.number, title=i18n.title(lesson)),
                         icon=":material/arrow_forward:")
    st.subheader(t("overview.lessons"))
    st.caption(t("overview.progress", done=len(checked), total=total))
    lesson_links(lesson_pages, checked)


__all__ = ["lesson_links", "next_lesson", "render"]
