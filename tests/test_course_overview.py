"""The root, "/", opens the course at a glance (app/screens/course_overview.py): every lesson
linked with its claim, this browser's progress marked, and a link to the lesson to go on with,
in the page's language (issue 47: "/" opened lesson 1 with no overview)."""

from __future__ import annotations

import secrets

import pytest
from streamlit.testing.v1 import AppTest
from test_app import MAIN

from pipelab.app.runner.runs import get_store
from pipelab.app.screens.course_overview import CHECKED_ICON, NO_CHECKS_ICON, UNCHECKED_ICON, next_lesson
from pipelab.lessons import LESSONS, i18n
from pipelab.lessons.questions import checks_for
from tests.app_pages import switch

WITH_CHECKS = [lesson.slug for lesson in LESSONS if checks_for(lesson.slug)]


def open_root(lang: str = "en", checked: tuple[str, ...] = ()) -> AppTest:
    """The root, from a browser (its cookie's id) whose stored progress has ``checked``."""
    browser_id = secrets.token_urlsafe(16)
    for slug in checked:
        get_store.__wrapped__().set_checked(browser_id, slug, True)  # the server's store, as the app opens it
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.session_state["pipelab:browser-id"] = browser_id  # what app/browser.py reads from the cookie
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    return at


def title_of(lesson, lang: str) -> str:
    return i18n.text(lang, f"lesson.{lesson.slug}.title") if lang == "zh" else lesson.title


def claim_of(lesson, lang: str) -> str:
    return i18n.lesson_claim(lesson, lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_root_is_the_course_at_a_glance(lang):
    at = open_root(lang)
    assert [t.value for t in at.title] == [i18n.text(lang, "overview.title")]
    links = [(link.proto.label, link.proto.icon) for link in at.get("page_link")]
    first = LESSONS[0]
    assert links[0] == (i18n.text(lang, "overview.start", number=1, title=title_of(first, lang)),
                        ":material/arrow_forward:")
    assert links[1:] == [(f"{lesson.number}. {title_of(lesson, lang)}",
                          UNCHECKED_ICON if checks_for(lesson.slug) else NO_CHECKS_ICON) for lesson in LESSONS]
    captions = [c.value for c in at.caption]
    assert all(claim_of(lesson, lang) in captions for lesson in LESSONS)
    assert i18n.text(lang, "overview.progress", done=0, total=len(WITH_CHECKS)) in captions
    assert not any(b.key and b.key.endswith(":main:start") for b in at.button), "no lesson was opened"


def test_the_progress_kept_for_this_browser_is_marked_and_the_next_lesson_linked():
    at = open_root("en", checked=(WITH_CHECKS[0], WITH_CHECKS[2]))
    icons = {link.proto.label: link.proto.icon for link in at.get("page_link")}
    for lesson in LESSONS:
        expected = NO_CHECKS_ICON if lesson.slug not in WITH_CHECKS else \
            CHECKED_ICON if lesson.slug in (WITH_CHECKS[0], WITH_CHECKS[2]) else UNCHECKED_ICON
        assert icons[f"{lesson.number}. {lesson.title}"] == expected, lesson.slug
    second = next(lesson for lesson in LESSONS if lesson.slug == WITH_CHECKS[1])
    assert at.get("page_link")[0].proto.label == f"Go on with lesson {second.number}: {second.title}"
    assert f"2 of {len(WITH_CHECKS)} lessons checked" in " ".join(c.value for c in at.caption)
    assert at.sidebar.get("progress")[0].proto.text == f"2/{len(WITH_CHECKS)} lessons checked"


def test_every_lesson_checked_says_so_instead_of_a_next_lesson():
    at = open_root("zh", checked=tuple(WITH_CHECKS))
    assert [s.value for s in at.success] == [i18n.text("zh", "overview.all_checked")]
    labels = [link.proto.label for link in at.get("page_link")]
    assert labels == [f"{lesson.number}. {title_of(lesson, 'zh')}" for lesson in LESSONS], "no lesson to go on with"
    assert next_lesson(set(WITH_CHECKS)) is None


def test_a_lesson_link_opens_that_lesson():
    at = open_root()
    switch(at, LESSONS[0].slug).run()
    assert at.title[0].value.startswith(f"1. {LESSONS[0].title}")


@pytest.mark.parametrize("checked, index", [((), 0), (tuple(WITH_CHECKS[:3]), 3), (tuple(WITH_CHECKS[1:]), 0)])
def test_the_next_lesson_is_the_first_not_checked(checked, index):
    assert next_lesson(set(checked)) == [i for i, lesson in enumerate(LESSONS) if lesson.slug in WITH_CHECKS][index]
