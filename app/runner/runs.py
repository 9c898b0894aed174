"""Submitting runs from a page and following them without blocking the script.

A "batch" is the list of runs one button started (the lesson's run, its comparisons, or a
sweep). Its job ids live in ``st.session_state``; a fragment polls the server-wide runner
every second and, when every job has finished, stores the results and reruns the page.

Every run that finishes is kept in the server's RunStore (app/runner/storage.py) by the runner's
own thread, under an id made when Run was pressed, whether or not its page is still open.
"""

from __future__ import annotations

import atexit
import statistics
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from pipelab import CHECKOUT
from pipelab.app import browser, i18n
from pipelab.app.i18n import t
from pipelab.app.runner.closed_tabs import ClosedTabs
from pipelab.app.runner.jobs import FINISHED, JobRunner
from pipelab.app.runner.storage import RunStore
from pipelab.app.runner.stored_run import new_run_id, run_context
from pipelab.engine.config import Limits, RunConfig, settings_error
from pipelab.engine.runtime.paired import STEPS_IN_TURN, SideBySideOutcome, SideBySideRequest
from pipelab.engine.schedules import get_schedule_info
from pipelab.lessons import Knobs
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.i18n.run_label import stored_form
from pipelab.lessons.own_keys import own_key

RECENT_RUNS = 10  # the wait estimate's median is over this many of the latest runs that ran


@st.cache_resource
def get_store() -> RunStore:
    """The server's stored runs (PIPELAB_DATA_DIR, else runs/ in the checkout, or in the
    working folder where PipeLab is installed)."""
    return RunStore.from_env(CHECKOUT or Path.cwd())


class _RecentRuns:
    """How long the server's latest runs took (wall clock)."""

    def __init__(self):
        self._seconds: deque[float] = deque(maxlen=RECENT_RUNS)
        self._lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self._lock:
            self._seconds.append(seconds)

    def median(self) -> float | None:
        with self._lock:
            return statistics.median(self._seconds) if self._seconds else None


@st.cache_resource
def recent_runs() -> _RecentRuns:
    return _RecentRuns()


def _keep_finished(config, result, tag) -> None:
    """The runner's on_done: store the run under the id its page already holds; settings run
    side by side, each run of the round the page shows (read by its headline) under its own id."""
    if isinstance(result, SideBySideOutcome):
        recent_runs().add(result.run_seconds)
        for leg_result, leg_tag in zip(result.shown((tag or {}).get("headline")), (tag or {}).get("legs", ())):
            _store(leg_result, leg_tag)
        return
    recent_runs().add(result.metrics.run_seconds)
    _store(result, tag)


def _store(result, tag) -> None:
    if tag:
        get_store().save(result, owner=tag["owner"], lesson=tag["lesson"], label=tag["label"], run_id=tag["run_id"],
                         context=tag.get("context"))


@st.cache_resource
def get_runner() -> JobRunner:
    """One runner for the whole server, shared by every session. Starting it also warms the
    engine's forkserver in the background, so a student's first Run does not pay for it."""
    from pipelab.app.runner import cluster
    from pipelab.app.runner.jobs import RANK_NICE
    from pipelab.engine.runtime.launch import warm_up
    if (where := cluster.shared()) is not None:  # PIPELAB_RAY_ADDRESS: runs go to a Ray cluster
        return _cluster_runner(where)
    stopping = threading.Event()
    warming = threading.Thread(target=warm_up, args=(RANK_NICE, stopping), name="pipelab-warm-up", daemon=True)
    warming.start()
    runner = JobRunner(on_done=_keep_finished)
    # On SIGTERM (docker stop, a test's stop) streamlit stops and the interpreter exits: cancel
    # what runs first, so each run's launcher stops its ranks and removes its temp folder.
    atexit.register(_stop_runs, runner, stopping, warming)
    return runner


def _session_alive(session_id: str) -> bool:
    """Whether the page session is still connected; True where no Streamlit server runs (AppTest
    has no runtime), so nothing is cancelled that could not be told apart."""
    from streamlit.runtime import Runtime
    return not Runtime.exists() or Runtime.instance().is_active_session(session_id)


@st.cache_resource
def closed_tabs() -> ClosedTabs:
    """The server's watcher that cancels the queued runs of a tab closed (app/runner/closed_tabs.py)."""
    watcher = ClosedTabs(get_runner(), _session_alive)
    watcher.start()
    atexit.register(watcher.stop)
    return watcher


