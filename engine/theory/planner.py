"""PipeDream's planner: split the layers into stages and choose each stage's replicas.

PipeDream (Harlap et al., arXiv 1806.03377, section 3.1) profiles every layer and solves a
dynamic program over (the first j layers, m workers): either one stage of layers 1..j replicated
over the m workers, or an optimal pipeline of layers 1..i on m - m' workers followed by one stage
of layers i+1..j replicated m' times. A pipeline is as fast as its slowest stage, so a split
costs the slower of its two sides (and the messages across the cut), and a replicated stage its
compute divided over its replicas plus its weight synchronization. The answer is a configuration
such as the paper's "2-1-1" (three stages, the first on 2 workers).

Here a step is synchronous (the engine's): B micro-batches through the pipeline, then every
replicated stage all-reduces its gradients once. The paper's objective, the slowest stage's time
per micro-batch, is an asynchronous pipeline's steady state; a synchronous step also pays the
pipeline's fill. Its time is the first micro-batch's trip through every stage and cut (the whole
model's compute, whatever the split) plus, at the slowest stage, the rest: a stage of r replicas
takes micro-batches r at a time, so after the first it needs ceil(B / r) - 1 more rounds of its
compute, and then its all-reduce (a ring: 2(r-1)/r of its gradient bytes,
formulas.ring_all_reduce_seconds). That per-stage time is what the program minimizes, the
slowest stage deciding as in the paper; a cut costs its messages for the B - 1 micro-batches
after the first. For d pipelines of p equal stages this is 1F1B's (B/d + p - 1) stages' time,
for one straight pipeline (B + p - 1).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from pipelab.engine.theory.formulas import ring_all_reduce_seconds


@dataclass(frozen=True)
class LayerProfile:
    """One layer, for one micro-batch, as profiled on this host."""
    compute_s: float
    """Forward plus backward."""
    activation_bytes: int
    """Its output, sent forward across a cut after it (its gradient comes back the same size)."""
    parameter_bytes: int


@dataclass(frozen=True)
class Link:
    """What moves bytes between workers: a message's cost is latency + bytes / bandwidth."""
    bandwidth_bytes_per_s: float
    latency_s: float = 0.0

    def message_s(self, nbytes: float) -> float:
        return self.latency_s + nbytes / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class PlannedStage:
    first_layer: int
    last_layer: int
    """Inclusive: the stage holds layers first_layer..last_layer."""
    replicas: int
    compute_s: float
    """One micro-batch's forward and backward through the stage's layers."""
    sync_s: float
    """Its gradients' all-reduce over its replicas, once per step (0 for one replica)."""


@dataclass(frozen=True)
class Plan:
    stages: tuple[PlannedStage, ...]
    microbatches: int
    """B: micro-batches per step, over all replicas."""
    slowest_s: float
    """The slowest stage's (or cut's) time after the first micro-batch: what the planner minimized."""
    cut_s: float
    """Every cut's activation forward and gradient back, for one micro-batch."""

    @property
    def config(self) -> str:
        """The paper's notation: replicas per stage, first stage first ("2-1-1")."""
        return "-".join(str(s.replicas) for s in self.stages)

    @property
    def workers(self) -> int:
        return sum(s.replicas for s in self.stages)

    @property
    def step_s(self) -> float:
        """One micro-batch through every stage and cut, then the slowest stage's rest."""
        return sum(s.compute_s for s in self.stages) + self.cut_s + self.slowest_s

    @property
    def throughput(self) -> float:
        """Micro-batches per second."""
        return self.microbatches / self.step_s


class _Costs:
    """What both programs price: a stage of layers i..j on r replicas, its time after the first
    micro-batch, and a cut's messages for the micro-batches after the first."""

    def __init__(self, layers: tuple[LayerProfile, ...], microbatches: int, link: Link):
        self.layers, self.microbatches, self.link = layers, microbatches, link
        self.compute, self.params = [0.0], [0]  # prefix sums: a stage's in O(1)
        for layer in layers:
            self.compute.append(self.compute[-1] + layer.compute_s)
            self.params.append(self.params[-1] + layer.parameter_bytes)

    def stage(self, i: int, j: int, r: int) -> PlannedStage:
        """Layers i..j (0-based, inclusive) on r replicas."""
        sync = ring_all_reduce_seconds(self.params[j + 1] - self.params[i], r, self.link.bandwidth_bytes_per_s,
                                       self.link.latency_s)
        return PlannedStage(i, j, r, self.compute[j + 1] - self.compute[i], sync)

    def rest(self, s: PlannedStage) -> float:
        return stage_rest(s, self.microbatches)

    def cut(self, i: int) -> float:
        """Across the cut after layer i, for the micro-batches after the first."""
        return (self.microbatches - 1) * cut_once(self.layers, i, self.link)

    def plan(self, slowest: float, stages: tuple[PlannedStage, ...]) -> Plan:
        return Plan(stages, self.microbatches, slowest,
                    sum(cut_once(self.layers, s.last_layer, self.link) for s in stages[:-1]))


