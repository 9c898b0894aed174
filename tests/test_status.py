"""engine/runtime/status.py: what a rank writes on the board is what the launcher reads."""

import multiprocessing as mp

import pytest

from pipelab.engine.runtime.status import ALL_RANKS, NOT_WAITING, StatusBoard


@pytest.mark.parametrize("writes, rank, read", [
    ([], 0, (-1, 0, 1, None)),  # nothing yet: before the first action
    ([("progress", 1, 2, 5, 9)], 1, (2, 5, 9, None)),
    ([("progress", 1, 2, 5, 9)], 0, (-1, 0, 1, None)),  # one rank's row only
    ([("waiting", 2, 0)], 2, (-1, 0, 1, "rank 0")),
    ([("waiting", 2, ALL_RANKS)], 2, (-1, 0, 1, "all ranks")),
    ([("waiting", 2, 1), ("waiting", 2, NOT_WAITING)], 2, (-1, 0, 1, None)),
    ([("waiting", 1, 0), ("progress", 1, 3, 4, 8)], 1, (3, 4, 8, None)),  # progress means no longer waiting
])
def test_the_launcher_reads_what_a_rank_wrote(writes, rank, read):
    board = StatusBoard(mp.get_context("fork"), 3)
    for kind, *args in writes:
        getattr(board, kind)(*args)
    assert board.read(rank) == read


def test_a_rank_gets_the_rows_without_its_view():
    board = StatusBoard(mp.get_context("fork"), 2)
    board.progress(0, 1, 1, 2)  # the writer's view exists now
    assert set(board.__getstate__()) == {"rows"}  # a memoryview cannot travel to a rank


def test_a_ranks_writer_writes_its_own_row_as_progress_does():
    board = StatusBoard(mp.get_context("fork"), 2)
    board.waiting(1, 0)
    board.writer(1)(3, 4, 8)
    assert board.read(1) == (3, 4, 8, None) and board.read(0) == (-1, 0, 1, None)
