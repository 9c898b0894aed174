"""A shipped lesson folder copied with only its folder name, slug, number and title changed, as
a maintainer would start a new lesson: lessons/naive/ (questions, checks, a comparison, a claim
check with sentences of its own, texts in both languages) becomes lesson "naive-copy" in a
temporary package, numbered after the last lesson. The fast tier (tests/conftest.py) registers
it for the whole session, so every test that reads the catalog holds the copy to what it holds
the shipped lessons to: docs/design.md's lesson recipe, proven. The slow tier leaves it out:
its tests run each lesson's defaults on the engine, and the copy would only run naive's again.
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

from pipelab.lessons import LESSONS, registry

ROOT = Path(__file__).resolve().parent.parent
ORIGINAL = ROOT / "lessons" / "naive"
FOLDER, SLUG = "naive_copy", "naive-copy"
TITLE = {"en": ("Naive model parallelism", "Naive model parallelism (a copy)"),
         "zh": ("朴素模型并行", "朴素模型并行（副本）")}


def renames(number: int, copy_number: int) -> dict[str, tuple[tuple[str, str], ...]]:
    """File (in the folder) -> the (old, new) strings changed in it: the slug, the number and the
    title where the folder spells them, each exactly once, and nothing else."""
    (en_title, en_copy), (zh_title, zh_copy) = TITLE["en"], TITLE["zh"]
    return {
        "__init__.py": ((f'slug="{ORIGINAL.name}"', f'slug="{SLUG}"'),
                        (f"number={number},", f"number={copy_number},"),
                        (f'title="{en_title}"', f'title="{en_copy}"')),
        "en.md": ((f"# {number}. {en_title}\n", f"# {copy_number}. {en_copy}\n"),),
        "zh.md": ((f"# {number}. {zh_title}\n", f"# {copy_number}. {zh_copy}\n"),),
        "zh.json": ((f'"lesson.title": "{zh_title}"', f'"lesson.title": "{zh_copy}"'),),
    }


def write_copy(package_dir: Path) -> None:
    """lessons/naive/ copied into ``package_dir``/naive_copy with only its renames applied."""
    number = registry.get_lesson(ORIGINAL.name).number
    copy_number = max(lesson.number for lesson in LESSONS) + 1
    folder = package_dir / FOLDER
    shutil.copytree(ORIGINAL, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name, changes in renames(number, copy_number).items():
        path = folder / name
        text = path.read_text(encoding="utf-8")
        for old, new in changes:
            assert text.count(old) == 1, f"{path.name}: {old!r} found {text.count(old)} times"
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")


def register_copy() -> Path:
    """Write the copy into a fresh package on sys.path and discover it; returns the folder."""
    folder = Path(tempfile.mkdtemp(prefix="pipelab-lesson-copies-"))
    package = f"pipelab_copied_lessons_{uuid.uuid4().hex[:8]}"
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text("")
    write_copy(folder / package)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    assert registry.discover(package) == (f"{package}.{FOLDER}",)
    return folder


def remove_copy(folder: Path) -> None:
    if any(lesson.slug == SLUG for lesson in LESSONS):
        registry.unregister(SLUG)
    if str(folder) in sys.path:
        sys.path.remove(str(folder))
    shutil.rmtree(folder, ignore_errors=True)
