"""No import circle among the ``pipelab.*`` modules (issue 29): a module that needs another which
needs it back has lost its seam, and the order Python runs them in decides what works.

The graph is read with ``ast`` (nothing is imported), from module-level and function-level
imports alike: an import deferred into a function hides a circle, it does not remove one.
Imports under ``if TYPE_CHECKING:`` are left out (they never run)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_FOLDERS = ("engine", "lessons", "app", "pipelab")

KNOWN_CIRCLES: list[frozenset[str]] = []


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module's dotted name (``engine/config.py`` is ``pipelab.engine.config``) -> its file."""
    files = {}
    for top in TOP_FOLDERS:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if top != "pipelab":
                parts.insert(0, "pipelab")
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path
    return files


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node at any depth, skipping ``if TYPE_CHECKING:`` bodies."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _imports(node)


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The ``pipelab.*`` modules that ``name`` imports: ``from pkg import x`` counts as the
    submodule ``pkg.x`` when there is one, else as ``pkg`` itself (its ``__init__``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[:len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in found if m in known and m != name}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    files = module_files(root)
    known = set(files)
    return {name: imported_modules(name, path, known) for name, path in files.items()}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(frozenset(group))
    return groups


def test_no_import_circle_but_the_known_one():
    found = circles(import_graph())
    unknown = [sorted(group) for group in found if group not in KNOWN_CIRCLES]
    assert unknown == [], "import circles (break each at its seam):\n" + "\n".join(map(" <-> ".join, unknown))


def test_the_graph_sees_every_package():
    graph = import_graph()
    assert {"pipelab.engine.config", "pipelab.lessons", "pipelab.app.main", "pipelab.cli"} <= set(graph)
    assert "pipelab.engine.config" in graph["pipelab.engine.runtime.launch"]


def test_the_checker_finds_a_circle_through_a_function_level_import(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("")
    (tmp_path / "engine" / "a.py").write_text("from pipelab.engine import b\n")
    (tmp_path / "engine" / "b.py").write_text("def f():\n    from . import c\n")
    (tmp_path / "engine" / "c.py").write_text("from pipelab.engine.a import thing\n")
    (tmp_path / "engine" / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pipelab.engine import a\n")
    assert circles(import_graph(tmp_path)) == [
        frozenset({"pipelab.engine.a", "pipelab.engine.b", "pipelab.engine.c"})]


# ---- the layers: engine below lessons below app ------------------------------------------------

LAYERS = {
    # modules under      import none of
    "pipelab.engine":    ("pipelab.lessons", "pipelab.app"),
    "pipelab.lessons":   ("pipelab.app",),
}
"""The engine runs schedules and knows no course; a lesson knows the engine and no page. So the
engine stays usable from the command line and a lesson from a test, with no page to import."""


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _bare_names(path: Path) -> set[str]:
    """``import lessons.x`` / ``from app import y`` as ``pipelab.*``: the repository root is on
    sys.path in the tests, so a bare name imports the same files under a second name."""
    names = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        for name in ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if node.level == 0 else []):
            if name.split(".")[0] in ("engine", "lessons", "app"):
                names.add("pipelab." + name)
    return names


def layer_breaches(root: Path = ROOT) -> list[str]:
    """"importer -> imported" for every import, at any depth, of a layer above the importer's."""
    files = module_files(root)
    known = set(files)
    breaches = []
    for name, path in files.items():
        for imported in sorted(imported_modules(name, path, known) | _bare_names(path)):
            if any(_within(name, lower) and any(_within(imported, upper) for upper in uppers)
                   for lower, uppers in LAYERS.items()):
                breaches.append(f"{name} -> {imported}")
    return breaches


def test_the_engine_imports_no_lesson_or_page_and_a_lesson_no_page():
    assert layer_breaches() == []


def test_the_layer_check_finds_an_import_upwards(tmp_path):
    for folder in ("engine", "lessons", "app"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "engine" / "a.py").write_text("def f():\n    from pipelab.lessons import b\n")
    (tmp_path / "engine" / "c.py").write_text("import app.d\n")
    (tmp_path / "lessons" / "b.py").write_text("from pipelab.engine import a\nfrom ..app import d\n")
    (tmp_path / "app" / "d.py").write_text("from pipelab.lessons import b\nfrom pipelab.engine import a\n")
    assert layer_breaches(tmp_path) == ["pipelab.engine.a -> pipelab.lessons.b", "pipelab.engine.c -> pipelab.app.d",
                                        "pipelab.lessons.b -> pipelab.app.d"]
