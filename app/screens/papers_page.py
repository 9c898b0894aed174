"""At the papers' scale: the Zero Bubble paper's Table 5 rows, and its bubble rate for every
schedule of that table from a setup the student starts from (one of the paper's rows or their
own) and changes (engine/theory/papers.py), beside the paper's closed forms and memory figures."""

from __future__ import annotations

import math
from dataclasses import fields

import streamlit as st

from pipelab.app.i18n import current_lang, error_text, t
from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.theory.papers import (
    INTERLEAVED_CHUNKS,
    TABLE5_SCHEDULES,
    TABLE_5,
    PublishedRow,
    formula_rates,
    paper_bubble_rate,
)
from pipelab.engine.theory.papers_memory import TABLE_2_PEAK, TABLE_4_GB, memory_row
from pipelab.lessons import i18n as catalogs

MAX_STAGES, MAX_MICROBATCHES, MAX_CHUNKS = 32, 256, 8
"""Room for the paper's setups (p = 32, m = 256); ZB-1p and ZB-2p simulate a dozen candidate
orders each (engine/schedules/cost_search.py): under a second at p = 8, some seconds at p = 32,
m = 256, most of them building those candidates and their peak memory."""


def row_label(row: PublishedRow) -> str:
    return f"{row.model}, p = {row.p}, m = {row.m}"


def published_rows() -> list[dict]:
    """Table 5 with Table 9's costs, as printed: no simulation."""
    col = lambda name: t(f"papers.col.{name}")  # noqa: E731
    return [{col("model"): r.model, "p": r.p, "m": r.m, "T_F": r.costs.forward, "T_B": r.costs.backward_input,
             "T_W": r.costs.backward_weight, "T_comm": r.costs.link, **{c: f"{x:.4f}" for c, x in r.rates.items()}}
            for r in TABLE_5]


def is_setup_of(row: PublishedRow, p: int, m: int, costs: PassCosts, chunks: int) -> bool:
    """Whether the inputs are still ``row``'s as its boxes show them: typed_number writes a cost
    to six significant digits, so Table 1's W share 16/37 comes back as 0.432432. Compared to a
    relative 1e-6, nine of the twelve rows were never their own setup and showed no paper figure."""
    same_costs = all(f"{getattr(row.costs, f.name):g}" == f"{getattr(costs, f.name):g}" for f in fields(PassCosts))
    return (row.p, row.m, row.chunks) == (p, m, chunks) and same_costs


def _ours(name: str, p: int, m: int, costs: PassCosts, chunks: int) -> str:
    try:
        return f"{paper_bubble_rate(name, p, m, costs, chunks):.4f}"
    except ScheduleError as err:  # interleaved's rule on m and p, in the page's words and one line
        return error_text(err).splitlines()[0]


def typed_number(col, label: str, value, low, high=None, whole: bool = False):
    """A box that takes what is typed, as the lesson pages' do: the number, or None after a red
    line naming its range. A number box turned red with the reason only in a tooltip and the
    table went on showing the old m under a box that read -3 (the walk, issue 47)."""
    shown = f"{value:g}" if not whole else str(value)
    typed = col.text_input(label, value=shown)
    try:
        got = int(typed.strip()) if whole else float(typed.strip().replace(",", "."))
    except ValueError:
        got = None
    if got is not None and math.isfinite(got) and got >= low and (high is None or got <= high):
        return got
    if high is None and not whole:  # "a number in ≥ 0" read badly (the walk): said as a lower bound
        said = t("papers.bad_number_min", label=label, low=f"{low:g}", got=typed.strip())
    else:
        limits = f"{low:g}–{high:g}" if high is not None else f"≥ {low:g}"
        said = t("papers.bad_whole" if whole else "papers.bad_number", label=label, range=limits, got=typed.strip())
    col.markdown(f":red[{said}]")
    return None


def rate_rows(p: int, m: int, costs: PassCosts, chunks: int = INTERLEAVED_CHUNKS,
              row: PublishedRow | None = None) -> list[dict]:
    """One row per Table 5 column: our simulated rate, the paper's where the setup is ``row``'s,
    the closed form where the paper has one, and the peak activations beside the paper's."""
    formula = formula_rates(p, m, costs)
    col = lambda name: t(f"papers.col.{name}")  # noqa: E731
    same = row is not None and is_setup_of(row, p, m, costs, chunks)
    rows = []
    for column, name in TABLE5_SCHEDULES.items():
        try:
            peak = memory_row(column, p, m, costs, chunks)
        except ScheduleError:  # the rate's cell says why (1F1B-I's m % p rule)
            peak = None
        paper_peak = TABLE_2_PEAK.get(column)
        measured = TABLE_4_GB[row.model].get(column) if same else None
        rows.append({
            col("schedule"): column, col("registry"): catalogs.schedule_option(current_lang(), name),
            col("ours"): _ours(name, p, m, costs, chunks),
            col("paper"): f"{row.rates[column]:.4f}" if same else "—",
            col("formula"): "—" if formula[column] is None else f"{formula[column]:.4f}",
            col("peak_ours"): "—" if peak is None else f"{peak.ours_whole:.3g} / {peak.ours_weighted:.3g}",
            col("peak_paper"): "—" if paper_peak is None else str(paper_peak(p)),
            col("measured"): "—" if measured is None else str(measured)})
    return rows


def render_papers() -> None:
    st.title(t("papers.title"))
    st.markdown(t("papers.intro"))
    st.caption(t("papers.published"))
    st.dataframe(published_rows(), hide_index=True)
    choices = [t("papers.own_costs")] + [row_label(r) for r in TABLE_5]
    # The page opens on the paper's first row (1.5B, p = 8: the quickest to build), so its
    # figure stands beside ours before anything is changed.
    picked = st.selectbox(t("papers.start_from"), range(len(choices)), index=1, format_func=choices.__getitem__)
    row = TABLE_5[picked - 1] if picked else None
    start = row.costs if row else PassCosts()
    left, right = st.columns(2)
    # No keys: a widget's default is part of its identity, so picking a row resets the inputs to it.
    p = typed_number(left, t("papers.p"), row.p if row else 8, 2, MAX_STAGES, whole=True)
    m = typed_number(left, t("papers.m"), row.m if row else 24, 1, MAX_MICROBATCHES, whole=True)
    t_f = typed_number(right, t("papers.t_f"), start.forward, 0.0)
    t_b = typed_number(right, t("papers.t_b"), start.backward_input, 0.0)
    t_w = typed_number(right, t("papers.t_w"), start.backward_weight, 0.0)
    link = typed_number(right, t("papers.t_comm"), start.link, 0.0)
    v = typed_number(right, t("papers.v"), row.chunks if row else INTERLEAVED_CHUNKS, 1, MAX_CHUNKS, whole=True)
    share = typed_number(right, t("papers.weight_memory"), start.weight_memory, 0.0, 1.0)
    if None in (p, m, t_f, t_b, t_w, link, v, share):  # each box's own red line says why
        st.warning(t("recap.fix_settings"))
        return
    try:
        costs = PassCosts(forward=t_f, backward_input=t_b, backward_weight=t_w, link=link, weight_memory=share)
    except ScheduleError as err:
        st.error(error_text(err))
        return
    if row is not None and is_setup_of(row, int(p), int(m), costs, int(v)):
        costs = row.costs  # the row's own figures, not their six shown digits: bench/PAPERS.md's rates
    with st.spinner():
        st.table(rate_rows(int(p), int(m), costs, int(v), row))
    st.caption(t("papers.caption"))


__all__ = ["published_rows", "rate_rows", "render_papers"]
