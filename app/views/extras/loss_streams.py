"""Below a comparison: each run's loss over steps on one chart (the asynchronous streams beside a synchronous one)."""

from __future__ import annotations

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.views import charts
from pipelab.lessons import Extra


def render(extra: Extra, entries, key: str) -> None:
    st.plotly_chart(charts.loss_figure([(str(label), r.losses) for label, r in entries], t(extra.key("title")),
                                       i18n.current_lang()),
                    key=f"{key}:stream-losses", width="stretch")
    st.caption(t(extra.key("caption")))
