"""engine/runtime/frozen_heap.py: a rank starts with the forkserver's imports frozen, so its
first garbage collection walks only what the rank made."""

import gc

import pytest

from pipelab.engine.runtime.rank_processes import mp_context

TORCH_AND_OURS = 100_000
"""Objects the forkserver's imports leave behind: about 290,000 with torch's; a rank that
inherited none frozen would report a few at most."""


def _frozen_count(queue) -> None:
    queue.put(gc.get_freeze_count())


@pytest.mark.slow  # starts a process
def test_a_rank_starts_with_the_forkservers_heap_frozen():
    context = mp_context()
    queue = context.Queue()
    process = context.Process(target=_frozen_count, args=(queue,))
    process.start()
    try:
        frozen = queue.get(timeout=120)
    finally:
        process.join(timeout=30)
        if process.is_alive():  # never leave it behind, whatever failed
            process.kill()
            process.join()
    assert process.exitcode == 0
    assert frozen > TORCH_AND_OURS