def _note_session(job_ids: list[str]) -> None:
    """Note the jobs this page session queued, so its tab's closing cancels the queued ones."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    if ctx is not None:
        closed_tabs().add(ctx.session_id, job_ids)


def _cluster_runner(where) -> JobRunner:
    """A runner whose jobs run on the Ray cluster (app/runner/cluster.py), as many at once as
    its CPUs hold once it answers; the server starts no ranks of its own, so no warm-up."""
    runner = JobRunner(on_done=_keep_finished, execute=where, max_concurrent=1)

    def size_to_cluster() -> None:
        if where.connected():
            runner.set_max_concurrent(where.runs_at_once())
    threading.Thread(target=size_to_cluster, name="pipelab-ray-size", daemon=True).start()
    atexit.register(runner.stop)
    return runner


def _stop_runs(runner: JobRunner, stopping: threading.Event, warming: threading.Thread,
               timeout: float = 10.0) -> None:
    stopping.set()
    runner.stop(timeout)
    warming.join(timeout)


def wait_text(position: int, max_concurrent: int) -> str:
    """An honest estimate of a queued run's wait: its place times the recent median run
    (divided among the runs the server runs at once); none before any run has finished."""
    median = recent_runs().median()
    if median is None:
        return f"queued: position {position}"
    wait = position * median / max(1, max_concurrent)
    return (f"queued: position {position}, about {_duration(wait)} to start "
            f"({position} x {median:.1f} s, the median of the latest runs)")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def knobs_to_config(knobs: Knobs, **extra) -> RunConfig:
    """A lesson's Knobs as a RunConfig, with the gradient check on for synchronous schedules."""
    try:
        synchronous = get_schedule_info(knobs.schedule).synchronous
    except Exception:
        synchronous = False
    limits = Limits.from_env()
    return knobs.to_run_config(**{"check": synchronous, "timeout_s": min(120.0, limits.max_seconds), **extra})


def _key(name: str) -> str:
    return f"batch:{name}"


def start(name: str, items: list[tuple[object, RunConfig]], side_by_side: bool = False,
          kind: str | None = None, predictions: dict | None = None, pairs: int | None = None,
          headline: Callable | None = None, request=None) -> bool:
    """Validate every config (THE check: pipelab.engine.config.settings_error), then queue them all.

    A button measures anew: a second Run is a second measurement, never the first one
    replayed as if new; the stored runs stay in My runs with their times.
    ``side_by_side`` runs the settings as one comparison (engine/runtime/paired.py), so a ratio
    compares runs made under the same conditions; ``headline`` (pipelab.lessons.claims.headline,
    where the lesson names one) is the figure its pairs are read by, and the page shows them: the
    page reads the outcome by it (SideBySideOutcome.figures, .shown); the engine never calls it.

    A label may be a RunLabel (lessons/i18n/run_label.py): the page shows it in its language,
    the store keeps it in none, so My runs says it in its reader's. Shows ``st.error`` with
    the one-line reason and returns False if any is invalid.

    Each run is stored with its context (stored_run.run_context): the verdict's ``kind``
    (pipelab.lessons.claims RUN, COMPARISON, SWEEP; None: a run no claim judges), its batch, and
    the ``predictions`` locked in before it, so a shared link or My runs says the verdict the page said.

    ``request``, side by side: an engine request to queue instead of the settings' SideBySideRequest, whose
    outcome is a SideBySideOutcome with its runs in the items' order (a section's PlannedRequest,
    engine/runtime/planned_runs.py: the items are then the settings the page checks before; ``outcome`` reads it).
    """
    limits = Limits.from_env()
    for label, config in items:
        if (error := settings_error(config, limits)) is not None:
            line = i18n.error_text(error)
            colon = "：" if i18n.current_lang() == "zh" else ": "  # full-width after a Chinese label
            st.error(line if len(items) == 1 else f"{i18n.run_label(label)}{colon}{line}")
            return False
    if (problem := cluster_problem()) is not None:  # runs go to a cluster that does not answer
        st.error(i18n.error_text(problem))
        return False
    runner = get_runner()
    owner, lesson = browser.browser_id(), name.split(":")[0]
    run_ids = [new_run_id() for _ in items]
    contexts = [run_context(kind, run_ids[0], i, predictions) for i in range(len(items))]
    if side_by_side:
        request = request or SideBySideRequest(tuple(config for _, config in items), pairs=pairs)
        legs = [{"run_id": run_id, "owner": owner, "lesson": lesson, "label": stored_form(label), "context": context}
                for (label, _), run_id, context in zip(items, run_ids, contexts)]
        job_id = runner.submit(request, tag={"legs": legs, "headline": headline})
        _note_session([job_id])
        st.session_state[_key(name)] = {"jobs": [("", job_id)], "items": items, "finished": None, "run_ids": run_ids,
                                        "side_by_side": True, "headline": headline, "lesson": lesson}
        return True
    jobs = [(i18n.run_label(label), runner.submit(config,
                                                  tag={"run_id": run_id, "owner": owner, "lesson": lesson,
                                                       "label": stored_form(label), "context": context}))
            for (label, config), run_id, context in zip(items, run_ids, contexts)]
    _note_session([job_id for _, job_id in jobs])
    st.session_state[_key(name)] = {"jobs": jobs, "items": items, "finished": None, "run_ids": run_ids}
    return True


