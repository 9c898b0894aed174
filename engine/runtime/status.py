"""Where each rank is, in shared memory: the launcher reads it to show progress and to name
a hung rank.

Each rank writes four numbers (step, actions done, actions in the step, what it waits on)
into its own row of an array shared with the launcher; the launcher polls the rows. Writing
a row costs a few stores: no message, no pickling, no helper thread. Through a
multiprocessing queue, one message per action and per blocked receive woke each rank's
feeder thread and the launcher hundreds of times a second, competing with the ranks for
the same cores.
"""

from __future__ import annotations

NOT_WAITING = -1.0
ALL_RANKS = -2.0  # waiting in the collective that starts a step
_FIELDS = 4  # step, done, total, waiting on (a rank, ALL_RANKS or NOT_WAITING)


class StatusBoard:
    def __init__(self, ctx, world: int):
        self.rows = ctx.RawArray("d", world * _FIELDS)
        for rank in range(world):
            self.rows[rank * _FIELDS: (rank + 1) * _FIELDS] = [-1.0, 0.0, 1.0, NOT_WAITING]

    def __getstate__(self) -> dict:
        return {"rows": self.rows}  # a rank makes its own view (_written)

    # ---- written by rank ``rank`` ------------------------------------------------------
    def _written(self) -> memoryview:
        """The rows as float64 words: a store through a memoryview runs a fraction of the code of
        a ctypes array's slice assignment, and a rank writes between two actions (bench/EXECUTOR.md)."""
        view = self.__dict__.get("_view")
        if view is None:
            view = self._view = memoryview(self.rows).cast("B").cast("d")
        return view

    def progress(self, rank: int, step: int, done: int, total: int) -> None:
        self.writer(rank)(step, done, total)

    def writer(self, rank: int):
        """``progress`` for one rank as one function, its row and view bound once: the executor
        reports between two actions, where each frame and look-up is the first after the action
        (bench/EXECUTOR.md, "progress report"). A progress report means no longer waiting."""
        rows, i = self._written(), rank * _FIELDS

        def write(step: int, done: int, total: int) -> None:
            rows[i + 3] = NOT_WAITING
            rows[i], rows[i + 1], rows[i + 2] = float(step), float(done), float(total)
        return write

    def waiting(self, rank: int, on: int | float) -> None:
        """``on``: the rank whose message this rank now waits for, ALL_RANKS, or NOT_WAITING."""
        self._written()[rank * _FIELDS + 3] = float(on)

    # ---- read by the launcher ----------------------------------------------------------
    def read(self, rank: int) -> tuple[int, int, int, str | None]:
        """(step, done, total, what it waits on as text or None); step is -1 until the rank
        has finished its first action."""
        step, done, total, on = self.rows[rank * _FIELDS: (rank + 1) * _FIELDS]
        if on == NOT_WAITING:
            waits = None
        elif on == ALL_RANKS:
            waits = "all ranks"
        else:
            waits = f"rank {int(on)}"
        return int(step), int(done), max(int(total), 1), waits