def plan(layers: tuple[LayerProfile, ...], workers: int, microbatches: int, link: Link,
         min_replicas: int = 1) -> Plan:
    """The configuration of at most ``workers`` workers whose slowest stage is fastest (PipeDream's
    dynamic program, arXiv 1806.03377, section 3.1); ties go to fewer workers, then fewer stages."""
    if workers < 1 or microbatches < 1 or not layers:
        raise ValueError("a plan needs at least one layer, one worker and one micro-batch")
    costs = _Costs(layers, microbatches, link)

    @functools.cache
    def best(j: int, m: int) -> tuple[float, tuple[PlannedStage, ...]]:
        """The fastest pipeline of layers 0..j on exactly m workers: (slowest stage, stages)."""
        whole = costs.stage(0, j, m)
        options = [(costs.rest(whole), (whole,))]
        for i in range(j):  # the last stage holds layers i+1..j
            for last in range(1, m):
                head, stages = best(i, m - last)
                tail = costs.stage(i + 1, j, last)
                options.append((max(head, costs.cut(i), costs.rest(tail)), stages + (tail,)))
        return min(options, key=lambda o: (round(o[0], 12), len(o[1])))

    candidates = [best(len(layers) - 1, m) for m in range(min_replicas, workers + 1)]
    return costs.plan(*min(candidates, key=lambda o: (round(o[0], 12), sum(s.replicas for s in o[1]), len(o[1]))))


def stage_rest(s: PlannedStage, microbatches: int) -> float:
    """A stage's time after the first micro-batch: ceil(B / r) - 1 more rounds of its compute (its
    r replicas take micro-batches r at a time), then its all-reduce."""
    return (math.ceil(microbatches / s.replicas) - 1) * s.compute_s + s.sync_s


def cut_once(layers: tuple[LayerProfile, ...], i: int, link: Link) -> float:
    """The cut after layer i, one micro-batch: its activation forward and its gradient back."""
    return 2 * link.message_s(layers[i].activation_bytes)


def straight_pipeline(layers: tuple[LayerProfile, ...], stages: int, microbatches: int, link: Link) -> Plan:
    """The best split into ``stages`` stages of one worker each (no replication): the planner's
    yardstick, as the paper compares its choice with a plain pipeline."""
    return layout_plan(layers, stages, 1, microbatches, link)


def data_parallel(layers: tuple[LayerProfile, ...], workers: int, microbatches: int, link: Link) -> Plan:
    """The whole model replicated on every worker: plain data parallelism."""
    return layout_plan(layers, 1, workers, microbatches, link)


def layout_plan(layers: tuple[LayerProfile, ...], stages: int, replicas: int, microbatches: int, link: Link) -> Plan:
    """The fastest split into ``stages`` stages of ``replicas`` each (d pipelines of p stages, as
    the engine runs with RunConfig.data_parallel): the same program, restricted."""
    if stages > len(layers):
        raise ValueError(f"{stages} stages need at least as many layers, got {len(layers)}")
    costs = _Costs(layers, microbatches, link)

    @functools.cache
    def best(j: int, k: int) -> tuple[float, tuple[PlannedStage, ...]]:
        """Layers 0..j in exactly k stages."""
        if k == 1:
            whole = costs.stage(0, j, replicas)
            return costs.rest(whole), (whole,)
        options = []
        for i in range(k - 2, j):
            head, stages_ = best(i, k - 1)
            tail = costs.stage(i + 1, j, replicas)
            options.append((max(head, costs.cut(i), costs.rest(tail)), stages_ + (tail,)))
        return min(options, key=lambda o: round(o[0], 12))

    return costs.plan(*best(len(layers) - 1, stages))
