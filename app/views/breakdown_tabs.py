"""Each run's bubble breakdown under a comparison's or a sweep's Details, one tab per run.

The verdicts point here when a claim does not hold (pipelab.lessons.why). Texts: ``extras.breakdowns``,
``extras.no_breakdown``.
"""

from __future__ import annotations

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.views import charts
from pipelab.engine.theory.breakdown import breakdown_table


def breakdowns(entries, key: str) -> None:
    """Each run's bubble breakdown (pipelab.engine.theory.breakdown), one tab per run."""
    if not entries:
        return
    lang = i18n.current_lang()
    st.caption(t("extras.breakdowns"))
    tabs = st.tabs([str(label) for label, _ in entries])
    for i, (tab, (_, result)) in enumerate(zip(tabs, entries)):
        with tab:
            if not result.metrics.bubble_breakdown:
                st.caption(t("extras.no_breakdown"))
                continue
            st.plotly_chart(charts.breakdown_figure(breakdown_table(result.metrics), lang), key=f"{key}:breakdown:{i}",
                            width="stretch")
