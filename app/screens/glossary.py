"""The bilingual glossary: each term in English and Chinese, explained in the page's language."""

from __future__ import annotations

import streamlit as st

from pipelab.app.i18n import current_lang, t
from pipelab.lessons import i18n as catalogs


def glossary_rows(lang: str) -> list[dict]:
    """One row per term: English, Chinese, and the meaning in ``lang``."""
    col = lambda name: catalogs.text(lang, f"glossary.col.{name}")  # noqa: E731
    return [{col("en"): catalogs.text("en", f"glossary.{term}.term"),
             col("zh"): catalogs.text("zh", f"glossary.{term}.term"),
             col("meaning"): catalogs.text(lang, f"glossary.{term}.meaning")} for term in catalogs.glossary_terms()]


def render_glossary() -> None:
    st.title(t("glossary.title"))
    st.caption(t("glossary.intro"))
    st.table(glossary_rows(current_lang()))


__all__ = ["glossary_rows", "render_glossary"]
