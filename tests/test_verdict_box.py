"""app/views/verdict_box.py: the line that says what a run tests keeps its label in italics in
both languages (issue 47: the Chinese page showed "*这次检验：*" with its asterisks)."""

from __future__ import annotations

import re

import pytest

from pipelab.app.views.verdict_box import tests_line as said_tests_line
from pipelab.lessons import i18n

# CommonMark's right-flanking rule, as far as it matters here: a closing * must not follow
# punctuation unless whitespace or punctuation follows it.
CLOSES_AFTER_PUNCTUATION = re.compile(r"[:：,，.。;；]\*(?=[^\s\W])")


@pytest.mark.parametrize("lang, expected", [("en", "*This tests*: each step"), ("zh", "*这次检验*：每一步")])
def test_the_label_stays_italic_in_both_languages(lang, expected):
    tests = "each step" if lang == "en" else "每一步"
    line = said_tests_line(i18n.text(lang, "verdict.tests"), tests)
    assert line == expected
    assert not CLOSES_AFTER_PUNCTUATION.search(line), line


def _row(unit, spread=None):
    from pipelab.lessons.verdict import ClaimRow
    return ClaimRow("q", 1.0, None, None, unit, spread)


@pytest.mark.parametrize("units, noted", [
    ((("x", (0.8, 0.9)), ("ms", None), ("ms", None)), True),   # lesson 5: a paired ratio beside each run's ms
    ((("x", (0.8, 0.9)), ("", None)), True),                   # the runs' table below has each run's bubble
    ((("x", None), ("ms", None)), False),                      # a ratio of one run's figures, not of pairs
    ((("ms", None),), False),
])
def test_a_paired_ratio_beside_ms_rows_says_which_median_it_is(units, noted):
    from pipelab.app.views.verdict_box import has_paired_ratio
    assert has_paired_ratio([_row(unit, spread) for unit, spread in units]) == noted
