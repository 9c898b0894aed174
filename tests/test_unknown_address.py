"""An address no page has says so, in the page's language, and links the course (every lesson,
with its claim) instead of silently opening lesson 1; the root and every page's address still
open their page."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash
from test_app import MAIN

from pipelab.app.navigation import unknown_address
from pipelab.lessons import LESSONS, i18n
from tests.app_pages import switch, switch_to


def open_address(path: str, lang: str | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    if lang:
        at.query_params["lang"] = lang
    at.run()
    switch_to(at, path)
    if lang:
        at.query_params["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    return at


def links(at: AppTest) -> list[str]:
    return [link.proto.label for link in at.get("page_link")]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_unknown_address_says_so_and_links_every_lesson(lang):
    at = open_address("no-such-page", lang)
    assert [t.value for t in at.title] == [i18n.text(lang, "not_found.title")]
    assert [e.value for e in at.error] == [i18n.text(lang, "not_found.text_unknown")]
    titles = [f"{lesson.number}. {i18n.text(lang, f'lesson.{lesson.slug}.title') if lang == 'zh' else lesson.title}"
              for lesson in LESSONS]
    assert links(at) == titles
    claims = {c.value for c in at.caption}
    assert all((i18n.text(lang, f"lesson.{lesson.slug}.claim") if lang == "zh" else lesson.claim) in claims
               for lesson in LESSONS)
    assert not any(b.key and b.key.endswith(":main:start") for b in at.button), "no lesson was opened"


def test_the_instructor_page_without_a_token_is_not_found(monkeypatch):
    monkeypatch.delenv("PIPELAB_INSTRUCTOR_TOKEN", raising=False)
    at = open_address("instructor")
    assert [t.value for t in at.title] == ["Page not found"]


def test_a_rerun_of_the_not_found_view_stays_on_it_and_a_link_leaves_it():
    at = open_address("no-such-page")
    at.sidebar.radio(key="course:lang_switch").set_value("zh").run()
    assert [t.value for t in at.title] == [i18n.text("zh", "not_found.title")], "the language switch kept the view"
    switch(at, LESSONS[1].slug).run()
    assert at.title[0].value.startswith("2. ")


def test_the_overviews_link_leaves_the_not_found_view():
    """The overview shares the root's page hash with the not-found view: its link in the
    sidebar (same hash, same language) opens the overview, not the not-found view again."""
    at = open_address("no-such-page")
    switch_to(at, "home").run()
    assert [t.value for t in at.title] == [i18n.text("en", "overview.title")] and not at.error


def test_the_root_and_every_lesson_still_open_their_page():
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert [t.value for t in at.title] == [i18n.text("en", "overview.title")] and not at.error
    for lesson in LESSONS:
        switch_to(at, lesson.slug).run()
        assert at.title[0].value.startswith(f"{lesson.number}. "), lesson.slug


# ---- the routing rule, as the browser asks (by address on a first load, by page hash after) -------

def _pages():
    """What unknown_address reads of an st.Page: its address and its hash (Streamlit's own)."""
    return [SimpleNamespace(url_path=path, _script_hash=calc_hash(path)) for path in ("home", "naive", "gpipe")]


@pytest.mark.parametrize("intended_hash, intended_name, unknown", [
    ("", "", None),                       # the root
    (None, None, None),
    ("", "gpipe", None),                  # a page's address
    ("", "no-such-page", "no-such-page"),
    ("", "instructor", "instructor"),     # not a page on a server without a token
    ("deadbeef", "", ""),                 # a hash of no page: unknown, address not known
    ("deadbeef", "no-such-page", "no-such-page"),
])
def test_unknown_address(intended_hash, intended_name, unknown):
    assert unknown_address(_pages(), intended_hash, intended_name) == unknown


def test_a_page_hash_is_known():
    pages = _pages()
    assert unknown_address(pages, pages[2]._script_hash, "") is None


def _kept(address: str) -> str:
    def page(address):
        from pipelab.app.screens.not_found import keep_address
        keep_address(address)
    at = AppTest.from_function(page, args=(address,)).run()
    assert not at.exception, at.exception
    return " ".join(element.proto.body for element in at.get("html"))


@pytest.mark.parametrize("address, shown", [
    ("nowhere", '"/nowhere" + location.search'),
    ("a/b", '"/a/b" + location.search'),
    ("x</script><script>alert(1)", '"/x\\u003c/script>\\u003cscript>alert(1)" + location.search'),
])
def test_the_asked_for_address_is_put_back_in_the_address_bar(address, shown):
    """The walk (issue 47): the page said "no page at /nowhere" while the address bar read "/",
    Streamlit's default page's, so a reload opened the overview. The address stays, escaped."""
    script = _kept(address)
    assert f"history.replaceState(history.state, '', {shown});" in script
    assert script.count("</script>") == 1
