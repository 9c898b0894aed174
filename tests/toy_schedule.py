"""A schedule from outside engine/schedules/: one module, written to a temporary package and
discovered from there, as a new schedule file would be. The ``toy_schedule`` fixture
(tests/conftest.py) registers it for a test and unregisters it afterwards."""

from __future__ import annotations

import importlib
import sys
import textwrap
import uuid

from pipelab.engine.schedules import REGISTRY, discover, unregister

TOY = "toy-lifo"
SUMMARY = {"en": "toy: all forwards, then the backwards newest first", "zh": "玩具：先做全部前向，再从最新的开始做反向"}
CONSTRAINT = {"en": "none (a test's own)", "zh": "无（测试专用）"}
TOY_MODULE = f'''
"""GPipe with its backwards last-in first-out: valid, synchronous, GPipe's bubble."""
from pipelab.engine.theory import formulas as theory
from pipelab.engine.actions import B, F
from pipelab.engine.schedules import register
from pipelab.engine.schedules.base import Schedule, linear_placement
from pipelab.engine.theory.schedule_theory import ScheduleTheory


@register("{TOY}", summary={SUMMARY!r}, constraint={CONSTRAINT!r}, paper="a test's own",
          theory=ScheduleTheory(bubble_fraction=lambda c: theory.gpipe_bubble_fraction(c.p, c.m),
                                bubble_text="(p-1)/(m+p-1)"))
def toy(ranks, microbatches, chunks=1):
    m = microbatches
    actions = tuple(tuple([F(r, j) for j in range(m)] + [B(r, j) for j in reversed(range(m))])
                    for r in range(ranks))
    return Schedule("{TOY}", ranks, microbatches, linear_placement(ranks), actions)
'''


def registered_toy(tmp_path, monkeypatch):
    """Generator for the fixture: the toy's package on sys.path, discovered; yields its name,
    then unregisters it and forgets the package."""
    package = f"pipelab_toy_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "lifo.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert TOY not in REGISTRY
    try:
        assert discover(package) == (f"{package}.lifo",)
        yield TOY
    finally:
        if TOY in REGISTRY:
            unregister(TOY)
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
