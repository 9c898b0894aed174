"""The launcher (app/serve.py): the heavy modules are imported before streamlit serves the
first session, and every flag reaches streamlit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "pyarrow", "plotly.graph_objects", "app.charts", "app.results", "app.lesson_page",
         "app.navigation", "app.playground")

# In a fresh interpreter: import the launcher, then call its main with streamlit's command
# line replaced by a probe that records what streamlit would be started with and what is
# imported at that moment.
PROBE = """
import json, sys
import app.serve as serve
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


def test_heavy_modules_are_imported_before_streamlit_starts_with_every_flag():
    seen = launch_with_probe()
    assert seen["light"] == [], "importing the launcher itself stays light (the forkserver imports it)"
    assert seen["imported"] == list(HEAVY)
    assert seen["args"] == ["run", str(ROOT / "app" / "main.py"), *FLAGS] and seen["prog_name"] == "streamlit"


def test_the_first_pages_need_nothing_heavy_the_preload_left_out():
    # The default lesson, a lesson with charts, the playground and the recap, run headless
    # after the preload: every module of the app and of its drawing libraries is already in.
    code = """
import json, sys
import app.serve as serve
serve.preload()
before = set(sys.modules)
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(str(serve.MAIN), default_timeout=120)
at.run()
for page in ("lesson_pages/2_gpipe.py", "lesson_pages/7_playground.py", "lesson_pages/9_recap.py"):
    at.switch_page(page)
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
    assert "-m app.serve \"$@\"" in serve
    assert 'CMD ["bin/serve"' in (ROOT / "Dockerfile").read_text()
