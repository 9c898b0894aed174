"""Below a comparison: the weight versions each device kept, per run, measured (theory)."""

from __future__ import annotations

import streamlit as st

from pipelab.app.i18n import t
from pipelab.lessons import Extra


def weight_version_rows(entries) -> list[dict]:
    """One row per run: each device's weight versions, measured (theory)."""
    rows = []
    for label, result in entries:
        row = {t("extras.run"): str(label)}
        for r, mem in sorted(result.memory.items()):
            theory = mem.theory_weight_versions
            row[t("extras.device", r=r)] = f"{mem.weight_versions}" + ("" if theory is None else f" ({theory})")
        rows.append(row)
    return rows


def render(extra: Extra, entries, key: str) -> None:
    st.markdown(f"**{t(extra.key('title'))}**")
    st.dataframe(weight_version_rows(entries), hide_index=True, width="stretch")
    st.caption(t(extra.key("caption")))
