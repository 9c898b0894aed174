"""A schedule's table as the playground shows it: every header apart from the next, every
column lined up under its header, in English and in Chinese (a Chinese character is two
columns wide)."""

from __future__ import annotations

import pytest
from test_app import open_page

from pipelab.engine.theory.validate import InvalidSchedule, TableWords, parse_schedule, validate
from pipelab.lessons import i18n
from pipelab.lessons.schedule_table import display_width, schedule_table

SWAPPED = "0B0 0F0 0F1 0B1\n1F0 1B0 1F1 1B1"


def words(lang: str) -> TableWords:
    return TableWords(*(i18n.text(lang, f"table.{part}") for part in ("step", "rank", "here")))


def marked(text: str):
    with pytest.raises(InvalidSchedule) as err:
        validate(parse_schedule(text))
    return err.value


def column_ends(line: str) -> list[int]:
    """The display column where each space-separated field of ``line`` ends."""
    ends, column, inside = [], 0, False
    for ch in line:
        if ch == " " and inside:
            ends.append(column)
        inside = ch != " "
        column += display_width(ch)
    return ends + ([column] if inside else [])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_headers_stand_apart_and_cells_line_up_under_them(lang):
    err = marked(SWAPPED)
    w = words(lang)
    table = schedule_table(err.schedule, err.mark, w).splitlines()
    header = table[0]
    heads = [f"{w.rank} {r}" for r in range(2)]
    assert "".join(heads) not in header, header  # "device 0device 1" ran together
    assert all(f"  {head}" in header for head in heads), header
    # Every row's device cells end where their header ends.
    header_ends = column_ends(header.replace(f"{w.rank} ", f"{w.rank}\0"))
    for row in table[1:]:
        cells = column_ends(row.removesuffix("   " + w.here))
        assert cells[1:] == header_ends[1:], (row, header)
    assert table[1].endswith(w.here) and "*0B0" in table[1]


def test_the_english_table_reads_its_header_apart():
    err = marked(SWAPPED)
    header = schedule_table(err.schedule, err.mark, words("en")).splitlines()[0]
    assert [cell.strip() for cell in header.split("  ") if cell.strip()] == ["action", "device 0", "device 1"]


def test_a_long_action_widens_its_column():
    table = schedule_table(parse_schedule("0F0 0F10 0B0 0B10"), words=words("en")).splitlines()
    assert [len(line) for line in table[1:]] == [len(table[0])] * 4


def test_the_playground_page_shows_the_header_apart():
    at = open_page("playground")
    at.text_area(key="playground:custom").set_value(SWAPPED)
    at.button(key="playground:validate").click().run()
    assert not at.exception
    (table,) = [c.value for c in at.code]
    assert table.splitlines()[0].split() == ["action", "device", "0", "device", "1"]
    assert "0device" not in table and "*0B0" in table
