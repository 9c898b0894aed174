"""A shipped schedule file copied with only its registered names changed, as a maintainer
would start a new schedule: engine/schedules/interleaved.py (a schedule with chunks, a torch
class and a closed form) becomes "interleaved-copy" in a temporary package. The fast tier
(tests/conftest.py) registers it for the whole session, so every test that reads the registry
holds the copy to what it holds the shipped schedules to: docs/design.md's recipe, proven."""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path

from pipelab.engine.schedules import REGISTRY, discover, unregister

ROOT = Path(__file__).resolve().parent.parent
ORIGINAL, COPY = "interleaved", "interleaved-copy"
SOURCE = ROOT / "engine" / "schedules" / "interleaved.py"


def copied_source(name: str = COPY) -> str:
    """The original file with every quoted use of its name (the registered name, the built
    Schedule's name, the name its errors say) changed to ``name``, and nothing else."""
    return SOURCE.read_text(encoding="utf-8").replace(f'"{ORIGINAL}"', f'"{name}"')


def register_copy() -> Path:
    """Write the copy into a fresh package on sys.path and discover it; returns the folder."""
    folder = Path(tempfile.mkdtemp(prefix="pipelab-copies-"))
    package = f"pipelab_copied_{uuid.uuid4().hex[:8]}"
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text("")
    (folder / package / "interleaved_copy.py").write_text(copied_source(), encoding="utf-8")
    sys.path.insert(0, str(folder))
    discover(package)
    assert COPY in REGISTRY
    return folder


def remove_copy(folder: Path) -> None:
    if COPY in REGISTRY:
        unregister(COPY)
    if str(folder) in sys.path:
        sys.path.remove(str(folder))
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def registered_variant(tmp_path: Path, name: str, line: str, changed: str):
    """The copy under ``name`` with one line of its source, ``line``, made ``changed`` (a wrong
    closed form, say), registered from a package in ``tmp_path`` while the block runs."""
    source = copied_source(name)
    assert source.count(line) == 1, f"{SOURCE.name} no longer has {line!r} once: pick the line to change anew"
    package = f"pipelab_variant_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "variant.py").write_text(source.replace(line, changed), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        discover(package)
        yield name
    finally:
        if name in REGISTRY:
            unregister(name)
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[module]
