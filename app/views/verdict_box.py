"""The verdict box: a claim, the numbers that test it (device clock beside formula and simulator)
and the verdict in words, the first thing a finished run, comparison or sweep shows."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pipelab.app.i18n import current_lang, t
from pipelab.lessons import claims


def _measured(row) -> str:
    """The measured figure, with its spread over pairs of steps (or rounds) where it is a median of them."""
    if row.spread is None:
        return _value(row.measured, row.unit)
    low, high = (_value(x, row.unit) for x in row.spread)
    return t("verdict.spread", value=_value(row.measured, row.unit), low=low, high=high)


def _value(x, unit: str) -> str:
    if x is None:
        return "—"
    if unit == "count":
        return f"{x:.0f}"
    if unit == "x":
        return f"{x:.3f}×"
    if unit in ("ms", "MiB"):
        return f"{x:.2f} {unit}"
    return f"{x:.3f}"


STATUS_BOX = {claims.HOLDS: st.success, claims.NOISE: st.info, claims.FAILS: st.warning, claims.UNTESTED: st.info}


def status_text(status: str) -> str:
    """A verdict's status in the page's language (claims keeps language-neutral ids)."""
    key = claims.STATUS_KEYS.get(status)
    return t(key) if key else status


def verdict_view(verdict: claims.Verdict | None) -> None:
    """The claim, the numbers that test it (device clock beside formula and simulator), and
    the verdict in words: the first thing a finished run shows."""
    if verdict is None:
        return
    with st.container(border=True):
        st.markdown(f"**{t('page.claim')}** {verdict.claim}")
        if verdict.tests:  # the part of the claim this run, comparison or sweep can test
            st.markdown(tests_line(t("verdict.tests"), verdict.tests))
        if verdict.rows:
            # A static table, its quantities as the index: an interactive one's toolbar, shown
            # on hover above its top right corner, covered the end of the claim's line.
            st.table(pd.DataFrame([{t("verdict.col.measured"): _measured(row),
                                    t("verdict.col.formula"): _value(row.formula, row.unit),
                                    t("verdict.col.simulated"): _value(row.simulated, row.unit)}
                                   for row in verdict.rows], index=[row.quantity for row in verdict.rows]))
            if has_paired_ratio(verdict.rows):
                st.caption(t("verdict.paired_note"))
        STATUS_BOX[verdict.status](t("verdict.line", status=status_text(verdict.status), reason=verdict.reason))
        walk_view(verdict.walk)


def has_paired_ratio(rows) -> bool:
    """A table with a paired ratio (the median over pairs of steps, with its range): each run's
    own figures, here or in the runs' table below (its step in ms, its bubble), are that run's
    medians. The walk divided lesson 5's 59.54 ms by 69.62 ms, got 0.855 beside the table's
    0.866x and read two figures for one ratio; the note says which one is judged and why."""
    return any(row.unit == "x" and row.spread is not None for row in rows)


def walk_view(walk) -> None:
    """From the claim's number to the measured one, one effect a row (Verdict.walk), in the
    page's language: where a bubble sits apart from its formula, this says by what."""
    if not walk:
        return
    from pipelab.app.views.charts import breakdown_label
    lang = current_lang()
    st.markdown(f"*{t('verdict.walk')}*")
    st.table(pd.DataFrame([{t("verdict.walk.bubble"): f"{row.value:.3f}",
                            t("verdict.walk.change"): "" if row.change is None else _change(row.change)}
                           for row in walk],
                          index=[t("verdict.walk.equal_costs") if row.label == claims.EQUAL_COSTS_LABEL
                                 else _escaped(breakdown_label(row.label, lang)) for row in walk]))


def _change(change: float) -> str:
    """A step's change, signed; one that rounds to nothing is +0.000, never -0.000."""
    return f"{0.0 if round(change, 3) == 0 else change:+.3f}"


def _escaped(label: str) -> str:
    """A breakdown row's "+ effect" label as text: a table cell reads a leading "+ " as a list bullet."""
    return "\\" + label if label.startswith("+ ") else label


def tests_line(label: str, tests: str) -> str:
    """"*This tests:* ..." as markdown. The colon stays outside the italics: "*这次检验：*每个" is
    no emphasis to markdown (a closing * after punctuation needs a space or punctuation after
    it) and showed its asterisks; no space after a Chinese full-width colon."""
    bare = label.rstrip(":：")
    colon = label[len(bare):]
    return f"*{bare}*{colon}{'' if colon == '：' else ' '}{tests}"
