"""The app in a real browser: every lesson page runs with its defaults and draws a timeline.

Starts ``streamlit run app/main.py`` on a free port and drives Debian's chromium with
Playwright (never ``playwright install``). Skipped without chromium, unless CI is set.
"""

from __future__ import annotations

import os

import pytest

from bench.app_latency import ARGS, CHART, CHROMIUM, IDLE, streamlit_server
from lessons import LESSONS

if CHROMIUM is None:
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed (apt-get install chromium)", pytrace=False)
    pytest.skip("chromium is not installed", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def server():
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.mark.parametrize("slug", [lesson.slug for lesson in LESSONS])
def test_lesson_runs_and_draws_a_timeline(server, browser, slug):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{slug}")
        page.wait_for_selector(IDLE, timeout=30_000)
        page.get_by_role("button", name="Run", exact=True).click()
        page.wait_for_selector(CHART, timeout=60_000)
        page.wait_for_selector(IDLE, timeout=30_000)
        first = page.locator("[data-testid=stPlotlyChart]").filter(has_text="Measured").first
        bars = first.locator("g.trace.bars .point path")
        assert bars.count() > 0
        assert page.locator("[data-testid=stException]").count() == 0
        if slug == "gpipe":
            page.set_viewport_size({"width": 1400, "height": 5200})  # the app scrolls inside its own container
            page.wait_for_timeout(1500)
            page.screenshot(path="/tmp/lesson.png", full_page=True)
    except Exception:
        page.screenshot(path=f"/tmp/failed-{slug}.png", full_page=True)
        raise
    finally:
        page.close()


def test_a_lesson_opens_at_its_own_address_and_the_root_opens_lesson_one(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        for path in (LESSONS[0].slug, ""):
            page.goto(f"{server}/{path}")
            page.wait_for_selector(IDLE, timeout=30_000)
            page.get_by_role("button", name="Run", exact=True).wait_for(timeout=30_000)
            assert page.locator("h1").first.inner_text().startswith(f"1. {LESSONS[0].title}")
            assert page.get_by_text("Page not found").count() == 0
    finally:
        page.close()


@pytest.mark.parametrize("slug", ["gpipe", "zero-bubble"])
def test_run_is_on_the_first_screen(server, browser, slug):
    """A student reaches Run without scrolling past the lesson's text (folded above it)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{slug}")
        page.wait_for_selector(IDLE, timeout=30_000)
        box = page.get_by_role("button", name="Run", exact=True).bounding_box()
        assert box["y"] + box["height"] <= 1000, box
    finally:
        page.close()


def test_a_negative_number_says_why_and_run_starts_nothing(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/gpipe")
        page.wait_for_selector(IDLE, timeout=30_000)
        field = page.get_by_role("spinbutton", name="micro-batches m (1–64)")
        field.fill("-3")
        field.press("Enter")
        alert = page.locator("[data-testid=stAlertContentError]")
        alert.wait_for(timeout=15_000)
        text = alert.inner_text().strip()  # streamlit's markdown shows ">=" as "≥"
        assert text.startswith("microbatches must be a whole number") and text.endswith("1, got -3"), text
        page.wait_for_selector(IDLE, timeout=30_000)
        page.get_by_role("button", name="Run", exact=True).click()
        page.wait_for_timeout(2000)
        page.wait_for_selector(IDLE, timeout=30_000)
        assert page.locator("[data-testid=stPlotlyChart]").count() == 0  # no preview, no run
        assert page.locator("[data-testid=stAlertContentError]").count() == 1
    finally:
        page.close()
