"""Load the browser's chart and table code while the student reads, not after Run.

Streamlit's frontend fetches and evaluates the code of a chart or table kind (plotly's is
several megabytes) only when the first element of that kind appears. A lesson page shows
none before its first run, so the browser did all of it between the run's end and its
timeline on screen, which was the largest share of the wait after a run. One hidden,
empty chart and table, sent once per browser session after the page is drawn, move that
work to while the page is being read.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

KEY = "pipelab-warm-up"
"""The hidden container's key (its CSS class is ``st-key-`` + KEY), the session-state flag,
and the empty chart's ``layout.meta``: how tests tell it from a page's charts."""


def browser_code() -> None:
    """Once per browser session: an empty plotly chart and table, hidden. Later reruns send
    nothing; the code stays loaded in the tab."""
    if st.session_state.get(KEY):
        return
    st.session_state[KEY] = True
    with st.container(key=KEY):
        st.html(f"<style>.st-key-{KEY} {{ display: none; }}</style>")
        st.plotly_chart(go.Figure(layout={"meta": KEY}), key=f"{KEY}:chart")
        st.dataframe({KEY: []}, key=f"{KEY}:table")
