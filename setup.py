"""The package list for the wheel, computed from the folders (pyproject.toml holds the rest).

The code lives in the repository's top-level folders ``engine/``, ``lessons/`` and ``app/``
and is imported as ``pipelab.engine``, ``pipelab.lessons`` and ``pipelab.app``
(pipelab/__init__.py). Every folder under them becomes a package of the wheel, with every
file in it: lessons' markdown and catalogs, the model's corpus, the Streamlit page scripts
(folders without an ``__init__.py``), so a folder added later ships without an edit here.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
PARTS = ("engine", "lessons", "app")
SKIPPED = {"__pycache__"}


def folders(part: str) -> list[Path]:
    top = ROOT / part
    found = [top, *(path for path in top.rglob("*") if path.is_dir())]
    return sorted(path for path in found if not SKIPPED & set(path.relative_to(ROOT).parts))


def package_dirs() -> dict[str, str]:
    """``pipelab.engine.model`` -> ``engine/model``, for every folder of the three parts."""
    dirs = {"pipelab": "pipelab"}
    for part in PARTS:
        for folder in folders(part):
            relative = folder.relative_to(ROOT)
            dirs[".".join(("pipelab", *relative.parts))] = relative.as_posix()
    return dirs


PACKAGE_DIRS = package_dirs()

setup(
    packages=list(PACKAGE_DIRS),
    package_dir=PACKAGE_DIRS,
    package_data={name: ["*"] for name in PACKAGE_DIRS if name != "pipelab"},
    exclude_package_data={"": ["*.pyc"]},
)
