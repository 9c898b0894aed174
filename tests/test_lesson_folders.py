"""A lesson is one folder (lessons/<name>/): its catalog entry, its texts in both languages, its
questions, its claim check and its extras' texts live there, and nothing else names it. Each
built-in folder is held to that; then a lesson written to a temporary folder
(tests/toy_lesson.py) shows up in the catalog's order, on its own page at /<slug>, with its
texts, questions and claim check, with no other edit."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pipelab.lessons import EXTRA_KINDS, LESSONS, SCREENS, Extra, claims, get_lesson, i18n
from pipelab.lessons.own_keys import own_key
from pipelab.lessons.questions import all_predictions, checks_for, predictions_for
from tests.app_pages import switch_to
from tests.test_course_pages import on_screen_texts
from tests.toy_lesson import CATALOG, CLAIM, EXTRA_READING, NUMBER, TEXT, TITLE

ROOT = Path(__file__).resolve().parent.parent
MAIN = str(ROOT / "app" / "main.py")
ids = [lesson.slug for lesson in LESSONS]


@pytest.fixture
def toy_lesson(tmp_path, monkeypatch):
    """A lesson registered from a temporary folder (tests/toy_lesson.py), for this test only."""
    from tests.toy_lesson import registered_toy_lesson
    yield from registered_toy_lesson(tmp_path, monkeypatch)


# ---- every built-in lesson folder ---------------------------------------------------------------

@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_its_folder_holds_its_texts_in_both_languages(lesson):
    assert (lesson.folder / "__init__.py").is_file()  # the package that defines it (a copy's is elsewhere)
    for lang in i18n.LANGUAGES:
        for path in (i18n.lesson_path(lesson, lang), i18n.extra_path(lesson, lang), lesson.folder / f"{lang}.json"):
            assert path.is_file() and path.is_relative_to(lesson.folder), path


def test_the_lessons_texts_live_only_in_their_folders():
    """All a lesson reads besides code is in its folder (a wheel ships each folder whole): the
    only other texts under lessons/ are the shared catalogs."""
    folders = {lesson.folder for lesson in LESSONS}
    stray = [path.relative_to(ROOT).as_posix() for path in (ROOT / "lessons").rglob("*")
             if path.suffix in (".md", ".json") and not any(path.is_relative_to(f) for f in folders)]
    assert sorted(stray) == ["lessons/i18n/en.json", "lessons/i18n/zh.json"]


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_its_questions_and_extras_name_keys_of_both_catalogs(lesson):
    keys = [key for extra in lesson.extras for key in extra.texts.values()]
    keys += [q.prompt for q in lesson.predictions] + [c.prompt for c in lesson.checks]
    for lang in i18n.LANGUAGES:
        assert [key for key in keys if not i18n.has(lang, key)] == [], lang


def test_every_lesson_screen_and_extra_kind_is_drawn_by_the_app():
    from pipelab.app.navigation import SCREEN_RENDERERS
    from pipelab.app.views.extras import PLACES
    assert set(SCREEN_RENDERERS) == set(SCREENS)
    assert set(PLACES) == set(EXTRA_KINDS)


def names_a_lesson(node: ast.AST) -> bool:
    """``slug == "gpipe"``, ``lesson.slug != "zero-bubble"``, ``get_lesson("playground")``."""
    def is_slug(side):
        return (isinstance(side, ast.Name) and side.id == "slug") or (isinstance(side, ast.Attribute)
                                                                      and side.attr == "slug")
    if isinstance(node, ast.Compare):
        sides = (node.left, *node.comparators)
        return any(is_slug(side) for side in sides) and any(isinstance(side, (ast.Constant, ast.Tuple))
                                                             for side in sides)
    return (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "get_lesson"
            and any(isinstance(arg, ast.Constant) for arg in node.args))


def test_the_app_names_no_lesson():
    """The app decides by a lesson's data (its screen, its extras), never by its slug."""
    named = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in (ROOT / "app").rglob("*.py")
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if names_a_lesson(node)]
    assert named == []
    old = ast.parse('if lesson.slug != "zero-bubble":\n    pass\nget_lesson("playground")\nslug in ("a",)')
    assert sum(names_a_lesson(node) for node in ast.walk(old)) == 3  # the scan finds what it looks for


def entry(**fields):
    from pipelab.lessons import Knobs, Lesson
    return Lesson(**{"slug": "x", "number": 98, "title": "x", "claim": "x", "defaults": Knobs(),
                     "schedules": ("gpipe",), **fields})


