"""`pip install` gives the `pipelab` package and command, working away from the checkout.

The wheel is built from a copy of the checkout the way `pip install <checkout>` builds it,
and installed into a fresh venv outside it. Installing torch and streamlit there would take
minutes and the network, so the venv reaches the third-party packages of the project's
.venv through a .pth file (that folder holds no pipelab of its own: asserted); everything
named pipelab comes from the wheel. Every command runs from an empty folder, with no
PYTHONPATH, so a file the wheel lacks fails here as it would for a user.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel and starts the installed command

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("engine", "lessons", "app")
NOT_IN_A_CLONE = {".git", ".venv", "build", "pipelab.egg-info", ".pytest_cache", ".hypothesis", "runs"}
"""Top-level folders a fresh clone lacks (this checkout's venv, build output, stored runs)."""
SMALL_RUN = ["--schedule", "1f1b", "--stages", "2", "--microbatches", "2", "--model", "mlp", "--layers", "4",
             "--hidden", "32", "--microbatch-size", "4", "--steps", "2", "--check"]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    elsewhere: Path
    """An empty folder outside the checkout: every command runs here."""

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.venv / 'bin'}:/usr/bin:/bin", "HOME": str(self.elsewhere)}

    def run(self, *command: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=self.elsewhere, env=self.env(), capture_output=True, text=True,
                              timeout=timeout)


def not_in_a_clone(folder: str, names: list[str]) -> set[str]:
    """shutil.copytree's filter: what git would not give a user."""
    top = Path(folder) == ROOT
    return {name for name in names if (top and name in NOT_IN_A_CLONE) or name == "__pycache__"
            or name.endswith(".pyc") or (Path(folder) == ROOT / "bench" and name == "out")}


def pip(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The project's pip, without PYTHONPATH: the checkout on it would count as pipelab installed."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def dependencies_folder() -> Path:
    """The project's .venv site-packages: torch, streamlit, plotly, ... and no pipelab."""
    folder = Path(sysconfig.get_paths()["purelib"])
    assert not [name for name in ("pipelab", *PARTS) if (folder / name).exists()], folder
    return folder


def fresh_venv(folder: Path) -> Path:
    """A venv without pip (the project's pip installs into it) that sees only the dependencies."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site = Path(subprocess.run([folder / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "pipelab_test_dependencies.pth").write_text(f"{dependencies_folder()}\n")
    return folder


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("package")
    source = base / "checkout"
    shutil.copytree(ROOT, source, ignore=not_in_a_clone, symlinks=True)
    pip("wheel", "--no-deps", "--wheel-dir", str(base / "dist"), str(source))
    (wheel,) = (base / "dist").glob("pipelab-*.whl")
    venv = fresh_venv(base / "venv")
    pip("--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index", str(wheel))
    (base / "elsewhere").mkdir()
    return Installed(wheel, venv, base / "elsewhere")


def checkout_files() -> list[str]:
    """Every file of the three parts, as the wheel names it: pipelab/<part>/..."""
    files = []
    for part in PARTS:
        for path in (ROOT / part).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.append("pipelab/" + path.relative_to(ROOT).as_posix())
    return sorted(files)


def test_the_wheel_holds_every_file_of_engine_lessons_and_app(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    missing = [name for name in checkout_files() if name not in names]
    assert missing == []
    for needed in ("pipelab/engine/model/data/corpus.txt", "pipelab/lessons/i18n/zh.json",
                   "pipelab/app/streamlit_config.toml", "pipelab/__init__.py", "pipelab/cli.py"):
        assert needed in names


def test_the_installed_package_is_the_wheels_not_the_checkouts(installed):
    probe = ("import importlib.metadata as m, importlib.util, json, pipelab\n"
             "print(json.dumps(dict(file=pipelab.__file__, checkout=pipelab.CHECKOUT, version=pipelab.__version__,\n"
             "    installed=m.version('pipelab'), requires=m.requires('pipelab'),\n"
             "    bare_engine=importlib.util.find_spec('engine') is not None)))")
    done = installed.run(str(installed.python), "-c", probe)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert Path(seen["file"]).is_relative_to(installed.venv)
    assert seen["checkout"] is None and seen["bare_engine"] is False
    assert seen["installed"] == seen["version"]  # one version: pyproject reads pipelab.__version__
    assert seen["requires"] == requirement_lines(ROOT / "requirements.txt")


def requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def test_pipelab_list_names_the_zero_bubble_schedules(installed):
    done = installed.run("pipelab", "list")
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert {"zb-1p", "zb-2p", "v-half", "v-min"} <= set(names)


def test_pipelab_run_checks_its_gradients(installed):
    done = installed.run("pipelab", "run", *SMALL_RUN, "--out", "run.json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((installed.elsewhere / "run.json").read_text())
    assert result["check"]["grad_max_rel_diff"] <= 1e-5


def test_bad_input_gives_one_line_and_exit_2(installed):
    done = installed.run("pipelab", "frobnicate")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "invalid choice: 'frobnicate'" in done.stderr


def test_the_server_finds_its_page_scripts_and_settings(installed):
    probe = ("from pipelab.app.serve import MAIN, settings_flags\n"
             "from pipelab.app.navigation import OTHER_PAGES, SCRIPTS\n"
             "assert MAIN.is_file() and all((SCRIPTS / script).is_file() for _, script, _ in OTHER_PAGES)\n"
             "print(' '.join(settings_flags()))")
    done = installed.run(str(installed.python), "-c", probe)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--server.fileWatcherType=none" in done.stdout and "--runner.postScriptGC=false" in done.stdout


def test_pipelab_serve_answers_from_an_empty_folder_with_a_flag_overriding_a_setting(installed):
    """From a folder without .streamlit/ and a fresh HOME: the server's settings arrive as
    flags (streamlit's own default would announce that it collects usage statistics), and
    the port given wins over the settings' 8501."""
    from bench.app_latency import free_port
    port = free_port()
    log = installed.elsewhere / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(["pipelab", "serve", "--server.port", str(port), "--server.address", "127.0.0.1"],
                                  cwd=installed.elsewhere, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                  env={**installed.env(), "PIPELAB_EXIT_WITH_PID": str(os.getpid())},
                                  start_new_session=True)
    try:
        assert health(f"http://127.0.0.1:{port}/_stcore/health", server, within_s=90), log.read_text()[-3000:]
        assert "Collecting usage statistics" not in log.read_text()  # browser.gatherUsageStats = false
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


def health(url: str, server: subprocess.Popen, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while server.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return answer.status == 200
        except OSError:
            time.sleep(0.3)
    return False


def readme_script() -> str:
    """The README's script for your own model (the python block that imports run_pipeline)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    (script,) = [block for block in blocks if "from pipelab.engine import run_pipeline" in block]
    return script


def test_the_readmes_own_model_script_runs(installed):
    (installed.elsewhere / "train.py").write_text(readme_script())
    done = installed.run(str(installed.python), "train.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.fullmatch(r"bubble 0\.\d\d, gradients off by \d\.\de[-+]\d\d\n", done.stdout), done.stdout
    assert float(done.stdout.split()[-1]) <= 1e-5


def test_python_m_engine_in_the_checkout_says_where_the_command_moved():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    old = subprocess.run([sys.executable, "-m", "engine", "list"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    new = subprocess.run([sys.executable, "-m", "pipelab", "list"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert old.returncode == new.returncode == 0
    assert old.stdout == new.stdout
    assert old.stderr.strip().splitlines() == [
        "note: `python -m engine` is now `pipelab` (or `python -m pipelab`); running it as that."]
