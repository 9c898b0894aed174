"""The whole repository passes ruff (rules and exceptions in pyproject.toml)."""

import os
import subprocess

import pytest

from tests.conftest import venv_tool

pytestmark = pytest.mark.slow  # every test here starts processes (engine ranks, a server, a browser or a tool)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_check_passes():
    exe = venv_tool("ruff")
    assert exe, "ruff not installed (pip install -r requirements-dev.txt)"
    result = subprocess.run([exe, "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, "ruff check . found:\n" + result.stdout + result.stderr
