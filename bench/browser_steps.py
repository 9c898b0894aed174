"""What a student does on a lesson page, as Playwright steps shared by the benchmarks, the
browser tests and the docs' screenshot: wait for the page to settle, press Run, wait for the
measured timeline."""

from __future__ import annotations

import time

IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
# The measured timeline (each page also shows a theory preview chart before any run).
CHART = "[data-testid=stPlotlyChart]:has-text('Measured') .main-svg"


def click_run(page, chart_timeout_s: float, idle_timeout_s: float = 30.0, idle_after: bool = False) -> float:
    """Seconds from clicking Run to the measured timeline drawn. Waits first for the page's
    script to be idle (a click during a rerun can be lost); with ``idle_after``, also for the
    script to finish after the chart, so the rest of the report is on the page."""
    page.wait_for_selector(IDLE, timeout=idle_timeout_s * 1000)
    started = time.monotonic()
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_selector(CHART, timeout=chart_timeout_s * 1000)
    took = time.monotonic() - started
    if idle_after:
        page.wait_for_selector(IDLE, timeout=idle_timeout_s * 1000)
    return took
