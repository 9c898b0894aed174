"""Activation memory, measured: bytes autograd saves for backward, per stage-micro-batch.

A saved-tensor hook (torch.autograd.graph.saved_tensors_hooks) sees every tensor the
forward keeps for its backward. We count each storage once (views share storage) and skip
parameters, which are weights, not activations.

The hook only notes the tensor; ``commit()`` counts it once the action is over. Counting
is the executor's bookkeeping, so it runs outside the action's stopwatch (Stage.account):
it shows in the device clock's host time and in the benchmark's executor overhead, not in
the action's measured cost, which keeps only the hook's own call per saved tensor.

On CPU the executor defers even that (``defer``): after an action it only queues what the
accounting needs (the stage, the action, its end on the device clock, how many tensors had
been saved by then), and ``replay`` counts the queue in order when the rank would otherwise
wait for a message, once DEFER_AT_MOST actions are queued, or once its step is over. Replayed in
order, the curve (one sample per action, at the action's end), the peak and every key's bytes
come out exactly as counted at once (tests/test_memory_deferred.py). The queue holds the
saved tensors until then, so no storage of theirs is freed and reused under the same address
before it is counted.
"""

from __future__ import annotations

import torch

from pipelab.engine.actions import BACKWARD_INPUT

# Actions whose accounting may wait in the queue (ActivationTracker.later). The queue holds their
# saved tensors alive until counted: on a rank that never waits for a message (1F1B's last stage)
# one step's would be every micro-batch's, the real memory of GPipe's. At this many, the queue is
# counted in the host time of the action that filled it: the same work, in a batch.
DEFER_AT_MOST = 8


