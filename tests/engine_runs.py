"""Small real runs shared by the engine tests (each costs about a second on 2 cores)."""

import functools

from pipelab.engine.config import RunConfig
from pipelab.engine.runtime.launch import run

SMALL = dict(model="mlp", layers=8, hidden=64, microbatch_size=4, steps=2)


@functools.lru_cache(maxsize=None)
def measured(schedule, stages, microbatches, chunks=None, **extra):
    config = RunConfig(schedule=schedule, stages=stages, microbatches=microbatches, chunks=chunks,
                       **{**SMALL, **extra})
    return run(config)
