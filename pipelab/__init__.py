"""PipeLab: learn pipeline parallelism by running it.

One namespace for the three parts: ``pipelab.engine`` (schedules, simulator, the
multi-process engine), ``pipelab.lessons`` (the course: claims, questions, texts) and
``pipelab.app`` (the Streamlit classroom app).

In a wheel the three live under this folder. In a checkout they are the repository's
top-level folders ``engine/``, ``lessons/`` and ``app/`` (where a reader looks for them), and
this package's search path is extended to the repository root, so ``import pipelab.engine``
finds ``engine/`` without an install. Either way there is one copy of every module, named
``pipelab.…``: nothing imports a bare ``engine``.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.4.0"

_HERE = Path(__file__).resolve().parent

CHECKOUT: Path | None = None
"""The repository root when running from a checkout (engine/ beside this folder), else None."""

if not (_HERE / "engine").is_dir() and (_HERE.parent / "engine" / "__init__.py").is_file():
    CHECKOUT = _HERE.parent
    __path__.append(str(CHECKOUT))  # noqa: F821  (a package's __path__, set by the import system)
