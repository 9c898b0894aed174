"""Settings measured side by side: what a claim compares, under the same conditions.

A host's speed drifts (other work, a neighbour on the same physical machine): the same 1F1B
step measured minutes apart varied by 10-12 % here, and a ratio of two runs made at
different moments carries both drifts. So the runs a comparison needs are made back to back,
round after round, the order turning each round (a b, b a, a b, ...): a host that speeds up
or slows down moves every side alike, and each round is one fair pair. The figure a page
shows is one whole round, the one whose headline (a ratio, say) is the median over rounds:
its timelines, bubbles and memory belong together, and one round that the host disturbed
does not move it.

Each run is a complete launch of its own (pipelab.engine.runtime.launch.run: warm-up steps, then medians
over the measured steps). A forkserver makes a launch cost a tenth of a second, so turning
at launch granularity costs little beside the steps themselves.
"""

from __future__ import annotations

import functools
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pipelab.engine.config import NO_LIMITS, ConfigError, Limits, RunConfig

ROUNDS = 3
"""Rounds a page runs: a median of three pairs (bench/clicks.py measures what it buys)."""


@dataclass(frozen=True)
class SideBySide:
    """Every setting's run in every round: ``runs[k][i]`` is setting i's run of round k."""

    configs: tuple[RunConfig, ...]
    runs: tuple[tuple[object, ...], ...]
    """Per round, one RunResult per setting, in the settings' order (not the order run)."""

    def median_round(self, headline: Callable[[Sequence[object]], float] | None = None) -> tuple[object, ...]:
        """The round whose ``headline`` (of one round's results, in the settings' order) is
        the median over rounds, the lower middle one for an even count; without a headline,
        the round of the median device-clock step of the first setting."""
        if headline is None:
            headline = _first_step_time
        values = [headline(results) for results in self.runs]
        order = sorted(range(len(values)), key=lambda k: values[k])
        return self.runs[order[(len(order) - 1) // 2]]

    def values(self, headline: Callable[[Sequence[object]], float]) -> list[float]:
        """``headline`` of every round, in the order run."""
        return [headline(results) for results in self.runs]


def _first_step_time(results: Sequence[object]) -> float:
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
    """What a page asks the server's runner for (app/runner/jobs.py): these settings side by side,
    and the headline that picks the round it shows (pipelab.lessons.claims.headline)."""

    configs: tuple[RunConfig, ...]
    rounds: int = ROUNDS
    headline: Callable[[Sequence[object]], float] | None = field(default=None, compare=False)
    """Not part of what the request is: two requests of the same settings are the same."""


@dataclass(frozen=True)
class SideBySideOutcome:
    """A finished request: the median round's runs, and every round's headline."""

    results: tuple[object, ...]
    """The median round's RunResults, in the request's order."""
    values: tuple[float, ...]
    """The headline of every round, in the order run (the spread a page states)."""

    @property
    def run_seconds(self) -> float:
        """About what the whole request took (a queue's wait estimate): the median round's
        runs, once per round."""
        return sum(r.metrics.run_seconds for r in self.results) * len(self.values)


def run_request(request: SideBySideRequest, limits: Limits = NO_LIMITS, on_progress=None,
                cancel: threading.Event | None = None, nice: int = 0, run_fn=None, **extra) -> SideBySideOutcome:
    """Run a SideBySideRequest; ``extra`` goes to each run (a test's injected fault)."""
    from pipelab.engine.runtime.launch import run
    run_fn = functools.partial(run_fn or run, **extra) if extra else (run_fn or run)
    configs = profiled(request.configs, limits, cancel, nice, run_fn)
    side = run_side_by_side(configs, request.rounds, limits, on_progress, cancel, nice, run_fn)
    headline = request.headline or _first_step_time
    return SideBySideOutcome(side.median_round(headline), tuple(side.values(headline)))


def profiled(configs: Sequence[RunConfig], limits: Limits = NO_LIMITS, cancel: threading.Event | None = None,
             nice: int = 0, run_fn=None) -> tuple[RunConfig, ...]:
    """Each config with the costs its schedule is built for, where it is built from costs and
    none were given (zb-h2, zb-1p, zb-2p: engine/runtime/profile_costs.py): one profile run each,
    before any round, so every round runs the same schedule."""
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.runtime.profile_costs import with_profiled_costs
    run_fn = run_fn or run

    def profile(config, on_progress=None):
        return run_fn(config, limits, on_progress=on_progress, cancel=cancel, nice=nice)
    return tuple(with_profiled_costs(config, profile) for config in configs)


def median_ratio(side: SideBySide, measure: Callable[[object], float], a: int = 0, b: int = 1) -> float:
    """Median over rounds of measure(setting a) / measure(setting b), each from one round's pair."""
    return statistics.median(measure(row[a]) / measure(row[b]) for row in side.runs)
