"""About: how PipeLab measures, and how to read the charts."""

import streamlit as st

from pipelab.app import i18n
from pipelab.app.i18n import t
from pipelab.app.runner.runs import get_runner
from pipelab.app.views.charts import legend_html
from pipelab.engine.config import Limits

st.title(t("about.title"))
st.markdown(t("about.body"))
st.subheader(t("about.colours"))
st.markdown(legend_html(i18n.current_lang(), with_reduce=True), unsafe_allow_html=True)  # every colour a chart uses
limits = Limits.from_env()
running, queued = get_runner().counts()
st.subheader(t("about.server"))
st.markdown(t("about.server_text", concurrent=get_runner().max_concurrent, running=running, queued=queued,
              stages=limits.max_stages, microbatches=limits.max_microbatches, layers=limits.max_layers,
              hidden=limits.max_hidden, size=limits.max_microbatch_size, steps=limits.max_steps,
              seconds=f"{limits.max_seconds:g}"))
