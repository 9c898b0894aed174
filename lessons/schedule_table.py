"""A schedule as a page shows it: a plain-text table, one column per device, in the page's words.

Plain data, no Streamlit. The engine's own table (pipelab.engine.theory.validate.format_table,
in its English error lines) sizes its columns by the actions alone; a page's words ("device 0",
"设备 0") are wider, so here every column is as wide as its widest cell or header, counted in
the columns a monospace font gives it (a Chinese character takes two).
"""

from __future__ import annotations

import unicodedata

from pipelab.engine.theory.validate import TableWords


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospace font: two for a wide (East Asian) character."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _right(text: str, width: int) -> str:
    return " " * max(0, width - display_width(text)) + text


def _left(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def schedule_table(schedule, mark: tuple[int, int] | None = None, words: TableWords | None = None) -> str:
    """Rows are program steps, columns devices; ``mark=(rank, step)`` flags one cell with * and
    its row with ``words.here`` (the engine's English words when none are given). Step k is each
    device's k-th action, not a moment in time."""
    words = words or TableWords()
    ranks = schedule.num_ranks
    steps = max((len(program) for program in schedule.actions), default=0)
    heads = [f"{words.rank} {r}" for r in range(ranks)]
    rows = [[("*" if mark == (r, k) else "") + (str(program[k]) if k < len(program) else "")
             for r, program in enumerate(schedule.actions)] for k in range(steps)]
    width = max(display_width(cell) for cell in [*heads, *(c for row in rows for c in row)])
    step_width = max(4, display_width(words.step), len(str(max(steps - 1, 0))))
    lines = [_left(words.step, step_width) + "".join("  " + _right(head, width) for head in heads)]
    for k, row in enumerate(rows):
        line = _right(str(k), step_width) + "".join("  " + _right(cell, width) for cell in row)
        if mark is not None and mark[1] == k:
            line += "   " + words.here
        lines.append(line)
    return "\n".join(lines)


__all__ = ["display_width", "schedule_table"]
