"""At the papers' scale: the Zero Bubble paper's bubble rate for every schedule of its Table 5,
from costs the student types (engine/theory/papers.py), beside the paper's closed forms."""

from __future__ import annotations

import streamlit as st

from pipelab.app.i18n import t
from pipelab.engine.actions import ScheduleError
from pipelab.engine.theory.papers import INTERLEAVED_CHUNKS, TABLE5_SCHEDULES, TABLE_5, formula_rates, paper_bubble_rate
from pipelab.engine.schedules.costs import PassCosts

MAX_STAGES, MAX_MICROBATCHES = 32, 128
"""Room for setups of tens of stages; ZB-1p and ZB-2p simulate a few candidate orders each
(engine/schedules/cost_search.py), a few seconds at p = 32."""


def rate_rows(p: int, m: int, costs: PassCosts) -> list[dict]:
    """One row per Table 5 column: our simulated rate, and the closed form where the paper has one."""
    formula = formula_rates(p, m, costs)
    col = lambda name: t(f"papers.col.{name}")  # noqa: E731
    rows = []
    for column, name in TABLE5_SCHEDULES.items():
        try:
            ours = f"{paper_bubble_rate(name, p, m, costs, INTERLEAVED_CHUNKS if name == 'interleaved' else None):.4f}"
        except ScheduleError as err:  # interleaved needs m % p == 0: say which rule, in one line
            ours = str(err).splitlines()[0]
        rows.append({col("schedule"): column, col("registry"): name, col("ours"): ours,
                     col("formula"): "—" if formula[column] is None else f"{formula[column]:.4f}"})
    return rows


def render_papers() -> None:
    st.title(t("papers.title"))
    st.markdown(t("papers.intro", v=INTERLEAVED_CHUNKS))
    if not TABLE_5:
        st.info(t("papers.missing"))
    left, right = st.columns(2)
    p = left.number_input(t("papers.p"), min_value=2, max_value=MAX_STAGES, value=8, step=1)
    m = left.number_input(t("papers.m"), min_value=1, max_value=MAX_MICROBATCHES, value=24, step=1)
    t_f = right.number_input(t("papers.t_f"), min_value=0.0, value=1.0, step=0.1)
    t_b = right.number_input(t("papers.t_b"), min_value=0.0, value=1.0, step=0.1)
    t_w = right.number_input(t("papers.t_w"), min_value=0.0, value=1.0, step=0.1)
    link = right.number_input(t("papers.t_comm"), min_value=0.0, value=0.0, step=0.05)
    try:
        costs = PassCosts(forward=t_f, backward_input=t_b, backward_weight=t_w, link=link)
    except ScheduleError as err:
        st.error(str(err))
        return
    st.table(rate_rows(int(p), int(m), costs))
    st.caption(t("papers.caption"))


__all__ = ["rate_rows", "render_papers"]