def storage_key(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


class ActivationTracker:
    """Live activation bytes, kept up to date as tensors are saved and released, so that
    sampling after every action costs O(1) instead of merging every in-flight key's
    storages (which grew with the micro-batches in flight)."""

    def __init__(self, parameters):
        self.param_storages: set[int] = set()
        # The parameter objects themselves: autograd saves some weights as the very Parameter
        # (a layer norm's), so commit() skips those by identity before asking for a storage
        # (a Linear saves its weight's transpose: skipped by its storage). The list keeps
        # them alive, so no other tensor can take one of their ids or addresses.
        self._parameters: list[torch.Tensor] = []
        self._parameter_ids: set[int] = set()
        self.add_parameters(parameters)
        self.held: dict[tuple, dict[int, int]] = {}  # key -> {storage ptr: bytes}
        self.key_bytes: dict[tuple, int] = {}  # key -> the bytes of its held storages (bytes_of without a sum)
        self.extra: dict[tuple, int] = {}  # bytes held outside autograd (e.g. W's queue)
        self.holders: dict[int, int] = {}  # storage ptr -> how many keys hold it
        self.live = 0  # bytes of distinct held storages + extra
        self.samples: list[tuple[float, int]] = [(0.0, 0)]
        self.peak = 0
        # Accounting queued after each action, in order: (stage, kind, micro-batch, end on the
        # device clock, len(_saved) after the action, what Stage.account needs kept from then).
        # None: counted at once (the default; the executor defers on CPU).
        self.deferred: list[tuple] | None = None
        # Tensors saved since the last commit(), and the key they belong to.
        self._saved: list[torch.Tensor] = []
        self._saved_key = None
        saved = self._saved

        def note(t: torch.Tensor) -> torch.Tensor:
            saved.append(t)
            return t

        # One hooks object, entered once per tracked call: building it is not the action's work.
        self._hooks = torch.autograd.graph.saved_tensors_hooks(note, _unchanged)

    def add_parameters(self, parameters) -> None:
        parameters = list(parameters)
        self.param_storages |= {storage_key(p)[0] for p in parameters}
        self._parameters += parameters
        self._parameter_ids |= {id(p) for p in parameters}

    def _hold(self, held: dict[int, int], ptr: int, nbytes: int, key) -> None:
        if ptr in held:
            return
        held[ptr] = nbytes
        self.key_bytes[key] = self.key_bytes.get(key, 0) + nbytes
        count = self.holders.get(ptr, 0)
        self.holders[ptr] = count + 1
        if count == 0:  # a storage several keys share (views, a W-queued input) counts once
            self.live += nbytes

    def track(self, key) -> torch.autograd.graph.saved_tensors_hooks:
        """``with tracker.track(key):`` notes every tensor autograd saves inside as held by
        ``key``; ``commit()`` counts them. Deferred, the queue says whose they are."""
        if self.deferred is None and self._saved and key != self._saved_key:
            self.commit()  # one action tracks one key; never mix two keys' tensors
        self._saved_key = key
        return self._hooks

    # ---- deferred accounting --------------------------------------------------------------
    def defer(self) -> list[tuple]:
        """From now on the owner queues each action's accounting (``later``) and calls
        ``replay``; returns the queue (empty, or not, says whether there is any to replay)."""
        self.commit()
        self.deferred = []
        return self.deferred

    def later(self, stage, kind: str, j: int, end: float) -> None:
        """Queue the accounting of action ``kind`` of ``stage`` (a Stage of this tracker) on
        micro-batch ``j``, which ended at ``end`` on the device clock: O(1), the tensors it
        saved stay in the list the hook fills. At DEFER_AT_MOST queued, counts them now."""
        queue = self.deferred
        queue.append((stage, kind, j, end, len(self._saved),
                       stage.held_now(kind, j) if kind == BACKWARD_INPUT or stage.recompute else None))
        if len(queue) >= DEFER_AT_MOST:
            self.replay()

    def replay(self, until=None) -> None:
        """Count the queued actions in order: each one's saved tensors under its key, then its
        Stage.account, then the sample at its end, as if each had been counted at once.
        ``until``: asked after each action counted; once it says True the rest stays queued
        (a receive's wait that is over: engine/runtime/executor.py), never more than one
        action's counting after it."""
        queue = self.deferred
        if not queue:
            return
        saved = self._saved
        pending, records = saved[:], queue[:]
        saved.clear()  # counted below; a commit inside Stage.account finds nothing new
        queue.clear()
        position = done = 0
        for stage, kind, j, end, upto, held in records:
            if upto > position:
                self._count((stage.index, j), pending[position:upto])
                position = upto
            stage.account(kind, j, held)
            self.sample(end)
            done += 1
            if until is not None and done < len(records) and until():
                break
        # What stays queued, and the tensors saved after what was counted: mostly none, and each
        # step here is cold, straight after an action (bench/EXECUTOR.md).
        if position < len(pending):
            saved[:0] = pending[position:]
        if done < len(records):
            queue.extend((s, k, j, e, upto - position, h) for s, k, j, e, upto, h in records[done:])

    def commit(self) -> None:
        """Count the tensors saved since the last commit under their key.

        It runs after every action that saved tensors (a forward saves a few per layer), in
        the executor's own time between actions, so it is one loop with _hold inlined: each
        Python step there costs microseconds with the action's data just through the caches
        (bench/EXECUTOR.md)."""
        self.replay()  # the queue first, if deferred: nothing when there is none
        saved = self._saved
        if not saved:
            return
        self._count(self._saved_key, saved)
        saved.clear()

    def _count(self, key, saved: list[torch.Tensor]) -> None:
        """Count ``saved`` (tensors autograd saved) as held by ``key``."""
        held = self.held.get(key)
        if held is None:
            held = self.held[key] = {}
        skip_ids, skip_ptrs, holders = self._parameter_ids, self.param_storages, self.holders
        added = new_live = 0
        for t in saved:
            if id(t) in skip_ids:
                continue
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            if ptr in held or ptr in skip_ptrs:
                continue
            nbytes = storage.nbytes()
            if not nbytes:
                continue
            held[ptr] = nbytes
            added += nbytes
            count = holders.get(ptr, 0)
            holders[ptr] = count + 1
            if not count:  # a storage several keys share (views, a W-queued input) counts once
                new_live += nbytes
        self.live += new_live
        if added:
            self.key_bytes[key] = self.key_bytes.get(key, 0) + added

    def keep(self, key, tensor: torch.Tensor) -> None:
        """Count a tensor kept by hand (a recompute stage's input), after what is queued."""
        self.replay()
        ptr, nbytes = storage_key(tensor)
        self._hold(self.held.setdefault(key, {}), ptr, nbytes, key)

    def release(self, key, still_held: int = 0) -> None:
        if self._saved or self.deferred:  # else nothing to count first: one call fewer after a backward
            self.commit()  # replays the queue first, if deferred
        holders, freed = self.holders, 0
        for ptr, nbytes in self.held.pop(key, {}).items():
            count = holders.pop(ptr) - 1
            if count:
                holders[ptr] = count
            else:
                freed += nbytes
        self.key_bytes.pop(key, None)
        self.live += still_held - freed - self.extra.pop(key, 0)
        if still_held:
            self.extra[key] = still_held

    def bytes_of(self, key) -> int:
        """Bytes ``key`` holds now (its saved storages and any extra), shared ones included."""
        self.commit()
        return self.key_bytes.get(key, 0) + self.extra.get(key, 0)

    def live_bytes(self) -> int:
        self.commit()
        return self.live

    def sample(self, t: float) -> None:
        if self._saved or self.deferred:
            self.commit()
        live = self.live
        self.samples.append((t, live))
        if live > self.peak:
            self.peak = live


def _unchanged(t: torch.Tensor) -> torch.Tensor:
    return t


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)
