"""Inside a rank: thread-time counters around each part of the executor's own work between two
actions (the time Event.host_after books), for bench/executor_costs.py.

The bench adds this module to the forkserver's preload (engine/runtime/rank_processes.py), so
every rank starts with the executor's methods wrapped; a wrapper times only while the
executor's host stopwatch runs (between an action's end and the next action's start: a
receive's wait is never in it) and books its part to the action the time follows. Times are
exclusive: the event a send records is the event record's, not the send's. A run is probed
while the file PROBE_SWITCH exists in the folder PROBE_ENV names; at the end every rank
writes one JSON file there, one row per action: its kind, host_after and each part.

One part is not in host_after: the activation accounting a rank does while it would wait for a
message (Executor._account_deferred, since the accounting is queued on CPU). It is timed
wherever it runs, booked to the action before the wait, and said apart (IN_WAITS); where it
outlasts the wait the executor books it to host_after (Executor._book_host), and so does
this probe, to memory accounting. A method
a revision lacks (a baseline's older executor) is left unwrapped.
"""

from __future__ import annotations

import functools
import json
import os
import time

PROBE_ENV = "PIPELAB_EXECUTOR_PROBE"
PROBE_SWITCH = "on"
PARTS = {  # part -> the (module, class, method) whose own time it is
    "send": [("pipelab.engine.runtime.executor", "Executor", "_send")],
    "event record": [("pipelab.engine.runtime.executor", "Executor", "_event")],
    "memory accounting": [("pipelab.engine.runtime.stage", "Stage", "account"),
                          ("pipelab.engine.runtime.memory", "ActivationTracker", "sample"),
                          ("pipelab.engine.runtime.memory", "ActivationTracker", "later"),
                          ("pipelab.engine.runtime.memory", "ActivationTracker", "replay")],
    "progress report": [("pipelab.engine.runtime.executor", "Executor", "_report")],
    # Taking a message that is in is host time (Executor._receive: take_if_in since edb9de7, ready
    # and receive before); before 73b73f5 a receive settled first, so none of it was host time
    # there and this part reads 0 for such a baseline.
    "taking a message that was in": [("pipelab.engine.runtime.comm", "Mailbox", "take_if_in"),
                                     ("pipelab.engine.runtime.comm", "Mailbox", "ready"),
                                     ("pipelab.engine.runtime.comm", "Mailbox", "receive")],
}

IN_WAITS = {  # parts outside host_after: timed wherever they run
    "memory accounting in a wait (not in host_after)": [
        ("pipelab.engine.runtime.executor", "Executor", "_account_deferred")],
}

_state = {"executor": None, "stack": [], "rows": {}}


def _probing() -> bool:
    folder = os.environ.get(PROBE_ENV)
    return bool(folder) and os.path.exists(os.path.join(folder, PROBE_SWITCH))


def _stopped(host) -> bool:
    """Whether the host stopwatch is stopped (HostStopwatch.since; ``_t0`` at older revisions)."""
    return (host.since if hasattr(host, "since") else host._t0) is None


def _timed(part: str, method, always: bool = False):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        executor = _state["executor"]
        if executor is None or (_stopped(executor.host) and not always):  # not between two actions
            return method(*args, **kwargs)
        stack = _state["stack"]
        stack.append(0.0)  # the time of nested probed calls, taken out of this one
        t0 = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            elapsed = time.thread_time() - t0
            nested = stack.pop()
            if stack:
                stack[-1] += elapsed
            row = _state["rows"].setdefault(id(executor._last_action), {})
            row[part] = row.get(part, 0.0) + elapsed - nested
    return wrapper


def _install() -> None:
    import importlib
    for parts, always in ((PARTS, False), (IN_WAITS, True)):
        for part, methods in parts.items():
            for module, cls, name in methods:
                owner = getattr(importlib.import_module(module), cls)
                if hasattr(owner, name):
                    setattr(owner, name, _timed(part, getattr(owner, name), always))
    from pipelab.engine.runtime.executor import Executor
    init, summarize = Executor.__init__, Executor.summarize

    def probed_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _state["executor"] = self if _probing() else None
        _state["rows"] = {}

    def probed_summarize(self):
        record = summarize(self)
        if _state["executor"] is self:
            # The record's Events follow the executor's own entries in order, whatever those
            # are (rows now, objects at older revisions: a baseline runs this probe too).
            rows = [{"kind": e.kind, "stage": e.stage, "step": e.step, "host_after": e.host_after,
                     **_state["rows"].get(id(entry), {})}
                    for entry, e in zip(self.events, record.events) if e.kind not in ("send", "recv")]
            path = os.path.join(os.environ[PROBE_ENV], f"rank-{self.process}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(rows, f)
        return record

    Executor.__init__, Executor.summarize = probed_init, probed_summarize
    # Accounting that outlasted its wait is booked through _book_outlasted; at revisions before
    # it (330d336, a baseline's) _book_host did only that. Since c8a318b _book_host also books
    # every _settle_host, which is not the accounting's.
    outlasted = "_book_outlasted" if hasattr(Executor, "_book_outlasted") else "_book_host"
    if hasattr(Executor, outlasted):
        book = getattr(Executor, outlasted)

        def probed_book_outlasted(self, elapsed):
            if _state["executor"] is self and self._last_action is not None:
                move_to_host_after(_state["rows"].setdefault(id(self._last_action), {}), elapsed)
            return book(self, elapsed)
        setattr(Executor, outlasted, probed_book_outlasted)


def move_to_host_after(row: dict, elapsed: float) -> None:
    """Accounting that outlasted its wait: host_after after all, so memory accounting's, no
    longer the wait's."""
    (waits,) = IN_WAITS
    row[waits] = row.get(waits, 0.0) - elapsed
    row["memory accounting"] = row.get("memory accounting", 0.0) + elapsed


if os.environ.get(PROBE_ENV):
    _install()
