"""The launcher (app/serve.py): the heavy modules are imported before streamlit serves the
first session, and every flag reaches streamlit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelab.app.serve import settings_flags

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "pyarrow", "plotly.graph_objects", "pipelab.app.views.charts", "pipelab.app.views.results",
         "pipelab.app.screens.lesson_page", "pipelab.app.navigation", "pipelab.app.screens.playground")

# In a fresh interpreter: import the launcher, then call its main with streamlit's command
# line replaced by a probe that records what streamlit would be started with and what is
# imported at that moment.
PROBE = """
import json, sys
import pipelab.app.serve as serve
light = sorted(name for name in {heavy!r} if name in sys.modules)
import streamlit.web.cli as cli
seen = {{}}
def probe(args, prog_name):
    seen.update(args=args, prog_name=prog_name, imported=[n for n in {heavy!r} if n in sys.modules])
cli.main = probe
serve.main({flags!r})
print(json.dumps(dict(seen, light=light)))
"""
# As bench/app_latency.py's streamlit_server passes them, and the Dockerfile's "--flag=value" form.
FLAGS = ["--server.port", "8599", "--server.headless", "true", "--server.address=0.0.0.0",
         "--browser.gatherUsageStats", "false"]


def launch_with_probe() -> dict:
    code = PROBE.format(heavy=HEAVY, flags=FLAGS)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "No runtime found" not in done.stderr  # the preload's import-time noise is kept out of the log
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_heavy_modules_are_imported_before_streamlit_starts_with_every_flag():
    seen = launch_with_probe()
    assert seen["light"] == [], "importing the launcher itself stays light (the forkserver imports it)"
    assert seen["imported"] == list(HEAVY)
    settings = settings_flags()  # the server's settings first: a flag given to serve wins (click keeps the last)
    assert seen["args"] == ["run", str(ROOT / "app" / "main.py"), *settings, *FLAGS]
    assert seen["prog_name"] == "streamlit"


@pytest.mark.slow
def test_the_first_pages_need_nothing_heavy_the_preload_left_out():
    # The default lesson, a lesson with charts, the playground and the recap, run headless
    # after the preload: every module of the app and of its drawing libraries is already in.
    code = """
import json, sys
import pipelab.app.serve as serve
from tests.app_pages import switch
serve.preload()
before = set(sys.modules)
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(str(serve.MAIN), default_timeout=120)
at.run()
for page in ("gpipe", "playground", "page_scripts/recap.py"):
    switch(at, page)
    at.run()
assert not at.exception, at.exception
print(json.dumps(sorted(set(sys.modules) - before)))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    late = json.loads(done.stdout.strip().splitlines()[-1])
    # A library's late submodule (a vendored version parser) costs nothing; the library would.
    heavy = {"pandas", "plotly", "plotly.graph_objects", "numpy", "pyarrow", "pyarrow.pandas_compat", "torch"}
    assert [name for name in late if name in heavy or name.split(".")[0] in ("app", "lessons")] == []


def test_bin_serve_and_the_image_start_the_launcher():
    serve = (ROOT / "bin" / "serve").read_text()
    assert "bin/setup-venv requirements.txt" in serve  # the README's first command still makes .venv
    assert "-m pipelab.app.serve \"$@\"" in serve
    assert 'CMD ["bin/serve"' in (ROOT / "Dockerfile").read_text()


@pytest.mark.slow
def test_a_server_whose_starter_is_gone_stops_itself():
    # A test run killed outright never stops the server it started in a session of its own:
    # bench.app_latency.streamlit_server names itself in PIPELAB_EXIT_WITH_PID, and the
    # server ends once that process is gone. Here the starter waits until the server
    # answers, then exits.
    import os
    import time

    from bench.app_latency import free_port
    from pipelab.engine.runtime.rank_processes import process_alive
    starter = """
import os, subprocess, sys, time, urllib.request
port = sys.argv[1]
p = subprocess.Popen([sys.executable, "-m", "pipelab.app.serve", "--server.port", port, "--server.headless", "true",
                      "--server.address", "127.0.0.1"], env=dict(os.environ, PIPELAB_EXIT_WITH_PID=str(os.getpid())),
                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
        break
    except OSError:
        time.sleep(0.3)
print(p.pid)
"""
    out = subprocess.run([sys.executable, "-c", starter, str(free_port())], cwd=ROOT, capture_output=True, text=True,
                         timeout=90, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    server = int(out.stdout)
    try:
        assert process_alive(server), "the server did not start"
        deadline = time.monotonic() + 15
        while process_alive(server) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not process_alive(server), "the server outlived the process that started it"
    finally:
        if process_alive(server):
            os.killpg(server, 9)


@pytest.mark.slow
def test_a_server_stopped_mid_run_cancels_it_and_leaves_nothing(tmp_path, chromium_browser):
    # `docker stop` sends SIGTERM to the server alone. Its run threads are daemons, so the
    # run it was doing died with it and left its temp folder; now it cancels its runs as it
    # exits, and each run's launcher stops the ranks and removes the folder.
    import os
    import signal
    import time

    from bench.app_latency import streamlit_server
    from bench.browser_steps import IDLE
    from pipelab.engine.runtime.faults import FAULT_ENV
    from pipelab.engine.runtime.rank_processes import RUN_FOLDER_PREFIX
    from tests.conftest import process_group, run_leftovers

    def run_folders():
        return [p.name for p in tmp_path.iterdir() if p.name.startswith(RUN_FOLDER_PREFIX)]

    # A hung rank holds the run open (the launcher would end it after several seconds).
    env = {"TMPDIR": str(tmp_path), FAULT_ENV: "hang:1:1"}
    with streamlit_server(env=env) as url:
        page = chromium_browser.new_page()
        try:
            page.goto(f"{url}/gpipe")
            page.wait_for_selector(IDLE, timeout=30_000)
            page.get_by_role("button", name="Run", exact=True).click()
            deadline = time.monotonic() + 20
            while not run_folders() and time.monotonic() < deadline:
                time.sleep(0.1)
            folders = run_folders()
            assert folders, "no run started"
            server = int(folders[0].removeprefix(RUN_FOLDER_PREFIX).split("-")[0])
            os.kill(server, signal.SIGTERM)
            # The server is this test's child: once dead it stays a zombie until reaped on leaving
            # the block, which process_alive counts as alive; process_group leaves zombies out.
            deadline = time.monotonic() + 20
            while process_group(server) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not process_group(server), "a process of the server outlived it"
            assert run_leftovers(tmp_path) == []
        finally:
            page.close()


def test_the_servers_settings_reach_streamlit_as_flags_from_any_folder():
    """Streamlit reads .streamlit/config.toml only from the folder it starts in; an installed
    `pipelab serve` starts anywhere, so serve passes the file's settings as flags."""
    flags = settings_flags()
    for expected in ("--server.headless=true", "--server.fileWatcherType=none", "--server.enableXsrfProtection=true",
                     "--runner.postScriptGC=false", "--browser.gatherUsageStats=false", "--client.toolbarMode=viewer"):
        assert expected in flags
    assert (ROOT / ".streamlit" / "config.toml").resolve() == (ROOT / "app" / "streamlit_config.toml").resolve()
