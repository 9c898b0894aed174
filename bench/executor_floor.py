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
  result into a slot of a file mapped shared, as the shared-memory transport does;
- "clocks and the transport": those, and every message through the engine's own
  shared-memory transport (engine/runtime/transport.py) as a run sends and takes it: a send
  is the copy into its slot and the raise of the channel's semaphore, which wakes a receiver
  asleep on it (a system call, bench/WAKE.md); a receive takes a message that is in already
  between two actions, and one that is not after a wait that, as in the executor, is not
  the time between actions (the clock stops before the wait and starts again after the take).

In the first two a received message is a slot of such a mapping (filled once), as the
transport hands it out, and no rank waits for another; in all three nothing but the actions,
the clocks (and the messages) runs, all ranks at once as in a launch (one process each, one
torch thread, a barrier before each step as the runs' steps have). The gaps are taken over
the same measured steps as the runs', each stage's optimizer step (U) closing its rank's step
with none after it, as in the runs' figures. What an executor does besides (an event's
record, the memory curve and the progress report, which the run reports) comes on top.
"""

from __future__ import annotations

import mmap
import statistics
import tempfile

CLOCKS, COPY, TRANSPORT = "clocks only", "clocks and the send's copy", "clocks and the transport"
VARIANTS = (CLOCKS, COPY, TRANSPORT)


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


def gap(before: str, after: str | None) -> str:
    """A gap's name: the action it follows and the one it precedes ("F0", "U1"; None: its rank's
    step ends), as bench/executor_costs.py names ours."""
    return f"{before} -> {after or 'end'}"


def received_from(kind: str, stage: int, last: int) -> int | None:
    """The stage boundary whose message action ``kind`` of ``stage`` takes (as ``sent_across``),
    or None where it takes none: F the activation entering its stage, B or I the gradient of
    the activation entering the next."""
    from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, FORWARD
    if kind == FORWARD and stage > 0:
        return stage
    if kind in (BACKWARD, BACKWARD_INPUT) and stage < last:
        return stage + 1
    return None


def messages(schedule, kind: str, stage: int, microbatch: int) -> tuple[tuple | None, tuple | None]:
    """What action ``kind`` of ``stage`` on ``microbatch`` sends and takes, each as (stage
    boundary, the peer rank) or None: an activation goes to the stage it enters, a gradient to
    the one before."""
    from pipelab.engine.actions import FORWARD
    last = schedule.num_stages - 1
    into, out_of = sent_across(kind, stage, last), received_from(kind, stage, last)
    forward = kind == FORWARD
    return (None if into is None else (into, schedule.rank_of(into if forward else into - 1, microbatch)),
            None if out_of is None else (out_of, schedule.rank_of(out_of - 1 if forward else out_of, microbatch)))


def peers(schedule, kind: str, stage: int, microbatch: int) -> tuple[int | None, int | None]:
    """The ranks action ``kind`` of ``stage`` on ``microbatch`` sends to and takes from (None: no message)."""
    return tuple(None if message is None else message[1] for message in messages(schedule, kind, stage, microbatch))


def check_plays_through_transport(schedule) -> None:
    """The transport hands each channel's messages over in the order they were sent, and the
    floor takes them as they come, with none of the Mailbox's buffering or hand-over between two
    stages of one rank (engine/runtime/comm.py): every message must join two ranks and every
    channel be taken in its send order (1F1B, ZB-H2; not a V, whose turn stays on its rank)."""
    from pipelab.engine.runtime.comm import message_plan, sends_by_channel
    for rank, program in enumerate(schedule.actions):
        for a in program:
            if rank in peers(schedule, a.kind, a.stage, a.microbatch):
                raise ValueError(f"the floor's transport plays messages between two ranks only; {a.kind} of stage "
                                 f"{a.stage} hands its message over on rank {rank}")
    for (src, dst), sent in sends_by_channel(schedule).items():
        if [key for key, _ in sent] != message_plan(schedule, dst).incoming.get(src, []):
            raise ValueError(f"the floor's transport takes each channel's messages in their send order; "
                             f"channel {src} -> {dst} is taken in another")


def _rank(config, pipe: int, variant: str, links, queue) -> None:
    """Pipeline rank ``pipe`` of ``config``'s schedule with nothing between its actions but
    the clocks (and, as ``variant`` says, the send's copy or the transport); puts the measured
    steps' gaps (s) on ``queue``. ``links``: (folder, semaphores, barrier), the transport's
    channels and the barrier before each step."""
    from time import thread_time

    import torch

    from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD
    from pipelab.engine.device import Device
    from pipelab.engine.results.windows import measured_steps
    from pipelab.engine.runtime.comm import channel_sizes
    from pipelab.engine.runtime.transport import SharedMemoryTransport
    from pipelab.engine.runtime.worker import loss_scale, make_stages, split_model

    torch.set_num_threads(1)  # as a rank computes (engine/device.py)
    folder, semaphores, barrier = links
    schedule = config.build_schedule()
    split = split_model(config, schedule, pipe, Device("cpu"))
    stages = make_stages(config, schedule, pipe, split)
    last, scale = schedule.num_stages - 1, loss_scale(schedule)
    shapes = {s: tuple(split.shapes[s]) for s in range(1, last + 1)}  # the activation entering stage s
    # Without the transport, a received message is a slot filled once (F's input, B's grad), and
    # with the copy a send writes into one of its own.
    incoming = {s: _mapped(shape).normal_() for s, shape in shapes.items()} if variant != TRANSPORT else {}
    outgoing = {s: _mapped(shape) for s, shape in shapes.items()} if variant == COPY else {}
    transport = None
    if variant == TRANSPORT:
        sizes = channel_sizes(schedule, lambda s: split.shapes[s], 0)
        transport = SharedMemoryTransport(pipe, folder, semaphores, {c: n for c, (n, _) in sizes.items()},
                                          {c: numel for c, (_, numel) in sizes.items()}, config.timeout_s)
        transport.create_outgoing()
    barrier.wait(config.timeout_s)  # every channel file exists before anyone maps its incoming ones
    if transport is not None:
        transport.open_incoming()
    # What each action does, looked up once: between two actions only the clocks (and the messages) run.
    program = []  # (kind, stage, micro-batch, (boundary, peer, shape) of what it sends, and of what it takes)
    for a in schedule.actions[pipe]:
        sent, taken = (None if m is None else (*m, shapes[m[0]]) for m in messages(schedule, a.kind, a.stage,
                                                                                     a.microbatch))
        program.append((a.kind, a.stage, a.microbatch, sent, taken))
    measured, gaps = set(measured_steps(config.steps)), []
    for step in range(config.steps):
        batches = {j: split.parts.batch(step, j) for kind, s, j, _, _ in program
                   if kind == FORWARD and s in (0, last)}  # before the step, as the executor's prefetch
        barrier.wait(config.timeout_s)  # the steps start together, as the runs' do after their all-reduce
        ended, waited, before = None, 0.0, None
        for kind, s, j, send, take in program:
            message = None
            if transport is not None and take is not None:
                got = transport.take_if_in(take[1], take[2])
                if got is None:  # it would wait: the clock stops, as the executor's, until it is taken
                    stopped = thread_time()
                    got = transport.take_next(take[1], take[2])
                    if ended is not None:
                        waited += thread_time() - stopped
                message = got[0]
            began = thread_time()
            if ended is not None and step in measured:
                gaps.append((gap(before, f"{kind}{s}"), began - ended - waited))
            waited, before = 0.0, f"{kind}{s}"
            if kind == FORWARD:
                x = batches[j][0] if s == 0 else (incoming[s] if message is None else message)
                result = stages[s].forward(j, x, batches[j][1] if s == last else None, scale)
            elif kind == BACKWARD or kind == BACKWARD_INPUT:
                grad = None if s == last else (incoming[s + 1] if message is None else message)
                result = stages[s].backward(j, grad, kind == BACKWARD_INPUT)
            elif kind == BACKWARD_WEIGHT:
                stages[s].weight_grad(j)
            ended = thread_time()
            if send is not None:
                if transport is not None:
                    transport.poster(send[1])(result, 0.0)
                elif variant == COPY:
                    outgoing[send[0]].copy_(result)
        for index, stage in stages.items():  # the update after the flush: nothing follows the last one
            began = thread_time()
            if step in measured:
                gaps.append((gap(before, f"U{index}"), began - ended))
            stage.update(1.0)
            ended, before = thread_time(), f"U{index}"
        if step in measured:
            gaps.append((gap(before, None), 0.0))
    queue.put(gaps)


def measure(config, variant: str) -> list[tuple[str, float]]:
    """Every gap between two actions of one play of ``config`` on all its ranks at once, as
    ``variant`` (one of VARIANTS) plays it: its name (``gap``) and seconds."""
    import multiprocessing
    import shutil

    from pipelab.engine.runtime.comm import channels
    if variant not in VARIANTS:
        raise ValueError(f"no floor variant {variant!r}: one of {', '.join(VARIANTS)}")
    schedule = config.build_schedule()
    if variant == TRANSPORT:
        check_plays_through_transport(schedule)
    context = multiprocessing.get_context("spawn")  # a fresh interpreter per rank, as a launch's
    queue = context.Queue()
    folder = tempfile.mkdtemp(prefix="pipelab-floor-")
    links = (folder, {channel: context.Semaphore(0) for channel in channels(schedule)},
             context.Barrier(schedule.num_ranks))
    ranks = [context.Process(target=_rank, args=(config, pipe, variant, links, queue), daemon=True)
             for pipe in range(schedule.num_ranks)]
    try:
        for process in ranks:
            process.start()
        gaps = [g for _ in ranks for g in _next_rank_gaps(queue, ranks)]
    finally:
        for process in ranks:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
        shutil.rmtree(folder, ignore_errors=True)
    return gaps


def _next_rank_gaps(queue, ranks) -> list:
    """The next rank's gaps off ``queue``; a RuntimeError as soon as a rank has died without
    them (its peers would wait on its messages, or at the barrier, until their timeout)."""
    import queue as queues
    while True:
        try:
            return queue.get(timeout=1.0)
        except queues.Empty:
            dead = [(pipe, process.exitcode) for pipe, process in enumerate(ranks) if process.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError("the floor's rank {} stopped with exit code {}".format(*dead[0])) from None


def median_us(gaps: list[tuple[str, float]]) -> float:
    """The median gap, µs."""
    return statistics.median(seconds for _, seconds in gaps) * 1e6


def median_by_gap_us(gaps: list[tuple[str, float]]) -> dict[str, float]:
    """Each named gap's median, µs."""
    named: dict[str, list[float]] = {}
    for name, seconds in gaps:
        named.setdefault(name, []).append(seconds)
    return {name: statistics.median(values) * 1e6 for name, values in named.items()}
