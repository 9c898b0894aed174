"""A page whose run waits in the server's queue shows its place and an honest estimate of
its wait (the queue place x the median of the latest runs): four students press Run at the
same moment, in one chromium at normal priority, and each page is read at once."""

from __future__ import annotations

import re
import time

import pytest

from bench.app_latency import streamlit_server
from bench.browser_steps import CHART, IDLE
from tests.test_load import CLICK_AT_JS, STATUS_FORMS, lesson_url, set_hidden, status

pytestmark = pytest.mark.slow  # every test here starts processes (engine ranks, a server, a browser or a tool)


@pytest.fixture(scope="module")
def server():
    with streamlit_server(env={"PIPELAB_MAX_CONCURRENT_RUNS": "1"}) as url:
        yield url


def test_waiting_pages_show_their_place_and_wait(server, chromium_browser):
    """Four students press Run at the same moment after one run has finished: the runs queue,
    and a page read while its run waits shows its place and the estimated wait."""
    first = chromium_browser.new_page()
    first.goto(lesson_url(server, "gpipe"))
    first.wait_for_selector(IDLE, timeout=60_000)
    set_hidden(first, 200)
    first.get_by_role("button", name="Run", exact=True).click()
    first.wait_for_selector(CHART, timeout=120_000)  # a finished run: the estimate has a median
    first.close()
    pages = [chromium_browser.new_page() for _ in range(4)]
    try:
        for page, width in zip(pages, (512, 516, 520, 524)):
            page.goto(lesson_url(server, "gpipe"))
            page.wait_for_selector(IDLE, timeout=60_000)
            set_hidden(page, width)
        fire_at = time.time() + 3
        for page in pages:
            page.evaluate(CLICK_AT_JS, fire_at * 1000)
        time.sleep(max(0.0, fire_at - time.time()) + 0.5)
        seen = [status(page) for page in reversed(pages)]  # the last to click wait longest
    finally:
        for page in pages:
            page.close()
    assert all(re.match(STATUS_FORMS, text) for text in seen), seen
    waiting = [text for text in seen if text.startswith("queued")]
    assert waiting and all(re.match(r"queued: position [1-3], about \d+ s to start", text) for text in waiting), seen
