"""A fresh server's first page: seconds from starting the server to the Run button shown.

    PYTHONPATH=. .venv/bin/python bench/first_page.py [--rounds 3]

Each round starts a new server on a free port, as bin/serve does (app/serve.py: the heavy
modules imported before the first session) and as plain ``streamlit run app/main.py``
(each import paid by the first session), and opens lesson 1 at its own address in Debian's chromium,
already running, so its own start is not counted. Reported per round: until /_stcore/health
answers, and until the Run button is visible (Playwright's wait_for).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a script: make "bench" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.app_latency import PLAIN, SERVE, chromium, streamlit_server  # noqa: E402
from bench.json_cli import json_main  # noqa: E402

RUN_BUTTON_TIMEOUT_S = 120


def time_to_run_button(browser, command: tuple[str, ...]) -> dict:
    """{"health_s", "run_s"}: seconds from the server's start until it answers its health
    check, and until lesson 1's page shows Run (the root is the course overview, with no Run)."""
    from pipelab.lessons import LESSONS
    started = time.monotonic()
    with streamlit_server(command=command, timeout=RUN_BUTTON_TIMEOUT_S) as url:
        health = time.monotonic() - started
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            page.goto(f"{url}/{LESSONS[0].slug}")
            page.get_by_role("button", name="Run", exact=True).wait_for(timeout=RUN_BUTTON_TIMEOUT_S * 1000)
            return {"health_s": health, "run_s": time.monotonic() - started}
        finally:
            context.close()


def measure_first_page(rounds: int = 3, log=None) -> dict:
    """Rounds alternate between the two ways of starting, so a busy moment of the host
    falls on both alike."""
    out = {"serve": [], "plain": []}
    with chromium() as browser:
        for i in range(rounds):
            for name, command in (("plain", PLAIN), ("serve", SERVE)):
                out[name].append(time_to_run_button(browser, command))
                if log:
                    log(f"round {i + 1}/{rounds}, {name}: health {out[name][-1]['health_s']:.2f} s, "
                        f"Run shown {out[name][-1]['run_s']:.2f} s")
    for name in ("plain", "serve"):
        out[f"{name}_median_run_s"] = statistics.median(r["run_s"] for r in out[name])
        out[f"{name}_median_after_health_s"] = statistics.median(r["run_s"] - r["health_s"] for r in out[name])
    return out


def main(argv=None) -> int:
    return json_main(__doc__.splitlines()[0], "--rounds", 3, measure_first_page, argv)


if __name__ == "__main__":
    sys.exit(main())
