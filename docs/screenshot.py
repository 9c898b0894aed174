"""Make the README's screenshot from a real run: docs/lesson.png.

    PYTHONPATH=. .venv/bin/python docs/screenshot.py [--lesson gpipe] [--out docs/lesson.png]

Starts the app on a free port, opens a lesson in Debian's chromium (Playwright, never
``playwright install``), presses Run and waits for the measured timeline, then captures the
page from the verdict down to the measured chart. Nothing in the picture is drawn by hand:
it is what a student sees after one click.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.app_latency import chromium, streamlit_server  # noqa: E402
from bench.browser_steps import click_run  # noqa: E402


def capture(lesson: str, out: str) -> None:
    with streamlit_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 4000})
        page.goto(f"{url}/{lesson}", wait_until="domcontentloaded")
        click_run(page, chart_timeout_s=180, idle_timeout_s=60, idle_after=True)
        page.wait_for_timeout(1000)  # let plotly finish laying out
        # From the run's settings line (the verdict follows it) down to the measured timeline.
        top = page.get_by_text(re.compile(r"^Ran \w")).first.bounding_box()["y"]
        box = page.locator("[data-testid=stPlotlyChart]:has-text('Measured')").first.bounding_box()
        page.screenshot(path=out, full_page=True,
                        clip={"x": 250, "y": top - 20, "width": 1030, "height": box["y"] + box["height"] - top + 60})
    print(f"wrote {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="gpipe")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "lesson.png"))
    args = parser.parse_args(argv)
    capture(args.lesson, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
