"""A rank's side of a launch whose schedules take turns step by step (engine/runtime/alternating.py
starts it): every play set up on this rank, their steps in an ABBA order, each gathered."""

from __future__ import annotations

from pipelab.engine.runtime.worker import collected_between_steps, gather_rank, set_up_rank


def play_order(plays: int, steps: int) -> list[tuple[int, int]]:
    """(play, step) in the order a launch plays them: round k runs step k of every play,
    forwards in even rounds and backwards in odd ones (A B, B A, A B, ...), so neighbouring
    steps of two plays are never more than one round apart and none always goes first."""
    order = []
    for step in range(steps):
        turn = range(plays) if step % 2 == 0 else reversed(range(plays))
        order += [(i, step) for i in turn]
    return order


def run_rank_in_turns(plays, rank: int, world: int, device, progress=None, hooks=None):
    """One rank's side of run_alternating: set up every play (each its own stages, transport and
    executor), play their steps in play_order, then gather each. Rank 0 returns one RankPayload
    per play, the others None. ``hooks(rank, step)`` (fault injection) sees the first play's steps."""
    count = len(plays)
    steps = plays[0].config.steps

    def progress_of(i: int):
        """The board sees one count of steps over all plays: step k of play i is the
        (position of i in round k)-th step of round k."""
        if progress is None:
            return None

        def report(step, done, total, waiting=None):
            turn = i if step % 2 == 0 else count - 1 - i
            progress(step * count + turn, done, total, waiting)
        return report

    sides = []
    for i, play in enumerate(plays):  # one host clock for all: the first play's origin
        origin = sides[0].executor.wall_origin if sides else None
        sides.append(set_up_rank(play.config, play.schedule, rank, world, device, progress_of(i), None,
                                 play.shared_memory, origin))
    with collected_between_steps():
        for i, step in play_order(count, steps):
            sides[i].play_step(step, hooks if i == 0 else None)
    references: dict = {}  # one process's run, shared by plays of the same m
    last = None if progress is None else (
        lambda step, done, total, waiting=None: progress(steps * count - 1, done, total, waiting))
    payloads = [gather_rank(side, world, last, references) for side in sides]
    return tuple(payloads) if rank == 0 else None
