"""The image, for real: built once, run as a class would run it, in a real browser.

Skipped, with the reason, where no Docker engine answers (bin/test starts one when run as
root, with bin/docker-ready). The container uses the host's network: it listens on a free
port of 127.0.0.1, and its health check is the image's own, pointed at that port.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from bench.browser_steps import CHART, IDLE, click_run
from pipelab.lessons import LESSONS
from tests.docker_image import docker, engine_problem, pip_build_args, processes_of, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
BASE = "python:3.11-slim"
TAG = "pipelab:test"
STOP_LIMIT_S = 10.0
# A classroom's limits (room for every lesson's defaults), and one run at every one of them that
# sizes shared buffers (devices, micro-batches held at once by GPipe, width, rows; not depth):
# Docker's /dev/shm stays at its 64 MB default.
LIMITS = {"PIPELAB_MAX_STAGES": "8", "PIPELAB_MAX_MICROBATCHES": "16", "PIPELAB_MAX_HIDDEN": "1024",
          "PIPELAB_MAX_MICROBATCH_SIZE": "128", "PIPELAB_MAX_LAYERS": "16", "PIPELAB_MAX_STEPS": "6"}
LARGEST_RUN = ["--schedule", "gpipe", "--stages", "8", "--microbatches", "16", "--hidden", "1024",
               "--microbatch-size", "128", "--layers", "8", "--steps", "3", "--model", "mlp"]

pytestmark = pytest.mark.slow  # builds and runs an image


@pytest.fixture(scope="module", autouse=True)
def docker_engine():
    """Skip the module, with the reason, where no image can be built (asked when its first
    test runs, not at import: the fast tier collects this module and starts no process)."""
    problem = engine_problem(BASE)
    if problem:
        pytest.skip(problem)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def image():
    started = time.monotonic()
    with pip_build_args() as build_args:
        command = ["docker", "build", "--network=host", "--force-rm", "-q", *build_args, "-t", TAG, str(ROOT)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, result.stderr[-3000:]
    print(f"\ndocker build: {time.monotonic() - started:.0f} s")
    return TAG


@pytest.fixture(scope="module")
def container(image):
    """(name, id, url): the image's command on a free port, runs kept in a named volume."""
    name, volume, port = f"pipelab-test-{os.getpid()}", f"pipelab-test-data-{os.getpid()}", free_port()
    health = docker("inspect", "-f", "{{json .Config.Healthcheck.Test}}", image).stdout
    health_cmd = re.search(r'"(import urllib.*?)"\]', health).group(1).replace("8501", str(port))
    env = [arg for key, value in LIMITS.items() for arg in ("-e", f"{key}={value}")]
    container_id = docker("run", "-d", "--name", name, "--network=host", "-v", f"{volume}:/data", *env,
                          "--health-cmd", f'.venv/bin/python -c "{health_cmd}"', "--health-interval", "1s",
                          "--health-start-period", "60s", image,
                          "bin/serve", "--server.address=127.0.0.1", f"--server.port={port}").stdout.strip()
    url = f"http://127.0.0.1:{port}"
    try:
        print(f"healthy after {wait_healthy(name, url):.1f} s")
        yield name, container_id, url
    finally:
        docker("rm", "-f", name, check=False)
        docker("volume", "rm", "-f", volume, check=False)


def stop(name: str, container_id: str) -> float:
    """docker stop; asserts the app ended on SIGTERM within the limit and left no process."""
    started = time.monotonic()
    docker("stop", "-t", str(int(STOP_LIMIT_S)), name, timeout=60)
    took = time.monotonic() - started
    code = docker("inspect", "-f", "{{.State.ExitCode}}", name).stdout.strip()
    assert took < STOP_LIMIT_S and code != "137", f"stop took {took:.1f} s, exit code {code} (137: killed)"
    assert processes_of(container_id) == [], "processes left after docker stop"
    return took


def run_lesson(browser, url: str, path: str = LESSONS[0].slug) -> str:
    """Open a lesson, press Run, wait for the measured timeline; the kept run's id."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{url}/{path}")
        click_run(page, chart_timeout_s=120, idle_timeout_s=60)
        link = page.locator("a[href*='runs?run=']").first
        link.wait_for(timeout=10_000)
        assert page.locator("[data-testid=stException]").count() == 0
        cookies = {c["name"] for c in page.context.cookies()}
        assert "_streamlit_xsrf" in cookies, "XSRF protection is on in the image (its cookie is set)"
        return link.get_attribute("href").split("run=")[1]
    except Exception:
        page.screenshot(path="/tmp/docker-failed.png", full_page=True)
        raise
    finally:
        page.close()


@pytest.mark.timeout(1500)  # the image's build (a few minutes when its venv layer is not cached) counts too
def test_image_runs_lessons_keeps_runs_across_restarts_and_stops_cleanly(container, chromium_browser):
    name, container_id, url = container
    run_id = run_lesson(chromium_browser, url)

    shm = docker("exec", name, "df", "-k", "/dev/shm").stdout.splitlines()[-1].split()
    assert int(shm[1]) == 65536, f"/dev/shm is Docker's default 64 MB: {shm}"
    largest = docker("exec", name, ".venv/bin/python", "-m", "pipelab", "run", *LARGEST_RUN, timeout=300)
    assert "loss per step" in largest.stdout and "message slots per device" in largest.stdout, largest.stdout[-1500:]

    stop(name, container_id)
    docker("start", name)
    wait_healthy(name, url)
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{url}/runs?run={run_id}")
        page.wait_for_selector(CHART, timeout=60_000)
        assert run_id in page.locator("[data-testid=stMain]").inner_text()
    finally:
        page.close()

    # Stopped while a run computes: the ranks go with the server, within the limit.
    page = chromium_browser.new_page()
    try:
        page.goto(f"{url}/gpipe")
        page.wait_for_selector(IDLE, timeout=60_000)
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_text("running:").first.wait_for(timeout=60_000)
        assert len(processes_of(docker("inspect", "-f", "{{.Id}}", name).stdout.strip())) > 2
        print(f"docker stop during a run: {stop(name, container_id):.1f} s")
    finally:
        page.close()
