"""Layers -> stages: contiguous layer ranges, one per stage, covering every layer once.

Three methods:

- "uniform": by layer count. When L does not divide by S the remainder is *never dropped*
  (Megatron-LM #1304 silently lost layers that way): the last ``L % S`` stages get one
  extra layer each. Why the last: under 1F1B stage s keeps up to S - s micro-batches of
  activations alive (arXiv 2104.04473, section 2.2), so the first stage already holds the
  most memory (DeepSpeed #4477) and the later stages have room to spare.
- "params": balance per-layer parameter counts (see ``layer_param_counts``).
- "time": balance profiled per-layer times (see ``profile_layer_times``), as torchgpipe's
  ``balance_by_time`` and PipeDream's partitioner do (arXiv 1806.03377, section 3.1).

Weighted methods minimise the heaviest stage, which bounds the pipeline's throughput.
Among splits with that same bottleneck they take the most even one (least sum of squared
stage weights), and on a tie the one with heavier later stages, so equal weights give
exactly the "uniform" split.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import torch
from torch import nn

METHODS = ("uniform", "params", "time")
_EPS = 1e-9  # relative tolerance when comparing float sums of profiled times


def partition(num_layers: int, num_stages: int, method: str = "uniform",
              weights: Sequence[float] | None = None) -> list[range]:
    """Contiguous ranges of layer indices, one per stage, covering range(num_layers)."""
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r}; valid methods: {', '.join(METHODS)}")
    if num_layers < 1 or num_stages < 1:
        raise ValueError(f"need at least one layer and one stage, got {num_layers} layers and {num_stages} stages")
    if num_stages > num_layers:
        raise ValueError(f"cannot split {num_layers} layers into {num_stages} stages: "
                         "need at least one layer per stage")
    if method == "uniform":
        if weights is not None:
            raise ValueError("method 'uniform' takes no weights; use 'params' or 'time' to balance weights")
        base, extra = divmod(num_layers, num_stages)
        sizes = [base + (s >= num_stages - extra) for s in range(num_stages)]
    else:
        if weights is None:
            what = "parameter counts (layer_param_counts)" if method == "params" else "times (profile_layer_times)"
            raise ValueError(f"method {method!r} needs weights: per-layer {what}")
        if len(weights) != num_layers:
            raise ValueError(f"got {len(weights)} weights for {num_layers} layers; need one per layer")
        if any(not (w >= 0 and w != float("inf")) for w in weights):
            raise ValueError(f"weights must be finite and >= 0, got {list(weights)}")
        # all-zero weights say nothing about cost: split by count as "uniform" does
        flat = [float(w) for w in weights] if any(weights) else [1.0] * num_layers
        sizes = _balanced_sizes(flat, num_stages)
    bounds = [0]
    for size in sizes:
        bounds.append(bounds[-1] + size)
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


def _balanced_sizes(weights: list[float], stages: int) -> list[int]:
    """Stage sizes minimising the max stage sum, then the sum of squares (two exact DPs)."""
    n = len(weights)
    prefix = [0.0]
    for w in weights:
        prefix.append(prefix[-1] + w)
    total = prefix[-1]
    tol = _EPS * total

    def cost(i: int, j: int) -> float:  # weight of a stage holding layers i .. j-1
        return prefix[j] - prefix[i]

    # 1) bottleneck: best[s][j] = least possible max stage sum putting layers :j on s stages.
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for s in range(1, stages + 1):
        for j in range(s, n + 1):
            best[s][j] = min(max(best[s - 1][i], cost(i, j)) for i in range(s - 1, j))
    limit = best[stages][n] + tol
    # 2) evenness under that bottleneck: sq[s][j] = least sum of squared stage sums.
    sq = [[inf] * (n + 1) for _ in range(stages + 1)]
    sq[0][0] = 0.0
    for s in range(1, stages + 1):
        for j in range(s, n + 1):
            sq[s][j] = min((sq[s - 1][i] + cost(i, j) ** 2 for i in range(s - 1, j) if cost(i, j) <= limit),
                           default=inf)
    # Walk back from the last stage, taking the largest last stage among the optimal cuts.
    sizes, j = [], n
    for s in range(stages, 0, -1):
        target = sq[s][j]
        i = next(i for i in range(s - 1, j)
                 if cost(i, j) <= limit and sq[s - 1][i] + cost(i, j) ** 2 <= target + _EPS * total**2)
        sizes.append(j - i)
        j = i
    return sizes[::-1]


def split_without_profiling(layers: Sequence[nn.Module], num_stages: int, method: str) -> list[range]:
    """The stages of "uniform" or "params", which need nothing measured."""
    if method == "params":
        return partition(len(layers), num_stages, "params", layer_param_counts(layers))
    return partition(len(layers), num_stages, method)


def layer_param_counts(layers: Sequence[nn.Module]) -> list[int]:
    """Number of parameters in each layer (the weights for method="params")."""
    return [sum(p.numel() for p in layer.parameters()) for layer in layers]


def profile_layer_times(layers: Sequence[nn.Module], sample_input: torch.Tensor, repeats: int = 3, *,
                        clock: Callable[[], float] = time.process_time) -> list[float]:
    """Median forward+backward seconds of each layer on the activations it would really see.

    Runs one warm-up, then ``repeats`` timed rounds. The default clock is the process's CPU
    time, not wall time: on shared cores wall time mostly measured waiting for a core (we saw
    50 ms for a 0.2 ms layer with other jobs running), and CPU time still counts torch's
    intra-op threads, whose number is left as the caller set it. Pass
    ``clock=time.perf_counter`` for wall time. Gradients the layers had are restored.
    Call it under ``torch.set_num_threads(1)`` as the executor runs: with more threads than
    free cores, OpenMP threads spin waiting for each other and every clock reads nonsense.
    """
    saved = {p: p.grad for layer in layers for p in layer.parameters()}
    for p in saved:
        p.grad = None  # else backward would add into the caller's gradient tensors in place
    inputs, x = [], sample_input
    with torch.no_grad():  # the input each layer sees in the real forward
        for layer in layers:
            inputs.append(x)
            x = layer(x)
    _forward_backward(layers, sample_input)  # warm-up: first calls pay one-off set-up costs
    times = []
    try:
        for layer, x in zip(layers, inputs):
            samples = []
            for _ in range(repeats + 1):
                start = clock()
                _forward_backward([layer], x)
                samples.append(clock() - start)
            times.append(statistics.median(samples[1:]))  # samples[0] is this layer's warm-up
    finally:
        for p, grad in saved.items():
            p.grad = grad
    return times


def _forward_backward(layers: Sequence[nn.Module], x: torch.Tensor) -> None:
    x = x.detach().requires_grad_(x.is_floating_point())  # ids (long) take no gradient
    for layer in layers:
        x = layer(x)
    x.backward(torch.ones_like(x))
