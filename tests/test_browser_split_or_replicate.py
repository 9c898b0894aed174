"""Lesson 3's section "split or replicate" in a real browser, in English and Chinese: the prediction card, its
button (the runner's job profiles, plans and runs three configurations), the verdict and a row per worker.

Starts the app as bin/serve does and drives Debian's chromium with Playwright (never ``playwright install``).
Skipped without chromium, unless CI is set."""

from __future__ import annotations

import pytest

from bench.browser_steps import IDLE
from pipelab.lessons import i18n

pytestmark = pytest.mark.slow  # a server, a browser and engine ranks


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_section_plans_runs_and_says_its_verdict(app_server, chromium_browser, lang):
    def say(key: str, **values) -> str:
        return i18n.text(lang, key, **values)
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{app_server}/pipedream?lang={lang}")
        page.wait_for_selector(IDLE, timeout=60_000)
        card = page.locator(".st-key-predict-pipedream-split")
        card.get_by_text(say("extras.split_option.replicated", replicated="2-1-1")).click()
        page.wait_for_selector(IDLE, timeout=30_000)
        card.get_by_role("button").click()  # lock it in
        page.get_by_text(say("predict.locked", value=say("extras.split_short.replicated"))).wait_for(timeout=30_000)
        page.wait_for_selector(IDLE, timeout=30_000)
        page.get_by_role("button", name=say("extras.split_button"), exact=True).click()
        said = say("verdict.line", status="", reason="").strip("* ").split("：")[0].split(":")[0]  # "Verdict", "结论"
        verdict = page.locator("[data-testid=stAlert]").filter(has_text=said)
        verdict.first.wait_for(timeout=240_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        statuses = [say(f"verdict.status.{s}") for s in ("holds", "noise", "fails")]
        text = verdict.first.inner_text()
        assert any(status in text for status in statuses) and say("clock.device") in text
        # The replicated run's timeline: stage 0's two workers each have a row.
        chart = page.locator("[data-testid=stPlotlyChart]").filter(has_text="2-1-1")
        for worker in (0, 1):
            assert chart.get_by_text(say("chart.stage_replica", s=0, k=worker)).count() > 0
        assert page.locator("[data-testid=stException]").count() == 0
        assert page.get_by_text(say("extras.split_question")).count() == 1  # the question after the run
    except Exception:
        page.screenshot(path=f"/tmp/failed-split-{lang}.png", full_page=True)
        raise
    finally:
        page.close()