def cluster_problem():
    """Why runs cannot start on the Ray cluster PIPELAB_RAY_ADDRESS names (a coded Message), or
    None: runs can start, or go to this server's own cores (no variable)."""
    from pipelab.app.runner import cluster
    where = cluster.shared()
    return None if where is None else where.problem(wait_s=1.0)


def _error_line(error: str) -> str:
    """A finished job's error (a coded Message, app/runner/jobs.py) in the page's language."""
    return i18n.error_text(error)


def cancel(name: str) -> None:
    batch = st.session_state.get(_key(name))
    if batch and batch["finished"] is None:
        runner = get_runner()
        for _, job_id in batch["jobs"]:
            runner.cancel(job_id)


def active(name: str) -> bool:
    batch = st.session_state.get(_key(name))
    return bool(batch) and batch["finished"] is None


POLL_EVERY_S = 1.0
POLL_WAIT_S = 0.8  # of each tick: a click on Cancel waits at most this long for the page


@st.fragment(run_every=POLL_EVERY_S)
def _poll(name: str) -> None:
    batch = st.session_state.get(_key(name))
    if not batch or batch["finished"] is not None:
        return
    runner = get_runner()
    statuses = [(label, runner.status(job_id)) for label, job_id in batch["jobs"]]
    if not all(s.state in FINISHED or s.state == "unknown" for _, s in statuses):
        for label, s in statuses:
            prefix = f"{label}: " if len(statuses) > 1 else ""
            text = i18n.progress_text(wait_text(s.position, runner.max_concurrent) if s.state == "queued" else s.text)
            st.progress(s.fraction, text=f"{prefix}{text}")
        # Until the next tick, wait for the runs to end (the script's thread blocks, the
        # server does not): the result then shows at once rather than up to a tick later.
        if not runner.wait([job_id for _, job_id in batch["jobs"]], POLL_WAIT_S):
            return
        statuses = [(label, runner.status(job_id)) for label, job_id in batch["jobs"]]
    batch["finished"] = statuses
    st.rerun()


def panel(name: str, value_name: str | None = None):
    """Progress while the batch runs; afterwards (label, RunResult) pairs of the runs that
    finished, with errors and cache notes shown. None when nothing was run yet. ``value_name``:
    a sweep's knob symbol, so its lines and links say "m = 4", not a bare "4"."""
    batch = st.session_state.get(_key(name))
    if not batch:
        return None
    if batch["finished"] is None:
        _poll(name)
        return None
    if batch.get("side_by_side"):
        return _side_by_side_panel(batch, value_name)
    done, kept = [], []
    for (label, s), run_id in zip(batch["finished"], batch.get("run_ids") or [None] * len(batch["finished"])):
        said = label if value_name is None else f"{value_name} = {label}"
        prefix = f"{said}: " if len(batch["finished"]) > 1 else ""
        if s.state == "done":
            done.append((i18n.run_label(label) if isinstance(label, str) else label, s.result))
            kept.append((said, run_id))
        elif s.state == "cancelled":
            st.warning(f"{prefix}{t('runs.cancelled')}")
        else:
            st.error(f"{prefix}{_error_line(s.error or '')}")
    kept_line(kept)
    return done


