"""Every test checks something (issue 29): a test function that asserts nothing, raises nothing
and fails nothing passes whatever the code does. Read with ``ast``, nothing is run."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CHECKS = ("pytest.raises", "pytest.fail", "pytest.warns", "pytest.xfail")


def assertion_free_tests(source: str) -> list[str]:
    """The test functions of ``source`` with no assert statement and no pytest.raises/fail/warns."""
    empty = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.name.startswith("test_"):
            continue
        body = ast.unparse(node)
        if not any(isinstance(n, ast.Assert) for n in ast.walk(node)) and not any(c in body for c in CHECKS):
            empty.append(node.name)
    return empty


def test_every_test_asserts_something():
    empty = {path.name: names for path in sorted(TESTS.glob("test_*.py"))
             if (names := assertion_free_tests(path.read_text(encoding="utf-8")))}
    assert empty == {}


def test_the_checker_finds_a_test_that_only_runs_code():
    source = ("import pytest\n"
              "def test_runs():\n    build()\n"
              "def test_asserts():\n    assert build()\n"
              "def test_raises():\n    with pytest.raises(ValueError):\n        build()\n"
              "def helper():\n    build()\n")
    assert assertion_free_tests(source) == ["test_runs"]
