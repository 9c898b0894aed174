"""Runs one rank's actions for every schedule, and records what happened on two clocks.

There is no schedule-specific loop here: the executor walks the rank's action list and does
what each action says. Device clock (design.md): an action lasts its own device time
(thread CPU time on CPU, CUDA events on GPU); on CPU the executor's own work between two
actions (posting sends, bookkeeping) moves it on too, as Event.host_after; a received message
moves it to max(own clock, sender's stamp + link cost). Wall clock: what really happened on
this host.
"""

from __future__ import annotations

import time
from dataclasses import fields

import torch
import torch.distributed as dist

from engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, UPDATE
from engine.comm import Mailbox, message_plan
from engine.device import Device, HostStopwatch, Stopwatch, wall_now
from engine.schedules.base import Schedule
from engine.stage import Stage
from engine.status import ALL_RANKS, NOT_WAITING
from engine.record import RankRecord
from engine.timeline import RECV, SEND, Event


# A recorded event's fields: engine.timeline.Event's, in its order, which _event's list keeps.
EVENT_FIELDS = tuple(f.name for f in fields(Event))
WALL_START, WALL_END, HOST_AFTER = (EVENT_FIELDS.index(f) for f in ("wall_start", "wall_end", "host_after"))


class Executor:
    def __init__(self, rank: int, schedule: Schedule, stages: dict[int, Stage], device: Device,
                 shape_of, make_input, make_target, loss_scale: float, link_cost: float,
                 wall_origin: float, transport, progress=None):
        self.rank = rank
        self.transport = transport
        self.schedule = schedule
        self.stages = stages
        self.device = device
        self.shape_of = shape_of
        self.make_input, self.make_target = make_input, make_target
        self.loss_scale = loss_scale
        self.link_cost = link_cost
        self.wall_origin = wall_origin
        self.progress = progress
        self.stopwatch = Stopwatch(device)
        self.host = HostStopwatch(device)
        self._last_action: list | None = None  # the event host time is booked to
        self.clock = 0.0  # device clock, seconds
        self.record = RankRecord(rank)
        self.tracker = next(iter(stages.values())).tracker
        self.messages = message_plan(schedule, rank)  # once per run: every step's Mailbox reads it

    # ---- recording -------------------------------------------------------------------
    def _event(self, step, stage, kind, j, start, end, wall_start, wall_end, peer=None, nbytes=0):
        # A list in EVENT_FIELDS order, made into a dict once the run is over (summarize):
        # recording sits between actions, where every microsecond is the executor's overhead.
        event = [self.rank, stage, kind, j, start, end, step, wall_start, wall_end, peer, nbytes, 0.0]
        self.record.events.append(event)
        return event

    def _settle_host(self) -> None:
        """Move the device clock on by the executor's own CPU time since the last action
        ended, and book it to that action. Called before anything that may wait, so the
        time spent waiting for a message is never in it."""
        elapsed = self.host.take()
        if self._last_action is not None:
            self.clock += elapsed
            self._last_action[HOST_AFTER] += elapsed

    def _waiting(self, step, on: int | float) -> None:
        """Tell the launcher this rank now blocks on ``on`` (a rank, ALL_RANKS), or no longer
        (NOT_WAITING): a hung rank is the one not blocked on another."""
        if self.progress is not None:
            self.progress(step, -1, -1, waiting=on)

    def _receive(self, step, mailbox: Mailbox, key, src):
        self._settle_host()
        w0, c0 = wall_now(), self.clock
        blocks = not mailbox.ready(key, src)
        if blocks:
            self._waiting(step, src)
        tensor, stamp = mailbox.receive(key, src)
        if blocks:
            self._waiting(step, NOT_WAITING)
        if src != self.rank:
            self.clock = max(self.clock, stamp + self.link_cost)
            self._event(step, key[1], RECV, key[2], c0, self.clock, w0, wall_now(), peer=src,
                        nbytes=tensor.numel() * tensor.element_size())
        return tensor

    def _send(self, step, mailbox: Mailbox, key, tensor, dst):
        w0 = wall_now()
        mailbox.send(key, tensor, self.clock, dst)
        if dst != self.rank:
            self._event(step, key[1], SEND, key[2], self.clock, self.clock, w0, wall_now(), peer=dst,
                        nbytes=tensor.numel() * tensor.element_size())

    def _timed(self, step, stage, kind, j, fn):
        self._settle_host()
        w0 = wall_now()
        self.stopwatch.start()
        result = fn()
        duration = self.stopwatch.stop()
        self.host.start()
        start, self.clock = self.clock, self.clock + duration
        self._last_action = self._event(step, stage, kind, j, start, self.clock, w0, wall_now())
        self.stages[stage].account(kind, j)
        self.tracker.sample(self.clock)
        return result

    # ---- one step --------------------------------------------------------------------
    def run_step(self, step: int) -> None:
        last = self.schedule.num_stages - 1
        program = self.schedule.actions[self.rank]
        # The step's data is ready before the step starts, as a data loader's prefetch would
        # have it: making it is not pipeline work, and inside the step it showed up as
        # executor overhead (bench/RESULTS.md, section 3).
        inputs = {a.microbatch: self.make_input(step, a.microbatch)
                  for a in program if a.kind == FORWARD and a.stage == 0}
        targets = {a.microbatch: self.make_target(step, a.microbatch)
                   for a in program if a.kind == FORWARD and a.stage == last}
        # Every step starts together on the device clock, as after a flush and barrier.
        self.host.take()
        self._last_action = None
        start = torch.tensor([self.clock], dtype=torch.float64, device=self.device.torch_device)
        self._waiting(step, ALL_RANKS)
        dist.all_reduce(start, op=dist.ReduceOp.MAX)
        self._waiting(step, NOT_WAITING)
        self.clock = float(start.item())
        cpu_start = time.process_time()
        self.tracker.sample(self.clock)
        mailbox = Mailbox(self.rank, self.messages, self.shape_of, self.transport)
        to_rank = self.schedule.stage_to_rank
        losses: dict[int, float] = {}
        for index, a in enumerate(program):
            s, j = a.stage, a.microbatch
            stage = self.stages[s]
            if a.kind == FORWARD:
                if s == 0:
                    x = inputs.pop(j)
                else:
                    x = self._receive(step, mailbox, ("act", s, j), to_rank[s - 1])
                target = targets.pop(j) if s == last else None
                out = self._timed(step, s, FORWARD, j, lambda: stage.forward(j, x, target, self.loss_scale))
                if s == last:
                    losses[j] = float(out)
                else:
                    self._send(step, mailbox, ("act", s + 1, j), out, to_rank[s + 1])
                if stage.versioned:
                    stage.note_versions()
            elif a.kind in (BACKWARD, BACKWARD_INPUT):
                grad = None if s == last else self._receive(step, mailbox, ("grad", s, j), to_rank[s + 1])
                split = a.kind == BACKWARD_INPUT
                grad_in = self._timed(step, s, a.kind, j, lambda: stage.backward(j, grad, split))
                if s > 0:
                    self._send(step, mailbox, ("grad", s - 1, j), grad_in, to_rank[s - 1])
            elif a.kind == BACKWARD_WEIGHT:
                self._timed(step, s, BACKWARD_WEIGHT, j, lambda: stage.weight_grad(j))
            elif a.kind == UPDATE:
                self._timed(step, s, UPDATE, j, stage.update)
                self.record.peak_stashed_bytes = max(self.record.peak_stashed_bytes,
                                                     sum(st.stashed_bytes() for st in self.stages.values()))
            if self.progress is not None:
                self.progress(step, index + 1, len(program))
        self._settle_host()
        mailbox.finish()
        self.record.cpu_seconds.append(time.process_time() - cpu_start)
        self.record.messages_sent += mailbox.sent
        self.record.bytes_sent += mailbox.bytes_sent
        if losses:
            ordered = [losses[j] for j in sorted(losses)]
            self.record.microbatch_losses.append(ordered)
            self.record.losses.append(sum(ordered) / len(ordered))

    def finish_step(self, step: int) -> None:
        """Synchronous schedules update once, after the flush."""
        if self.schedule.is_async:
            return
        for s, stage in self.stages.items():
            self._timed(step, s, UPDATE, 0, stage.update)

    def gradients(self) -> dict[str, torch.Tensor]:
        """Current .grad of every local parameter, named by stage, before the update."""
        out = {}
        for s, stage in self.stages.items():
            for n, p in stage.module.named_parameters():
                if p.grad is not None:
                    out[f"{s}.{n}"] = p.grad.detach().clone()
        return out

    def summarize(self) -> RankRecord:
        r = self.record
        origin = self.wall_origin
        r.events = [dict(zip(EVENT_FIELDS, e), wall_start=e[WALL_START] - origin, wall_end=e[WALL_END] - origin)
                    for e in r.events]
        r.memory = self.tracker.samples
        r.peak_activation_bytes = self.tracker.peak
        r.activation_bytes = {s: st.activation_bytes for s, st in self.stages.items()}
        r.weight_grad_bytes = {s: st.weight_grad_bytes for s, st in self.stages.items()}
        r.parameter_bytes = sum(st.parameter_bytes() for st in self.stages.values())
        r.gradient_bytes = r.parameter_bytes  # one gradient per parameter, accumulated in place
        r.optimizer_bytes = sum(st.optimizer_bytes() for st in self.stages.values())
        r.weight_versions = max(st.peak_versions for st in self.stages.values())
        r.message_buffer_bytes = getattr(self.transport, "buffer_bytes", None)
        if self.device.kind == "cuda":
            r.cuda_peak_bytes = torch.cuda.max_memory_allocated(self.device.torch_device)
        return r


def measure_link_cost(rank: int, world: int, shape: tuple, device: torch.device, transport,
                      rounds: int = 10) -> float:
    """One-way time of a stage-boundary message between ranks 0 and 1 over the run's own
    transport, measured once per run by ping-pong; the minimum over rounds, as contention
    only ever adds to it."""
    if world < 2:
        return 0.0
    payload = torch.zeros(shape, device=device)
    best = float("inf")
    for _ in range(rounds):
        if rank == 0:
            t0 = time.perf_counter()
            transport.isend(payload, 0.0, 1).wait()
            transport.irecv(shape, 1).wait()
            best = min(best, (time.perf_counter() - t0) / 2)
        elif rank == 1:
            transport.irecv(shape, 0).wait()
            transport.isend(payload, 0.0, 0).wait()
    cost = torch.tensor([best if rank == 0 else 0.0], dtype=torch.float64, device=device)
    dist.broadcast(cost, 0)
    return float(cost.item())