def _side_by_side_panel(batch, value_name: str | None = None) -> list | None:
    """A finished side-by-side batch: the median round's (label, result) pairs, with a line
    saying how they were measured and every round's headline; a sweep's (``value_name``, its
    knob's symbol: paired.sweep_request) with a line of its own."""
    (_, s), = batch["finished"]
    if s.state == "cancelled":
        st.warning(t("runs.cancelled"))
        return []
    if s.state != "done":
        st.error(_error_line(s.error or ""))
        return []
    outcome, headline = s.result, batch.get("headline")
    labels = [i18n.run_label(label) for label, _ in batch["items"]]
    figures = outcome.figures(headline)
    figure, values = headline_values(batch, figures)
    if value_name is not None:  # a sweep: no ratio, no rounds; how its points were measured
        labels = [f"{value_name} = {label}" for label in labels]
        st.caption(t("runs.sweep_in_turn", steps=len(figures)) if outcome.method == STEPS_IN_TURN
                   else t("runs.sweep_apart", why=t(f"runs.why_rounds.{outcome.why_rounds}")))
    elif outcome.method == STEPS_IN_TURN:  # the headline pair by pair, where the page named one
        st.caption(pairs_caption(i18n.current_lang(), len(figures), figure if headline is not None else None, values))
    else:
        st.caption(t("runs.side_by_side", rounds=len(figures), figure=figure, values=values)
                   + (" " + t("runs.why_rounds", why=t(f"runs.why_rounds.{outcome.why_rounds}"))
                      if outcome.why_rounds else ""))
    kept_line(list(zip(labels, batch["run_ids"])))
    return _pairs(batch, outcome)


def _pairs(batch: dict, outcome) -> list:
    """A finished side-by-side batch's (label in the page's language, shown result) pairs."""
    labels = [i18n.run_label(label) for label, _ in batch["items"]]
    return list(zip(labels, outcome.shown(batch.get("headline"))))


def pairs_caption(lang: str, pairs: int, figure: str | None, values: str) -> str:
    """A steps-in-turn comparison's caption: how it was measured, then (where the page named a
    figure) that figure pair by pair, the sentences joined as ``lang`` joins them (no space
    after Chinese "。")."""
    said = [catalogs.text(lang, "runs.steps_in_turn", pairs=pairs)]
    if figure is not None:
        said.append(catalogs.text(lang, "runs.pair_values", figure=figure, values=values))
    return catalogs.join_sentences(lang, said)


def headline_values(batch: dict, values) -> tuple[str, str]:
    """(what the figure a side-by-side batch's pairs or rounds are read by is, its values as
    the page prints them). A lesson that names its headline (Lesson.headline) says which of its
    verdict's figures it is, in its folder's ``runs.headline``; without one, the rounds are
    ranked by the first run's step time (engine/runtime/paired.py), shown in ms as its tables
    show it."""
    if not batch.get("headline"):
        return t("runs.headline.step"), t("results.list_sep").join(f"{v * 1e3:.1f}" for v in values)
    key = own_key(batch.get("lesson", ""), "runs.headline") if batch.get("lesson") else ""
    figure = t(key) if key and catalogs.has(i18n.current_lang(), key) else t("runs.headline.lesson")
    # A pair's difference that rounds to zero reads 0.000, not "-0.000" (a sign no figure has).
    return figure, t("results.list_sep").join(f"{0.0 if round(v, 3) == 0 else v:.3f}" for v in values)


def outcome(name: str):
    """A finished side-by-side batch's outcome as the engine returned it (SideBySideOutcome, or a section's own
    kind of it), or None: not run, still running, failed or cancelled."""
    batch = st.session_state.get(_key(name))
    if not batch or not batch.get("side_by_side") or not batch["finished"]:
        return None
    (_, s), = batch["finished"]
    return s.result if s.state == "done" else None


def finished_pairs(name: str) -> list | None:
    """A finished side-by-side batch's (label, result) pairs, as ``panel`` returns them, drawing
    nothing: for a part of the page above the batch's own panel (a prediction card that a
    comparison further down answers). None when it has not finished."""
    result = outcome(name)
    return None if result is None else _pairs(st.session_state.get(_key(name)), result)


def settings(name: str) -> list[tuple[object, RunConfig]] | None:
    """The (label, config) pairs the batch was started with: what its results belong to."""
    batch = st.session_state.get(_key(name))
    return batch["items"] if batch else None


def forget(name: str) -> None:
    """Cancel the batch if it runs and drop its results from the page."""
    cancel(name)
    st.session_state.pop(_key(name), None)


def kept_line(kept: list[tuple[object, str | None]]) -> None:
    """One caption with each kept run's link (``runs?run=ID``: the My runs page shows it)."""
    this_run = t("runs.this_run")
    links = [f"[{label if len(kept) > 1 else this_run}](runs?run={run_id})" for label, run_id in kept if run_id]
    if links:
        st.caption(t("runs.kept", links=t("results.list_sep").join(links), my_runs=t("nav.my_runs")))
