"""The floor under the executor's time between actions: the least any executor can spend there on this host.

The executor's time between two actions (Event.host_after, bench/executor_costs.py) is the
executor's own work, timed in thread CPU time. Part of it is not the executor's doing at all:
the clock reads that time it, and the copy of a sent message into its shared-memory slot,
each paid right after an action whose matmuls ran through the caches (bench/COLD_CALLS.md).
Here each rank of a configuration plays its own program with the engine's own stages
(engine/runtime/worker.py make_stages, so every action is the one a run does) and nothing
between two actions but:

- "clocks only": the two thread-time reads around each action;
- "clocks and the send's copy": those, and after an action that sends, the copy of its
  result into a slot of a file mapped shared, as the shared-memory transport does.

A received message is a slot of such a mapping (filled once), as the transport hands it
out; no rank waits for another, so nothing but the actions and the clocks runs, all ranks
at once as in a launch (one process each, one torch thread). The gaps are taken over the same
measured steps as the runs', each stage's optimizer step (U) closing its rank's step with
none after it, as in the runs' figures. What an executor cannot avoid besides (raising the
message's semaphore, taking a message in, an event's record, the memory curve and the
progress report, which the run reports) comes on top.
"""

from __future__ import annotations

import mmap
import statistics
import tempfile

VARIANTS = ("clocks only", "clocks and the send's copy")


def _mapped(shape: tuple) -> object:
    """A float32 tensor of ``shape`` over a file mapped shared, as a transport's slot."""
    import math

    import torch
    nbytes = 4 * math.prod(shape)
    with tempfile.TemporaryFile() as f:
        f.truncate(nbytes)
        mapped = mmap.mmap(f.fileno(), nbytes)
    return torch.frombuffer(mapped, dtype=torch.float32).view(shape)


def sent_across(kind: str, stage: int, last: int) -> int | None:
    """The stage boundary whose message action ``kind`` of ``stage`` sends (boundary s: the
    activation entering stage s, or its gradient), or None where it sends nothing."""
    from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, FORWARD
    if kind == FORWARD and stage < last:
        return stage + 1
    if kind in (BACKWARD, BACKWARD_INPUT) and stage > 0:
        return stage
    return None


def _rank(config, pipe: int, copy: bool, queue) -> None:
    """Pipeline rank ``pipe`` of ``config``'s schedule with nothing between its actions but the
    clocks (and the send's copy, with ``copy``); puts the measured steps' gaps (s) on ``queue``."""
    from time import thread_time

    import torch

    from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD
    from pipelab.engine.device import Device
    from pipelab.engine.results.windows import measured_steps
    from pipelab.engine.runtime.worker import loss_scale, make_stages, split_model

    torch.set_num_threads(1)  # as a rank computes (engine/device.py)
    schedule = config.build_schedule()
    split = split_model(config, schedule, pipe, Device("cpu"))
    stages = make_stages(config, schedule, pipe, split)
    last, scale = schedule.num_stages - 1, loss_scale(schedule)
    incoming = {s: _mapped(tuple(split.shapes[s])).normal_() for s in range(1, last + 1)}  # F's input, B's grad
    outgoing = {s: _mapped(tuple(split.shapes[s])) for s in range(1, last + 1)}
    # What each action does, looked up once: between two actions only the clocks (and the copy) run.
    program = [(a.kind, a.stage, a.microbatch, sent_across(a.kind, a.stage, last)) for a in schedule.actions[pipe]]
    measured, gaps = set(measured_steps(config.steps)), []
    for step in range(config.steps):
        batches = {j: split.parts.batch(step, j) for kind, s, j, _ in program
                   if kind == FORWARD and s in (0, last)}  # before the step, as the executor's prefetch
        ended = None
        for kind, s, j, boundary in program:
            began = thread_time()
            if ended is not None and step in measured:
                gaps.append(began - ended)
            if kind == FORWARD:
                x = batches[j][0] if s == 0 else incoming[s]
                result = stages[s].forward(j, x, batches[j][1] if s == last else None, scale)
            elif kind == BACKWARD or kind == BACKWARD_INPUT:
                result = stages[s].backward(j, None if s == last else incoming[s + 1], kind == BACKWARD_INPUT)
            elif kind == BACKWARD_WEIGHT:
                stages[s].weight_grad(j)
            ended = thread_time()
            if copy and boundary is not None:
                outgoing[boundary].copy_(result)
        for stage in stages.values():  # the update after the flush: nothing follows the last one
            began = thread_time()
            if step in measured:
                gaps.append(began - ended)
            stage.update(1.0)
            ended = thread_time()
        if step in measured:
            gaps.append(0.0)
    queue.put(gaps)


def measure(config, copy: bool) -> list[float]:
    """Every gap between two actions (s) of one play of ``config`` on all its ranks at once."""
    import multiprocessing
    context = multiprocessing.get_context("spawn")  # a fresh interpreter per rank, as a launch's
    queue = context.Queue()
    ranks = [context.Process(target=_rank, args=(config, pipe, copy, queue), daemon=True)
             for pipe in range(config.build_schedule().num_ranks)]
    for process in ranks:
        process.start()
    try:
        gaps = [g for _ in ranks for g in queue.get(timeout=600)]
    finally:
        for process in ranks:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
    return gaps


def median_us(gaps: list[float]) -> float:
    return statistics.median(gaps) * 1e6
