"""Issue 47, finding 3: every recap cell that is empty or whose formula and simulator differ says
why, in both languages (pipelab.app.screens.recap_notes), and no cell shows the word None."""

from __future__ import annotations

import dataclasses

import pytest

from pipelab.app.screens import recap_notes
from pipelab.app.screens.recap import table_rows
from pipelab.lessons.overview import schedule_rows


@pytest.fixture(params=["en", "zh"])
def lang(request, monkeypatch):
    monkeypatch.setattr("pipelab.app.i18n.current_lang", lambda: request.param)
    return request.param


def test_every_gap_and_every_empty_cell_has_a_reason_over_a_sweep(monkeypatch):
    monkeypatch.setattr("pipelab.app.i18n.current_lang", lambda: "en")
    for p in range(1, 9):
        for m in range(1, 2 * p + 3):  # past m = 2p, where the last reason (ZB-V's V) ends
            rows = schedule_rows(p, m, 2)
            named = dict(recap_notes.notes(rows, p, m))
            # every gap's reason known: none falls back to the note for a gap the page cannot name
            assert not [name for name, note in named.items() if "a reason this page does not name" in note], (p, m)
            for row in rows:
                empty = row.error is not None or row.formula_value is None
                gap = not empty and abs(row.formula_value - row.simulated_bubble) > recap_notes.AGREE
                assert (row.name in named) == (empty or gap), (p, m, row.name)
            assert not [cell for r in table_rows(rows) for cell in r.values() if cell is None or cell == "None"]


@pytest.mark.parametrize("p, m, schedule, en, zh", [
    (4, 8, "dualpipev", "is an upper bound", "是上界"),
    (8, 6, "zb-h1", "is for m at least p, a full steady state; here m = 6 < p = 8, so the simulator idles 0.053 more",
     "这里 m = 6 < p = 8，所以模拟器多空闲 0.053"),
    (5, 6, "zb-v", "holds once the V is full, m at least 2p = 10; here m = 6", "即 m 不少于 2p = 10"),
    (8, 6, "interleaved", "empty: it cannot run at these settings (", "空：此设置下无法运行（"),
    (4, 8, "zb-2p", "no formula: its paper gives no closed form", "无公式"),
])
def test_the_walks_cells_read_their_reason(lang, p, m, schedule, en, zh):
    named = dict(recap_notes.notes(schedule_rows(p, m, 2), p, m))
    assert {"en": en, "zh": zh}[lang] in named[schedule]


def test_agreeing_cells_need_no_note():
    assert "1f1b" not in dict(recap_notes.notes(schedule_rows(4, 8, 2), 4, 8))


def test_a_gap_with_no_known_reason_is_said_as_such_not_raised(monkeypatch):
    monkeypatch.setattr("pipelab.app.i18n.current_lang", lambda: "en")
    row = next(r for r in schedule_rows(4, 8, 2) if r.name == "1f1b")
    odd = dataclasses.replace(row, simulated_bubble=row.formula_value + 0.1)
    assert "a reason this page does not name" in recap_notes.cell_note(odd, 4, 8)
