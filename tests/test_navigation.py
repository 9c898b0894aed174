"""The app's page list: every lesson from the catalog, then the other pages, each with its script."""

from pipelab.app.navigation import OTHER_PAGES, SCREEN_RENDERERS, SCRIPTS
from pipelab.lessons import LESSONS, i18n


def test_every_other_page_has_its_script_and_a_title_in_both_languages():
    for url, script, title_key in OTHER_PAGES:
        assert (SCRIPTS / script).is_file(), f"{url}: no {SCRIPTS / script}"
        assert i18n.text("en", title_key) and i18n.text("zh", title_key), f"{url}: no title {title_key}"


def test_no_page_address_is_taken_twice():
    addresses = [lesson.slug for lesson in LESSONS] + [url for url, _, _ in OTHER_PAGES]
    assert len(addresses) == len(set(addresses)), addresses


def test_every_page_script_is_listed():
    assert sorted(path.name for path in SCRIPTS.glob("*.py")) == sorted(script for _, script, _ in OTHER_PAGES)


def test_every_lesson_screen_has_a_renderer():
    assert {lesson.screen for lesson in LESSONS} <= set(SCREEN_RENDERERS)
