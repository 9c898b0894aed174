"""My runs: every run this browser started, one opened or two side by side; and the page a
run's link (``runs?run=ID``) opens, which shows that run alone."""

from __future__ import annotations

import streamlit as st

from app import browser, results
from app.runs import get_store
from app.storage import RunStore, StoredRun, valid_run_id
from engine.schema import ResultSchemaError

RUN_PARAM = "run"
LIST_COLUMNS = ("run", "time", "lesson", "label", "setting schedule", "setting stages", "setting microbatches",
                "setting model", "bubble (device)", "step ms (device)")


def title(run: StoredRun) -> str:
    s = run.settings
    return f"{run.label} ({run.lesson}, p={s['stages']} m={s['microbatches']}, {run.id})"


def opened(store: RunStore, run_id: str):
    """The stored RunResult, None if there is none, or False after saying in one line why it
    cannot be opened (saved by a newer PipeLab, say: docs/results.md, "Versions")."""
    try:
        return store.load(run_id)
    except ResultSchemaError as err:
        st.error(f"Run {run_id} cannot be opened here: {err}")
        return False


def shared_run(store: RunStore, run_id: str) -> None:
    """The run a link names, and nothing else of this server's."""
    if not valid_run_id(run_id):
        st.error("This link's run id is not valid: a run id is 12 letters, digits, '-' or '_'.")
        return
    run = store.get(run_id)
    result = opened(store, run_id) if run else None
    if result is False:
        return
    if result is None:
        st.warning(f"No run {run_id} on this server (runs are pruned, oldest first, when storage fills up).")
        return
    st.subheader(title(run))
    st.caption(f"Kept {run.row()['time']}. Link: runs?run={run.id}")
    results.run_view(result, key=f"stored:{run.id}")


def my_runs(store: RunStore) -> None:
    runs = store.runs_of(browser.browser_id())
    if not runs:
        st.info("No runs from this browser yet: run a lesson and it is kept here, with a link to share.")
    else:
        st.dataframe([{k: v for k, v in r.row().items() if k in LIST_COLUMNS} for r in runs], hide_index=True,
                     width="stretch")
    by_id = {r.id: r for r in runs}
    added = st.session_state.setdefault("my-runs:added", [])  # others' runs added in this session
    other = st.text_input("Add a run from its link or id (a classmate's, say)", key="my-runs:other",
                          placeholder="runs?run=... or the 12-character id").strip()
    if other:
        other_id = other.rsplit("=", 1)[-1]
        found = store.get(other_id) if valid_run_id(other_id) else None
        if found is None:
            st.error(f"No run {other_id!r} on this server: a run id is 12 letters, digits, '-' or '_'.")
        elif found.id not in added:
            added.append(found.id)
    for run_id in added:
        found = by_id.get(run_id) or store.get(run_id)
        if found is not None:
            by_id[run_id] = found
    if not by_id:
        return
    chosen = st.multiselect("Open one run, or choose two to compare side by side", list(by_id),
                            format_func=lambda rid: title(by_id[rid]), max_selections=2, key="my-runs:chosen")
    loaded = [(title(by_id[rid]), opened(store, rid)) for rid in chosen]
    loaded = [(label, result) for label, result in loaded if result]
    if len(loaded) == 1:
        results.run_view(loaded[0][1], key=f"stored:{chosen[0]}")
    elif len(loaded) == 2:
        results.comparison_view(loaded, key="stored:compare")


def render() -> None:
    st.title("My runs")
    store = get_store()
    if store.notice:
        st.warning(store.notice)
    run_id = st.query_params.get(RUN_PARAM)
    if run_id is not None:
        shared_run(store, run_id)
        return
    st.caption("Every run this browser started on this server, newest first. Each has a link "
               "(runs?run=ID) that opens it for anyone on this server.")
    my_runs(store)
