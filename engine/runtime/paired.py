"""Settings measured side by side: what a claim compares, under the same conditions.

A host's speed drifts and switches (other work, a neighbour on the same physical machine):
the same 1F1B step measured minutes apart varied by 10-12 % here, within one run by up to
25 %, and a ratio of two runs made at different moments carries both. So a comparison is
measured side by side in one of two ways:

- **steps in turn** (the default wherever the settings can share a launch): one launch plays
  every setting's steps in an ABBA order (engine/runtime/alternating.py), and each figure a
  claim compares is the median over pairs of step k of one setting against step k of the
  other, with the spread across pairs (``paired_values``); the runs shown are each setting's
  whole run, medians over its measured steps.
- **rounds** (settings that cannot share a launch: other p, another model, overlapping steps,
  torch's runtime): complete launches back to back, round after round, the order turning
  each round (a b, b a, ...); the page shows the round whose headline is the median.

The outcome says which was used (``SideBySideOutcome.method``), and the page says it too. The engine
picks no figure: the outcome holds every round's runs, and the caller reads them by its own headline
(a lesson's, pipelab.lessons.claims.headline; else the first setting's step time): no lesson code runs
in the engine.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipelab.engine.config import NO_LIMITS, ConfigError, Limits, RunConfig
from pipelab.engine.results.windows import WARM_UP_STEPS, measured_steps

ROUNDS = 3
"""Rounds a page runs: a median of three pairs (bench/clicks.py measures what it buys)."""


@dataclass(frozen=True)
class SideBySide:
    """Every setting's run in every round: ``runs[k][i]`` is setting i's run of round k."""

    configs: tuple[RunConfig, ...]
    runs: tuple[tuple[object, ...], ...]
    """Per round, one RunResult per setting, in the settings' order (not the order run)."""


Headline = Callable[[Sequence[object]], float]
"""A figure of one round's results (in the settings' order) that a caller reads a comparison by."""


def first_step_time(results: Sequence[object]) -> float:
    """The headline where a caller names none: the first setting's step, device clock."""
    return results[0].metrics.device_step_time_s


def turn_order(count: int, round_index: int) -> list[int]:
    """The order settings run in, in round ``round_index``: each round starts one further on
    (a b c, b c a, c a b), so no setting always runs first, just after the host was idle."""
    return [(i + round_index) % count for i in range(count)]


def run_side_by_side(configs: Sequence[RunConfig], rounds: int = ROUNDS, limits: Limits = NO_LIMITS,
                     on_progress: Callable[[float, str], None] | None = None,
                     cancel: threading.Event | None = None, nice: int = 0, run_fn=None) -> SideBySide:
    """Run every config once per round, ``rounds`` rounds, the order turning each round.
    Every config is checked before anything starts (a ConfigError names the bad one); a
    failed or cancelled run ends the whole comparison with its error (pipelab.engine.runtime.launch.run
    leaves nothing behind). ``on_progress(fraction, text)`` covers all the runs."""
    from pipelab.engine.runtime.launch import run
    run_fn = run_fn or run
    configs = tuple(configs)
    if not configs:
        raise ConfigError.of("nothing_to_compare")
    if rounds < 1:
        raise ConfigError.of("rounds_at_least_one", rounds=rounds)
    for config in configs:
        config.check_values(limits)
    total = rounds * len(configs)
    table: list[list[object]] = [[None] * len(configs) for _ in range(rounds)]
    done = 0
    for k in range(rounds):
        for i in turn_order(len(configs), k):
            line = f"round {k + 1} of {rounds}, run {done + 1} of {total}"

            def progress(fraction: float, text: str, done=done, line=line) -> None:
                if on_progress is not None:
                    on_progress((done + fraction) / total, line)
            progress(0.0, "")
            # The gradient check once per setting: every round runs the same settings from
            # the same seed, so later rounds would only repeat its one-process reference run.
            config = configs[i] if k == 0 else configs[i].with_(check=False)
            table[k][i] = run_fn(config, limits, on_progress=progress, cancel=cancel, nice=nice)
            done += 1
    return SideBySide(configs, tuple(tuple(row) for row in table))


@dataclass(frozen=True)
class SideBySideRequest:
    """What a page asks the server's runner for (app/runner/jobs.py): these settings side by side.
    Plain data: which figure the page reads the outcome by is the page's (SideBySideOutcome.figures)."""

    configs: tuple[RunConfig, ...]
    rounds: int = ROUNDS
    pairs: int | None = None
    """Measured steps of every setting, at least, where they take turns; None: PAIRS. A page that
    compares what a schedule fixes (held memory) rather than times asks for fewer."""


PAIRS = 8
"""Measured steps of every setting, at least, where steps take turns: the pairs a ratio is the
median of (bench/clicks.py measures what they buy; a step of a lesson's model takes tens of
milliseconds, so eight cost less than one more launch)."""


def sweep_request(configs: Sequence[RunConfig]) -> SideBySideRequest:
    """A sweep's settings (one knob's values) as one request: in one launch, their steps taking
    turns, where they can share one, so that every point of the curve saw the same host (on a
    many-core host the cores' speeds moved between a sweep's separate runs, and with them its
    points: bench/MANY_CORES.md, docs/measuring.md); each setting with its own number of measured
    steps, as a run of its own has. Where they cannot share a launch, each runs once, as before."""
    configs = tuple(configs)  # none: run_request's one-line ConfigError, as a comparison's
    return SideBySideRequest(configs, rounds=1, pairs=min((len(measured_steps(c.steps)) for c in configs), default=1))