@pytest.mark.parametrize("make, error", [
    (lambda: entry(screen="poster"), "screen 'poster' unknown; valid: lesson, playground"),
    (lambda: entry(predictions=get_lesson("naive").predictions), "question 'naive.bubble' belongs to lesson 'naive'"),
    (lambda: Extra(kind="poster"), "extra kind 'poster' unknown; valid kinds: stash_toggle"),
    (lambda: Extra(kind="weight_versions", texts={"title": "t"}), "extra 'weight_versions' needs texts for caption"),
])
def test_a_bad_catalog_entry_is_refused_in_one_line(make, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        make()


@pytest.mark.parametrize("fields, error", [
    ({"slug": "gpipe"}, "lesson 'gpipe' is registered twice"),
    ({"number": 2}, "lesson 'x': number 2 is taken by lesson 'gpipe'"),
])
def test_a_lesson_cannot_take_anothers_slug_or_number(fields, error):
    from pipelab.lessons import registry
    with pytest.raises(ValueError, match=re.escape(error)):
        registry.register(entry(**fields), ROOT / "lessons" / "naive")
    assert [lesson.slug for lesson in LESSONS] == ids


# ---- no import circle -----------------------------------------------------------------------------

def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return "pipelab." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def executed(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (imports for annotations only,
    never run)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
            yield from (node for orelse in child.orelse for node in [orelse, *executed(orelse)])
            continue
        yield child
        yield from executed(child)


def import_graph(tops=("app", "lessons", "engine")) -> dict[str, set[str]]:
    """Module -> the pipelab modules it imports, at its top and inside its functions alike (a late
    import inside a function only hides a circle). ``from package import submodule`` counts as
    the submodule; the lesson catalog imports every lesson folder (pipelab.lessons.registry.discover)."""
    files = {module_name(p): p for top in tops for p in (ROOT / top).rglob("*.py")}
    graph = {}
    for name, path in files.items():
        found = set()
        for node in executed(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipelab"):
                subs = {f"{node.module}.{a.name}" for a in node.names} & set(files)
                found |= subs | ({node.module} if len(subs) < len(node.names) else set())
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("pipelab")}
        graph[name] = (found & set(files)) - {name}
    graph["pipelab.lessons"] |= {f"pipelab.lessons.{lesson.folder.name}" for lesson in LESSONS} & set(files)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_module_of_the_app_or_the_lessons_imports_one_that_imports_it_back():
    graph = import_graph()
    assert "pipelab.app.views.breakdown_tabs" in graph["pipelab.app.views.results"]  # the scan sees imports
    mine = [c for c in circles(graph) if any(m.startswith(("pipelab.app", "pipelab.lessons")) for m in c)]
    assert mine == []


def test_the_circle_finder_finds_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# ---- a new lesson, found everywhere with no other edit -------------------------------------------

def test_the_catalog_orders_it_by_its_number(toy_lesson):
    assert [lesson.number for lesson in LESSONS] == sorted(lesson.number for lesson in LESSONS)
    assert LESSONS[-1] is get_lesson(toy_lesson) and LESSONS[-1].number == NUMBER
    assert len(LESSONS) == len(ids) + 1


def test_it_is_gone_after_its_test():
    assert [lesson.slug for lesson in LESSONS] == ids and "q.toy-lesson.bubble.prompt" not in i18n.catalog("en")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_its_texts_are_in_both_languages(toy_lesson, lang):
    lesson = get_lesson(toy_lesson)
    assert i18n.lesson_title(lesson, lang) == TITLE[lang]
    assert i18n.lesson_claim(lesson, lang) == CLAIM[lang]
    assert i18n.lesson_markdown(lesson, lang) == TEXT[lang]
    assert i18n.extra_markdown(lesson, lang) == EXTRA_READING[lang]
    assert all(i18n.text(lang, own_key(toy_lesson, key)) == value for key, value in CATALOG[lang].items())


def test_a_key_it_shares_with_the_catalog_is_refused(toy_lesson):
    path = get_lesson(toy_lesson).folder / "en.json"
    saved = path.read_text(encoding="utf-8")
    try:
        path.write_text(saved.replace("{", '{"page.claim": "twice", ', 1), encoding="utf-8")
        i18n._merged.cache_clear()
        with pytest.raises(ValueError, match="page.claim"):
            i18n.catalog("en")
    finally:
        path.write_text(saved, encoding="utf-8")
        i18n._merged.cache_clear()


def test_its_questions_are_the_courses(toy_lesson):
    assert [q.id for q in predictions_for(toy_lesson)] == ["toy-lesson.bubble"]
    assert all_predictions()[-1].id == "toy-lesson.bubble"
    (check,) = checks_for(toy_lesson)
    assert check.is_right(2) and not check.is_right(3)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_its_claim_check_judges_its_page(toy_lesson, lang):
    verdict = claims.verdict(toy_lesson, CLAIM[lang], claims.RUN, [("run", object())], lang=lang)
    assert (verdict.status, verdict.reason) == (claims.HOLDS, CATALOG[lang]["claims.said"])
    assert verdict.tests == CATALOG[lang]["claims.tests.run"]


def _navigation_pages():
    import streamlit as st

    from pipelab.app.navigation import lesson_pages
    st.text("\n".join(f"{page.url_path}: {page.title}" for page in lesson_pages()))


def test_navigation_has_its_page_at_its_address(toy_lesson):
    at = AppTest.from_function(_navigation_pages, default_timeout=30).run()
    assert not at.exception, at.exception
    lines = at.text[0].value.splitlines()
    assert lines == [f"{lesson.slug}: {lesson.number}. {lesson.title}" for lesson in LESSONS]
    assert lines[-1] == f"toy-lesson: {NUMBER}. {TITLE['en']}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_its_page_shows_its_texts_questions_and_extras(toy_lesson, lang):
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    switch_to(at, toy_lesson).run()
    assert not at.exception, at.exception
    assert at.title[0].value == f"{NUMBER}. {TITLE[lang]}"
    assert CLAIM[lang] in at.info[0].value
    shown = on_screen_texts(at)
    assert i18n.text(lang, "q.toy-lesson.bubble.prompt", schedule="GPipe", p=2, m=8) in shown
    assert i18n.text(lang, "check.toy-lesson.two.prompt", p=2) in shown
    assert at.checkbox(key="toy-lesson:stash").label == CATALOG[lang]["toy.stash"]


# ---- a shipped folder copied, as a maintainer starts a new lesson -------------------------------

def test_a_copied_lesson_folder_passes_the_fast_tier_with_no_other_edit():
    """The fast tier registers lessons/naive/ copied with only its folder name, slug, number and
    title changed (tests/conftest.py, tests/copied_lesson.py): here it is, beside the original
    with none of its names, and every test that loops over the catalog has met it."""
    from tests.copied_lesson import FOLDER, ORIGINAL, SLUG, renames
    from tests.test_claims import fake
    if SLUG not in ids:
        pytest.skip("the copy joins the fast tier only (-m 'not slow')")
    copy, original = get_lesson(SLUG), get_lesson(ORIGINAL.name)
    assert copy.folder.name == FOLDER and copy.number == LESSONS[-1].number == len(LESSONS)
    files = sorted(p.relative_to(ORIGINAL) for p in ORIGINAL.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert files == sorted(p.relative_to(copy.folder) for p in copy.folder.rglob("*")
                           if p.is_file() and "__pycache__" not in p.parts)
    changes = renames(original.number, copy.number)
    for path in files:  # the copy is the original with its renames, and nothing else
        text = (ORIGINAL / path).read_text(encoding="utf-8")
        for old, new in changes.get(str(path), ()):
            text = text.replace(old, new)
        assert (copy.folder / path).read_text(encoding="utf-8") == text, path
    # Its questions, texts and verdicts are the original's, under names of its own.
    assert [q.id for q in (*copy.predictions, *copy.checks)] == [
        q.id.replace(f"{original.slug}.", f"{SLUG}.", 1) for q in (*original.predictions, *original.checks)]
    entries = [("naive", fake("naive", m=8, mbs=16, bubble=0.75, step_ms=40.0, formula=0.75)),
               ("GPipe", fake("gpipe", m=8, mbs=16, bubble=0.3, step_ms=10.0, formula=7 / 19))]
    for lang in i18n.LANGUAGES:
        for ours, theirs in zip((*copy.predictions, *copy.checks), (*original.predictions, *original.checks)):
            assert i18n.has(lang, ours.prompt) and i18n.text(lang, ours.prompt) == i18n.text(lang, theirs.prompt)
        for kind, judged in ((claims.RUN, entries[:1]), (claims.COMPARISON, entries)):
            ours = claims.verdict(SLUG, "c", kind, judged, lang=lang)
            theirs = claims.verdict(original.slug, "c", kind, judged, lang=lang)
            assert (ours.claim, ours.reason, ours.tests) == (theirs.claim, theirs.reason, theirs.tests), (lang, kind)
            assert ours.tests or ours.claim != "c", (lang, kind)  # it said its own claims.tests.<kind>
    assert i18n.lesson_title(copy, "zh") == "朴素模型并行（副本）"
