"""The app in a real browser: every lesson page runs with its defaults and draws a timeline.

Starts ``streamlit run app/main.py`` on a free port and drives Debian's chromium with
Playwright (never ``playwright install``). Skipped without chromium, unless CI is set.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lessons import LESSONS

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = next((p for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium") if os.path.exists(p)), None)
ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
# The measured timeline (each page also shows a theory preview chart before any run).
CHART = "[data-testid=stPlotlyChart]:has-text('Measured') .main-svg"

if CHROMIUM is None:
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed (apt-get install chromium)", pytrace=False)
    pytest.skip("chromium is not installed", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.port", str(port),
                             "--server.headless", "true", "--server.address", "127.0.0.1"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        # The whole process group: streamlit, its forkserver and any rank still alive.
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(5)


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
        # The first lesson is the default page, served at the root.
        page.goto(f"{server}/" if slug == LESSONS[0].slug else f"{server}/{slug}")
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