STEPS_IN_TURN = "steps in turn"
"""SideBySideOutcome.method: one launch, the settings' steps alternating (engine/runtime/alternating.py)."""
ROUNDS_OF_RUNS = "rounds"
"""SideBySideOutcome.method: whole launches back to back, round after round (run_side_by_side)."""


@dataclass(frozen=True)
class SideBySideOutcome:
    """A finished request: every round's runs and how they were measured. The caller reads them by
    its headline (``figures``) and shows the round it picks (``shown``)."""

    rounds: tuple[tuple[object, ...], ...]
    """Per round, one RunResult per setting, in the request's order. Steps in turn: one round, each
    setting's whole run (its measured steps pair up, RunResult.at_step); rounds: every round run."""
    method: str = ROUNDS_OF_RUNS
    """STEPS_IN_TURN or ROUNDS_OF_RUNS."""
    why_rounds: str | None = None
    """With ROUNDS_OF_RUNS: why the settings could not share a launch, a code of
    engine/runtime/alternating.py's WHY_ROUNDS ("stand_in": a test's stand-in run)."""

    def figures(self, headline: Headline | None = None) -> tuple[float, ...]:
        """``headline`` (default: first_step_time) of every pair of steps (steps in turn) or of
        every round, in the order run: the spread a page states."""
        headline = headline or first_step_time
        if self.method == STEPS_IN_TURN:
            return tuple(paired_values(self.rounds[0], headline))
        return tuple(headline(results) for results in self.rounds)

    def shown(self, headline: Headline | None = None) -> tuple[object, ...]:
        """The runs a page shows, in the request's order: the one launch's, or the round whose
        ``headline`` is the median over rounds (the lower middle one for an even count)."""
        if len(self.rounds) == 1:
            return self.rounds[0]
        values = self.figures(headline)
        order = sorted(range(len(values)), key=values.__getitem__)
        return self.rounds[order[(len(order) - 1) // 2]]

    @property
    def run_seconds(self) -> float:
        """About what the whole request took (a queue's wait estimate): every run of every round."""
        return sum(r.metrics.run_seconds for results in self.rounds for r in results)


def paired_values(results: Sequence[object], measure: Callable[[Sequence[object]], float]) -> list[float]:
    """``measure`` of every measured step of runs that took turns in one launch, step k of each
    together (RunResult.at_step): one value per pair (or per round of steps, for more than two)."""
    count = len(results[0].metrics.device_step_times_s)
    return [measure([r.at_step(k) for r in results]) for k in range(count)]


def paired_ratio(ours, other, measure: Callable[[object], float]) -> tuple[float, float, float]:
    """(median, lowest, highest) of measure(ours) / measure(other) over pairs of steps where the two
    runs took turns in one launch; for runs made apart, the one ratio of their figures (medians
    over their steps) three times."""
    if paired(ours, other):
        ratios = paired_values((ours, other), lambda pair: measure(pair[0]) / measure(pair[1]))
        return statistics.median(ratios), min(ratios), max(ratios)
    ratio = measure(ours) / measure(other)
    return ratio, ratio, ratio


def paired(ours, other) -> bool:
    """Whether two runs took turns in one launch, so their steps pair up."""
    a, b = getattr(ours, "metrics", None), getattr(other, "metrics", None)
    launch = getattr(a, "launch_id", None)
    return (launch is not None and launch == getattr(b, "launch_id", None)
            and a.device_step_times_s is not None and b.device_step_times_s is not None
            and len(a.device_step_times_s) == len(b.device_step_times_s))


def run_request(request: SideBySideRequest, limits: Limits = NO_LIMITS, on_progress=None,
                cancel: threading.Event | None = None, nice: int = 0, run_fn=None) -> SideBySideOutcome:
    """Run a SideBySideRequest: in one launch, steps in turn, where the settings can share one;
    else in rounds. A ``run_fn`` (a test's stand-in for one run) always runs rounds."""
    from pipelab.engine.runtime.alternating import run_alternating, why_not_alternating
    from pipelab.engine.runtime.launch import run
    one_run = run_fn or run
    configs = profiled(request.configs, limits, cancel, nice, one_run)
    if run_fn is not None:
        reason = "stand_in"
    else:
        schedules = [config.check_values(limits) for config in configs]  # built once, for both uses
        reason = why_not_alternating(configs, schedules)
    if reason is None:
        pairs = PAIRS if request.pairs is None else request.pairs
        # More steps leave each schedule as it is: its action lists do not depend on them.
        configs = [config.with_(steps=max(config.steps, WARM_UP_STEPS + pairs)) for config in configs]
        results = run_alternating(configs, limits, on_progress, cancel, nice, schedules=schedules)
        return SideBySideOutcome((tuple(results),), STEPS_IN_TURN)
    side = run_side_by_side(configs, request.rounds, limits, on_progress, cancel, nice, one_run)
    return SideBySideOutcome(side.runs, ROUNDS_OF_RUNS, reason)


def profiled(configs: Sequence[RunConfig], limits: Limits = NO_LIMITS, cancel: threading.Event | None = None,
             nice: int = 0, run_fn=None) -> tuple[RunConfig, ...]:
    """Each config with the costs its schedule is built for, where it is built from costs and
    none were given (zb-h2, zb-1p, zb-2p: engine/runtime/profile_costs.py), before any round, so
    every round runs the same schedule; settings of one model share one profile run."""
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.runtime.profile_costs import with_shared_profiles
    run_fn = run_fn or run

    def profile(config, on_progress=None):
        return run_fn(config, limits, on_progress=on_progress, cancel=cancel, nice=nice)
    return with_shared_profiles(configs, profile)
