"""How long a run needs at least, known before Run: so a page can refuse settings that cannot
finish within the server's time limit (Limits.max_seconds) instead of failing at it.

What the estimate is, and why: the simulator (engine/theory/simulate.py simulate_run) plays the
run's own schedule, all its steps, with each stage's forward and backward costed from the
model's matrix multiplications (their multiply-adds, counted from the settings) at the rate this
server does them, profiled once per server process on a matrix product of an mlp block's size
(a few milliseconds, with numpy: the server process does not import torch). The run then
lasts at least the simulated span, and at least all of its compute spread over every core this
server has (ranks beyond the cores take turns); the gradient check's single-process run of the
same steps comes on top. Everything else is left out: the engine's own time between actions,
messages, starting the processes, layer norms, attention's softmax, the gpt's embedding and head.
So the estimate is a lower bound: a run it puts over the limit cannot finish (at the maximum
settings it says minutes, where the run stopped at 120 s), and one under it may still take longer.
Counting multiply-adds rather than profiling the student's own layer keeps a page's rerun cheap
(profiling one gpt block at width 1024 and 128 rows takes seconds of the server's CPU).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from pipelab.engine.config import RunConfig, usable_cores

PROFILE_WIDTH, PROFILE_ROWS = 512, 256
"""The matrix product the server's rate is profiled on: an mlp block's, at the lessons' width
(about 1 ms on one core)."""


@dataclass(frozen=True)
class Estimate:
    seconds: float
    """The least wall-clock time the run needs here (see the module's text)."""
    pipeline_s: float
    """Of it, the pipelined steps: the simulated span or the compute over the cores, the larger."""
    check_s: float
    """Of it, the gradient check's single-process run (0 without the check)."""


def layer_macs_per_row(config: RunConfig) -> float:
    """Multiply-adds of one layer's forward for one row (sample), on average: a Linear(h, h) for the mlp;
    for a gpt block, per token its four attention projections and two 4h-wide MLP matrices
    (12 h^2) and attention's scores and weighted sum (2 T h), over the sample's T tokens."""
    h = config.hidden
    if config.model == "gpt":
        return config.seq_len * (12 * h * h + 2 * config.seq_len * h)
    if config.model == "wide-first":  # its first block is 8 h^2 (WideBlock), the others h^2: the mean
        return h * h * (config.layers + 7) / config.layers
    return float(h * h)


@functools.cache
def profiled_macs_per_second() -> float:
    """Multiply-adds per second of this server, from the fastest of a few float32 matrix products
    of an mlp block's size (numpy: the web server never imports torch, which lives in the
    engine's forkserver; tests/test_serve.py holds the server light). numpy's BLAS may use more
    than one thread, so this is at least one core's rate, and the estimate stays a lower bound."""
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.standard_normal((PROFILE_ROWS, PROFILE_WIDTH), dtype=np.float32)
    w = rng.standard_normal((PROFILE_WIDTH, PROFILE_WIDTH), dtype=np.float32)
    best = float("inf")
    for _ in range(6):  # the first warms the library up; contention only ever adds
        started = time.perf_counter()
        x @ w
        best = min(best, time.perf_counter() - started)
    return PROFILE_ROWS * PROFILE_WIDTH ** 2 / max(best, 1e-9)


def estimate(config: RunConfig, schedule, macs_per_second: float, cores: int) -> Estimate:
    """The least time ``config`` (built as ``schedule``, valid) needs on ``cores`` cores that do
    ``macs_per_second`` each (the module's text says what is counted)."""
    from pipelab.engine.theory.simulate import CostModel, simulate_run
    per_row = layer_macs_per_row(config)
    forward_total = config.layers * per_row * config.microbatch_size / macs_per_second  # one micro-batch, all layers
    backward_factor = 3.0 if config.recompute else 2.0  # recompute runs the forward again in the backward
    stage_forward = forward_total / schedule.num_stages
    cost = CostModel(forward=stage_forward, backward=backward_factor * stage_forward)
    timeline = simulate_run(schedule, cost, steps=config.steps, overlap=config.overlapping(schedule))
    microbatches = config.microbatches * config.data_parallel
    compute = config.steps * microbatches * forward_total * (1 + backward_factor)
    pipeline = max(timeline.step_time(), compute / max(1, cores))
    # The check's one process runs the same steps without recomputing, with every core it has.
    check = config.steps * microbatches * forward_total * 3 / max(1, cores) if config.check else 0.0
    return Estimate(pipeline + check, pipeline, check)


@functools.lru_cache(maxsize=128)
def least_seconds(config: RunConfig) -> float | None:
    """estimate's seconds on this server, once per setting (a page reruns often), or None for
    settings that do not build (their error is said elsewhere) or runs not on this server's CPU."""
    if config.device != "cpu":
        return None  # the profiled rate is a CPU core's
    try:
        schedule = config.build_schedule()
    except Exception:
        return None
    return estimate(config, schedule, profiled_macs_per_second(), usable_cores()).seconds


__all__ = ["Estimate", "estimate", "layer_macs_per_row", "least_seconds", "profiled_macs_per_second"]
