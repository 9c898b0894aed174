"""What a page lays out for a student (issue 26, item 6): the claim's numbers first in wide
tables, no toolbar over the claim, and no source file paths on any page."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from pipelab.lessons import i18n
from tests.test_course_pages import PAGES, on_screen_texts, open_page

SOURCE_PATH = re.compile(r"\b[\w-]+/[\w/-]*\w\.py\b")
"""engine/theory/formulas.py and the like: a maintainer's map, not a student's."""


def test_the_recap_table_shows_its_numbers_first():
    at = open_page("page_scripts/recap.py")
    columns = list(at.dataframe[0].value.columns)
    col = lambda name: i18n.text("en", f"recap.col.{name}")  # noqa: E731
    assert columns[:4] == [col("schedule"), col("formula_value"), col("simulated"), col("step")]
    assert len(columns) == 7, "few enough to fit a 1400 px page whole"
    prose = at.table[0].value
    assert list(prose.columns) == [col("synchronous"), col("formula"), col("constraints"), col("summary")], \
        "the words apart, wrapped"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", [*PAGES, "page_scripts/recap.py", "page_scripts/about.py",
                                  "page_scripts/glossary.py"])
def test_no_page_shows_a_source_path(page, lang):
    at = open_page(page, lang)
    texts = on_screen_texts(at) + [str(df.value.to_dict()) for df in at.dataframe]
    assert [x for x in texts if SOURCE_PATH.search(x)] == []


def test_the_checker_finds_a_source_path():
    assert SOURCE_PATH.search("the closed forms in engine/theory/formulas.py and")
    assert not SOURCE_PATH.search("runs?run=ID, 3/19, p·v ≤ layers")


def verdict_page():
    from pipelab.app.views import verdict_box
    from pipelab.lessons import claims
    verdict_box.verdict_view(claims.Verdict(
        claim="A claim long enough to reach the right edge of the page, where a table's toolbar appears on hover.",
        rows=(claims.ClaimRow("bubble fraction", 0.21, 0.2, 0.2),), status=claims.HOLDS, reason="Close."))


def test_the_verdict_table_is_static_under_the_claim():
    at = AppTest.from_function(verdict_page, default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    assert not at.dataframe, "an interactive table's toolbar covers the line above it on hover"
    table = at.table[0].value
    assert list(table.index) == ["bubble fraction"]
    assert list(table.iloc[0]) == ["0.210", "0.200", "0.200"]


def verdict_with_tests_page():
    from pipelab.app import i18n
    from pipelab.app.views import verdict_box
    from pipelab.lessons import claims
    i18n.language_switch()
    verdict_box.verdict_view(claims.Verdict(claim="c", rows=(), status=claims.HOLDS, reason="r", tests="每个设备忙。"))


def test_the_chinese_tests_line_has_no_space_after_its_colon():
    """The walk read "这次检验： 每个设备…": a gap after a full-width colon."""
    at = AppTest.from_function(verdict_with_tests_page, default_timeout=30)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    # The colon outside the italics: "*这次检验：*" showed its asterisks (tests/test_verdict_box.py).
    assert any(m.value == "*这次检验*：每个设备忙。" for m in at.markdown), [m.value for m in at.markdown]
