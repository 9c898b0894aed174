"""A page's question to PipeDream's planner, answered for real: profile, plan, then run the plans side by side.

PipeDream (arXiv 1806.03377, section 3.1) profiles every layer, then chooses how to split the layers into
stages and how many workers each stage gets. A page asks which is faster on a model whose first layer is
heavy: a straight pipeline (one worker per stage) or a configuration that replicates a stage ("2-1-1"),
and what the planner itself chooses. Everything that measures this host runs here, in the runner's job,
never in the web server (which never imports torch): the layers are profiled in a process started from the
engine's forkserver (torch already imported there), calibrated with one short engine run and the link
measured with the engine's own all-reduce (engine/cli/plan.py, as ``pipelab plan`` does it); then the plans'
runs share one launch, their steps in turn (engine/runtime/paired.py), so their throughputs compare
neighbouring steps. Nothing is kept between requests: every click profiles anew.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from pipelab.engine.cli.plan import calibrated, config_for, measure_link, profile_layers
from pipelab.engine.config import NO_LIMITS, Limits, RunConfig
from pipelab.engine.runtime.paired import SideBySideOutcome, SideBySideRequest, run_request
from pipelab.engine.theory.planner import Link, Plan, plan, replicated_plan, straight_pipeline

STRAIGHT, REPLICATED, CHOSEN = 0, 1, 2
"""The plans of a PlannedOutcome, in order: the best straight pipeline, the best split of the asked
replicas, and the planner's own choice."""

PLANNING_SHARE = 0.3
"""Of a request's progress bar, what profiling, calibrating and the link take (about a third of a click)."""


@dataclass(frozen=True)
class PlannedRequest:
    """Plan ``model`` on ``workers`` workers for a global batch of ``microbatches``, then run side by side the
    best straight pipeline, the best split into stages on ``replicas`` workers each, and the planner's choice.
    Plain data: a page builds it, the runner's job (app/runner/jobs.py) runs it with ``run_planned``."""

    model: RunConfig
    """The model, its data and the runs' own settings (schedule, steps, check, timeout); the stages, their
    layers and workers and the micro-batches come from the plans."""
    workers: int
    microbatches: int
    """The global batch: micro-batches per step over all workers."""
    replicas: tuple[int, ...]
    """The replicated configuration asked about, workers per stage, first stage first: (2, 1, 1) is "2-1-1"."""
    pairs: int | None = None
    """Measured steps of every run, at least (SideBySideRequest.pairs); None: the default."""

    @property
    def configs(self) -> tuple[RunConfig, RunConfig]:
        """The straight pipeline and the replicated configuration as settings, before the planner cuts their
        layers: what a page checks before it queues the request (RunConfig.check_values, one line each)."""
        base = self.model.with_(microbatches=self.microbatches, stage_layers=None)
        return (base.with_(stages=self.workers, replicas=None),
                base.with_(stages=len(self.replicas), replicas=tuple(self.replicas)))


@dataclass(frozen=True)
class PlannedOutcome(SideBySideOutcome):
    """The runs of a PlannedRequest (``rounds``, as SideBySideOutcome has them) with the plans they play."""

    plans: tuple[Plan, ...] = ()
    """STRAIGHT, REPLICATED and CHOSEN, each with its predicted step and throughput."""
    ran: tuple[int, ...] = ()
    """For each plan, the index of its run in a round: a plan the planner chose among the other two is run once."""
    link: Link | None = None
    """The link the planner priced messages and all-reduces with, measured on this host."""
    planning_seconds: float = 0.0
    """Wall time of profiling, calibrating and measuring the link."""

    def run_of(self, which: int, headline=None):
        """The shown run (SideBySideOutcome.shown) of plan ``which`` (STRAIGHT, REPLICATED, CHOSEN)."""
        return self.shown(headline)[self.ran[which]]

    @property
    def run_seconds(self) -> float:
        return self.planning_seconds + super().run_seconds


def _profile_here(config: RunConfig, nice: int):
    """In a process of the forkserver's: each layer profiled, one micro-batch, one thread (engine/cli/plan.py)."""
    if nice:
        os.nice(nice)
    return profile_layers(config)


def profile_elsewhere(config: RunConfig, nice: int = 0):
    """Each layer's profile (LayerProfile), measured in a process started from the engine's forkserver, so
    the calling process (a web server) never imports torch."""
    from concurrent.futures import ProcessPoolExecutor

    from pipelab.engine.runtime.rank_processes import mp_context
    with ProcessPoolExecutor(max_workers=1, mp_context=mp_context()) as pool:
        return pool.submit(_profile_here, config, nice).result()


def plans_for(request: PlannedRequest, layers, link: Link) -> tuple[Plan, Plan, Plan]:
    """(STRAIGHT, REPLICATED, CHOSEN) on the profiled ``layers`` (engine/theory/planner.py)."""
    return (straight_pipeline(layers, request.workers, request.microbatches, link),
            replicated_plan(layers, tuple(request.replicas), request.microbatches, link),
            plan(layers, request.workers, request.microbatches, link))


def distinct_runs(plans, model: RunConfig) -> tuple[list[RunConfig], tuple[int, ...]]:
    """The runs that play ``plans`` (engine/cli/plan.py config_for), each distinct one once, and each
    plan's index among them."""
    configs: list[RunConfig] = []
    ran = []
    for p in plans:
        config = config_for(p, model, model.schedule)
        if config not in configs:
            configs.append(config)
        ran.append(configs.index(config))
    return configs, tuple(ran)


def run_planned(request: PlannedRequest, limits: Limits = NO_LIMITS, on_progress=None,
                cancel: threading.Event | None = None, nice: int = 0) -> PlannedOutcome:
    """Profile, plan, then run the plans side by side (one launch, steps in turn, where they share one; else
    rounds). Every setting is checked first (a ConfigError in one line); ``cancel`` is honoured between the
    planning's short runs and inside the plans' launch."""
    from pipelab.engine.runtime.rank_processes import Cancelled
    for config in request.configs:
        config.check_values(limits)

    def say(fraction: float, text: str) -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled.of("cancelled")
        if on_progress is not None:
            on_progress(fraction, text)
    started = time.monotonic()
    say(0.0, "profiling each layer")
    layers = profile_elsewhere(request.model, nice)
    say(0.08, "timing each stage in a short run")
    layers = calibrated(request.model, layers, request.workers, request.microbatches)
    say(0.16, "measuring the link")
    link = measure_link()
    plans = plans_for(request, layers, link)
    configs, ran = distinct_runs(plans, request.model)
    say(PLANNING_SHARE, "starting processes")
    planning = time.monotonic() - started

    def progress(fraction: float, text: str) -> None:
        if on_progress is not None:
            on_progress(PLANNING_SHARE + (1 - PLANNING_SHARE) * fraction, text)
    outcome = run_request(SideBySideRequest(tuple(configs), pairs=request.pairs), limits, progress, cancel, nice)
    return PlannedOutcome(outcome.rounds, outcome.method, outcome.why_rounds, plans=plans, ran=ran, link=link,
                          planning_seconds=planning)


__all__ = ["CHOSEN", "REPLICATED", "STRAIGHT", "PlannedOutcome", "PlannedRequest", "distinct_runs",
           "plans_for", "profile_elsewhere", "run_planned"]
