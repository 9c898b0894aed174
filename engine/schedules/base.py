"""The Schedule type, the stage placements builders share, and the counts every builder checks.

A builder is a pure function ``(ranks, microbatches, chunks) -> Schedule`` with no torch
import, so schedules can be built, printed, validated and simulated anywhere; the registry
(engine/schedules/registry.py) finds builders by name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pipelab.engine.actions import BACKWARD_INPUT, REDUCE_GRAD, UPDATE, Action, ScheduleError


@dataclass(frozen=True)
class Schedule:
    """Per-rank ordered action lists plus where each stage lives.

    A rank is one worker (process). Without replication each stage lives on one rank; with
    PipeDream's replicated stages (``stage_replicas``) a stage lives on several consecutive
    ranks and each micro-batch is routed to one of them (``rank_of``)."""

    name: str
    """Registry name, or CUSTOM ("custom", engine/schedules/registry.py) for a hand-written schedule."""
    num_ranks: int
    """Pipeline devices p (workers: with replicated stages, the sum of ``stage_replicas``)."""
    num_microbatches: int
    """Micro-batches m per step."""
    stage_to_rank: tuple[int, ...]
    """stage_to_rank[s] is the rank holding stage s (the first of its workers when it is
    replicated); len() is the number of stages p*v."""
    actions: tuple[tuple[Action, ...], ...]
    """actions[r] is rank r's program, run in order."""
    description: str = ""
    reduce_at_flush: bool = False
    """Where the R actions (data parallelism's gradient all-reduce) wait: False, each after its
    own stage's last backward, as Megatron-LM and torch place them, so later stages reduce
    while earlier ones still compute; True, after every stage of the pipeline has finished its
    backward (the flush), as DeepSpeed's pipeline engine does (engine/schedules/data_parallel.py)."""
    stage_replicas: tuple[int, ...] = ()
    """PipeDream's replicated stages (arXiv 1806.03377, section 3.2): stage s runs on
    ``stage_replicas[s]`` workers, ranks stage_to_rank[s] onwards, micro-batch j on the
    (j mod replicas)-th of them (round-robin, so its backward runs where its forward did).
    Empty: one rank per stage (engine/schedules/replication.py)."""
    replicas_run_own_programs: bool = False
    """With ``stage_replicas``: True when each worker runs its stage's own program for its share
    of the micro-batches, False when it runs its subsequence of the stage's program
    (engine/schedules/replication.py replicate, with or without ``rebuild``); a stream of steps
    is built the same way (engine/schedules/stream.py)."""

    @property
    def num_stages(self) -> int:
        return len(self.stage_to_rank)

    @property
    def chunks(self) -> int:
        """Model chunks per rank (v); 1 unless interleaved or V-shaped (a replicated stage's
        worker holds that one stage)."""
        return 1 if self.stage_replicas else self.num_stages // self.num_ranks

    @property
    def is_replicated(self) -> bool:
        """True when some stage runs on more than one worker (PipeDream's "2-1-1")."""
        return any(r > 1 for r in self.stage_replicas)

    def workers_of(self, stage: int) -> range:
        """The ranks that run ``stage``: one, or its replicas."""
        first = self.stage_to_rank[stage]
        return range(first, first + (self.stage_replicas[stage] if self.stage_replicas else 1))

    def rank_of(self, stage: int, microbatch: int) -> int:
        """The rank that runs ``stage`` for ``microbatch``: micro-batches go round-robin over a
        replicated stage's workers (PipeDream's deterministic round-robin load balancing)."""
        if not self.stage_replicas:
            return self.stage_to_rank[stage]
        return self.stage_to_rank[stage] + microbatch % self.stage_replicas[stage]

    @property
    def is_async(self) -> bool:
        """True when stages update inside the step (PipeDream, 2BW): it carries U actions."""
        return any(a.kind == UPDATE for rank in self.actions for a in rank)

    @property
    def reduces_gradients(self) -> bool:
        """True when the schedule carries R actions: it runs with data parallelism."""
        return any(a.kind == REDUCE_GRAD for rank in self.actions for a in rank)

    @property
    def messages_per_step(self) -> int:
        """Point-to-point messages of one step: each stage boundary between two ranks carries
        every micro-batch's activation forward and its gradient back (a V's turn stays on one
        rank and sends nothing). The executor sends exactly these (tests/test_schedules.py)."""
        return 2 * sum(self.rank_of(s, j) != self.rank_of(s + 1, j)
                       for s in range(self.num_stages - 1) for j in range(self.num_microbatches))

    def stages_of(self, rank: int) -> list[int]:
        return [s for s in range(self.num_stages) if rank in self.workers_of(s)]

    # A "split backward" runs as I then W (zero bubble, arXiv 2401.10241), not as one B.
    @property
    def split_backward_pairs(self) -> frozenset[tuple[int, int]]:
        """(stage, micro-batch) pairs whose backward is split into I and W."""
        return frozenset((a.stage, a.microbatch) for rank in self.actions for a in rank if a.kind == BACKWARD_INPUT)

    def has_split_backward(self, stage: int) -> bool:
        """True when some backward of ``stage`` is split into I and W."""
        return any(s == stage for s, _ in self.split_backward_pairs)

    def with_actions(self, actions: list[list[Action]]) -> "Schedule":
        return replace(self, actions=tuple(tuple(a) for a in actions))


def linear_placement(ranks: int) -> tuple[int, ...]:
    """One stage per rank: stage r on rank r."""
    return tuple(range(ranks))


def interleaved_placement(ranks: int, chunks: int) -> tuple[int, ...]:
    """Megatron's round robin (arXiv 2104.04473, section 2.2): rank r holds stages r, r+p, r+2p..."""
    return tuple(s % ranks for s in range(ranks * chunks))


def v_placement(ranks: int) -> tuple[int, ...]:
    """ZB-V (arXiv 2401.10241, section 6): stage s on rank s going down, then back up the V,
    so rank r holds stages r and 2p-1-r and the last stage sits on rank 0 with the first."""
    return tuple(range(ranks)) + tuple(reversed(range(ranks)))


def check_counts(ranks: int, microbatches: int) -> None:
    if not isinstance(ranks, int) or ranks < 1:
        raise ScheduleError.of("whole_number", knob="stages", got=repr(ranks))
    if not isinstance(microbatches, int) or microbatches < 1:
        raise ScheduleError.of("whole_number", knob="micro-batches", got=repr(microbatches))
