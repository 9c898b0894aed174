"""Lesson 6's verdict reads each figure as its claim table shows it (issue 47, item 3): the
table prints a ratio to three decimals, and the verdict said the same ratio to two."""

from __future__ import annotations

import re

import pytest

from pipelab.app.views.verdict_box import _value
from pipelab.lessons.verdict import COMPARISON
from tests.test_claims import fake, judge


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_peak_memory_ratio_reads_as_the_claim_table_shows_it(lang):
    from pipelab.lessons.claims import verdict
    h1 = fake("zb-h1", bubble=0.10, simulated=0.10, step_ms=9.0, peak_mib=1.0044)
    one_f = fake("1f1b", bubble=0.30, simulated=0.30, step_ms=10.0, peak_mib=1.0)
    v = verdict("zero-bubble", "c", COMPARISON, [("ZB-H1", h1), ("1F1B", one_f)], lang=lang)
    row = next(r for r in v.rows if r.unit == "x" and r.formula == 1.0)  # ZB-H1 ÷ 1F1B peak memory
    shown = _value(row.measured, row.unit).rstrip("×")
    assert shown == "1.004"
    assert re.search(rf"{shown}\s*(x|倍)", v.reason), v.reason


def test_a_memory_ratio_past_its_limit_as_printed_is_not_held():
    """1.1004 reads 1.100 at three decimals: at the limit; 1.1006 reads 1.101, past it."""
    one_f = fake("1f1b", bubble=0.30, simulated=0.30, step_ms=10.0, peak_mib=1.0)
    at_limit = judge("zero-bubble", COMPARISON, fake("zb-h1", bubble=0.10, simulated=0.10, step_ms=9.0,
                                                     peak_mib=1.1004), one_f)
    past = judge("zero-bubble", COMPARISON, fake("zb-h1", bubble=0.10, simulated=0.10, step_ms=9.0,
                                                 peak_mib=1.1006), one_f)
    assert at_limit.status == "holds" and past.status != "holds"
