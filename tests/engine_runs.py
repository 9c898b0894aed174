"""Small real runs shared by the engine tests (each costs about a second on 2 cores)."""

import functools

from pipelab.engine.config import RunConfig
from pipelab.engine.runtime.launch import run

SMALL = dict(model="mlp", layers=8, hidden=64, microbatch_size=4, steps=2)


def run_afresh(schedule, stages, microbatches, chunks=None, **extra):
    """A new run each call: for tests that need independent runs of one configuration."""
    config = RunConfig(schedule=schedule, stages=stages, microbatches=microbatches, chunks=chunks,
                       **{**SMALL, **extra})
    return run(config)


# One run per configuration, shared by every test that only reads it.
measured = functools.lru_cache(maxsize=None)(run_afresh)
