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
pipeline's fill and drain. A stage finishes its step after the first micro-batch's forward has
come through every stage before it, its own ceil(B / r) rounds of compute (r replicas take
micro-batches r at a time), the last micro-batch's backward through every stage before it, and
its all-reduce (a ring: 2(r-1)/r of its gradient bytes, formulas.ring_all_reduce_seconds): the
stages before it cost their whole compute and their cuts' messages once, whatever their split.
The step is the latest stage's finish, or a cut's messages for all B micro-batches if a cut is
slower still; the planner minimizes it. For p equal stages of one worker this is 1F1B's
(B + p - 1) stages' time; a heavy first stage finishes last at B rounds, its trip hidden in the
later stages' work, as 1F1B's timeline shows. The program runs from the back: whatever comes
first only adds its compute and cuts to every later stage's finish, so the best arrangement of
the layers after a stage stays the best (PipeDream's optimal substructure, read backwards).
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
    step_s: float
    """The synchronous step: the latest stage's finish (or a cut's, if slower): what the planner minimized."""
    cut_s: float
    """Every cut's activation forward and gradient back, for one micro-batch."""

    @property
    def config(self) -> str:
        """The paper's notation: replicas per stage, first stage first ("2-1-1")."""
        return "-".join(str(s.replicas) for s in self.stages)

    @property
    def replicas(self) -> tuple[int, ...]:
        """Workers per stage: RunConfig.replicas."""
        return tuple(s.replicas for s in self.stages)

    @property
    def stage_layers(self) -> tuple[int, ...]:
        """Layers per stage: RunConfig.stage_layers."""
        return tuple(s.last_layer - s.first_layer + 1 for s in self.stages)

    @property
    def workers(self) -> int:
        return sum(s.replicas for s in self.stages)

    @property
    def throughput(self) -> float:
        """Micro-batches per second."""
        return self.microbatches / self.step_s


class _Costs:
    """What both programs price: a stage of layers i..j on r replicas, its own part of the step,
    and a cut's messages."""

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

    def own(self, s: PlannedStage) -> float:
        return stage_own(s, self.microbatches)

    def ahead(self, s: PlannedStage) -> float:
        """What a stage ahead of later ones adds to each of their finishes: its compute for one
        micro-batch (the first one's forward, the last one's backward) and its cut's messages."""
        return s.compute_s + cut_once(self.layers, s.last_layer, self.link)

    def whole_cut(self, j: int) -> float:
        """Every micro-batch's messages across the cut after layer j."""
        return self.microbatches * cut_once(self.layers, j, self.link)

    def then(self, first: PlannedStage, rest: tuple[float, tuple[PlannedStage, ...]]
             ) -> tuple[float, tuple[PlannedStage, ...]]:
        """``first`` followed by the best arrangement ``rest`` of the layers after it."""
        value, stages = rest
        return (max(self.own(first), self.whole_cut(first.last_layer), self.ahead(first) + value),
                (first,) + stages)

    def plan(self, step: float, stages: tuple[PlannedStage, ...]) -> Plan:
        return Plan(stages, self.microbatches, step,
                    sum(cut_once(self.layers, s.last_layer, self.link) for s in stages[:-1]))


def _fastest(options: list) -> tuple[float, tuple[PlannedStage, ...]]:
    """Ties go to fewer stages (fewer messages for the same step)."""
    return min(options, key=lambda o: (round(o[0], 12), len(o[1])))


def plan(layers: tuple[LayerProfile, ...], workers: int, microbatches: int, link: Link,
         min_replicas: int = 1) -> Plan:
    """The configuration of at most ``workers`` workers whose step is shortest (PipeDream's
    dynamic program, arXiv 1806.03377, section 3.1); ties go to fewer workers, then fewer stages."""
    if workers < 1 or microbatches < 1 or not layers:
        raise ValueError("a plan needs at least one layer, one worker and one micro-batch")
    costs = _Costs(layers, microbatches, link)
    n = len(layers)

    @functools.cache
    def best(i: int, m: int) -> tuple[float, tuple[PlannedStage, ...]]:
        """The fastest pipeline of layers i..n-1 on exactly m workers: (its step, its stages)."""
        whole = costs.stage(i, n - 1, m)
        options = [(costs.own(whole), (whole,))]
        for j in range(i, n - 1):  # the first stage holds layers i..j
            for first in range(1, m):
                options.append(costs.then(costs.stage(i, j, first), best(j + 1, m - first)))
        return _fastest(options)

    candidates = [best(0, m) for m in range(min_replicas, workers + 1)]
    return costs.plan(*min(candidates, key=lambda o: (round(o[0], 12), sum(s.replicas for s in o[1]), len(o[1]))))


def stage_own(s: PlannedStage, microbatches: int) -> float:
    """A stage's own part of the step: ceil(B / r) rounds of its compute (its r replicas take
    micro-batches r at a time), then its all-reduce."""
    return math.ceil(microbatches / s.replicas) * s.compute_s + s.sync_s


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
    return replicated_plan(layers, (replicas,) * stages, microbatches, link)


def replicated_plan(layers: tuple[LayerProfile, ...], replicas: tuple[int, ...], microbatches: int,
                    link: Link) -> Plan:
    """The fastest split into len(replicas) stages, stage k on replicas[k] workers ("2-1-1"
    given, the layers cut where they are best cut): the same program, restricted."""
    stages = len(replicas)
    if stages > len(layers):
        raise ValueError(f"{stages} stages need at least as many layers, got {len(layers)}")
    costs = _Costs(layers, microbatches, link)
    n = len(layers)

    @functools.cache
    def best(i: int, k: int) -> tuple[float, tuple[PlannedStage, ...]]:
        """Layers i..n-1 in stages k..: (its step, its stages)."""
        if k == stages - 1:
            whole = costs.stage(i, n - 1, replicas[k])
            return costs.own(whole), (whole,)
        return _fastest([costs.then(costs.stage(i, j, replicas[k]), best(j + 1, k + 1))
                         for j in range(i, n - (stages - k - 1))])

    return costs.plan(*best(0, 0))
