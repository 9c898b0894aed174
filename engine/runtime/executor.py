"""Runs one rank's actions for every schedule, and records what happened on two clocks.

There is no schedule-specific loop here: the executor walks the rank's action list and does
what each action says, one step at a time after a barrier (run_step), or the run's steps
as one stream without one (run_stream, engine/schedules/stream.py). Device clock (docs/measuring.md):
an action lasts its own device time (thread CPU time on CPU, CUDA events on GPU); on CPU
the executor's own work between two actions (posting sends, bookkeeping, taking a message that
is in already) moves it on too,
as Event.host_after; a received message moves it to max(own clock, sender's stamp + link
cost). Wall clock: what really happened on this host.
"""

from __future__ import annotations

import gc
import math
import time
from time import thread_time

import torch
import torch.distributed as dist

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, REDUCE_GRAD, UPDATE
from pipelab.engine.device import Device, HostStopwatch, Stopwatch, wall_now
from pipelab.engine.results.rank_record import RankRecord
from pipelab.engine.results.timeline import RECV, ROW_HOST_AFTER, SEND, Event
from pipelab.engine.runtime.comm import Mailbox, message_plan, message_shape
from pipelab.engine.runtime.executor_checks import StepCheckSteps
from pipelab.engine.runtime.placement import allowed_cpus
from pipelab.engine.runtime.post_validation import GradState, StepCheck
from pipelab.engine.runtime.stage import Stage
from pipelab.engine.runtime.status import ALL_RANKS, NOT_WAITING
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.schedules.stream import Stream

# Progress reports at most this often (wall seconds): the launcher polls the board every
# 0.1 s and calls a rank stalled after seconds without one.
PROGRESS_EVERY_S = 0.05


class Executor(StepCheckSteps):
    def __init__(self, rank: int, schedule: Schedule, stages: dict[int, Stage], device: Device,
                 shape_of, make_input, make_target, loss_scale: float, link_cost: float,
                 wall_origin: float, transport, progress=None, stream: Stream | None = None,
                 capture_step: int | None = None, step_check: StepCheck | None = None, reduce=None,
                 replica: int = 0):
        """``stream``: run the steps as one stream (run_stream) instead of run_step per step.
        ``capture_step``: keep that step's gradients before its update (captured_grads).
        ``step_check``: clip to a global norm and skip non-finite steps
        (engine/runtime/post_validation.py). ``reduce``: the R actions' collectives
        (engine/runtime/gradient_reduce.py), with data parallelism; ``replica``: which
        pipeline this rank is in (``rank`` is its rank within it)."""
        self.rank = rank
        self.reduce = reduce
        self._flushed_step: int | None = None  # the last step whose flush this rank waited for
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
        self._next_report = 0.0 if progress is not None else float("inf")  # wall clock of the next (_report)
        self._last_wall = 0.0  # the latest event's wall-clock end: the progress report's "now"
        self._last_stage = schedule.num_stages - 1
        self.stopwatch = Stopwatch(device)
        self.host = HostStopwatch(device)
        self._last_action: list | None = None  # the event row host time is booked to
        # (arrival on the device clock, RECV row) of the message the next action received, for
        # that action's start (_receive, _arrive)
        self._arrival: tuple[float, list] | None = None
        self.clock = 0.0  # device clock, seconds
        self.record = RankRecord(rank, replica, dict(reduce.cost_s) if reduce is not None else {},
                                 cpus=allowed_cpus())  # where the OS holds this rank for its steps
        self.events: list[list] = []  # rows (timeline.EVENT_ROW), made into Events once the run is over
        self.tracker = next(iter(stages.values())).tracker
        # On CPU the activation accounting is queued after each action and counted while the
        # rank would wait for a message, or once its step is over (_account_deferred, _close_step,
        # engine/runtime/memory.py): the same curve, out of the time between two actions. On a
        # GPU that time is not device time (HostStopwatch): counted at once, as the CUDA
        # ledger reads it after every action.
        self._deferred = self.tracker.defer() if device.kind == "cpu" else None
        self._account_later = self.tracker.later
        self.stream = stream
        # Once per run: every step's Mailbox reads it (the stream's one Mailbox, all of it).
        self.messages = message_plan(stream.program if stream is not None else schedule, rank)
        self.capture_step = capture_step
        self._step_plan: list[tuple] | None = None  # run_step's program, planned once (_plan)
        self.captured_grads: dict[str, torch.Tensor] = {}
        self._inputs: dict[int, torch.Tensor] = {}
        self._targets: dict[int, torch.Tensor] = {}
        self._losses: dict[int, dict[int, float]] = {}  # step -> micro-batch -> loss
        self.step_check = step_check
        self._local: dict[int, GradState] = {}  # step -> this rank's gradient state so far
        self._optimistic: dict[int, list[int]] = {}  # step -> stages updated before its verdict
        self._verdicts: dict[int, GradState] = {}  # the last rank's own verdicts
        self._mailbox = None  # the step's, for the CUDA memory ledger's look at held messages
        # On a GPU, what holds the allocator's peak (engine/runtime/cuda_memory.py); None on CPU.
        self.cuda_memory = None
        if device.kind == "cuda":
            from pipelab.engine.runtime.cuda_memory import CudaMemoryLedger
            self.cuda_memory = CudaMemoryLedger(self)

    # ---- recording -------------------------------------------------------------------
    def _event(self, step, stage, kind, mb_in_step, start, end, wall_start, wall_end, peer=None, nbytes=0) -> list:
        """Record an event as a plain list (timeline.EVENT_ROW, host_after last); summarize()
        makes the Events."""
        row = [stage, kind, mb_in_step, start, end, step, wall_start, wall_end, peer, nbytes, 0.0]
        self.events.append(row)
        self._last_wall = wall_end
        return row

    def _settle_host(self) -> None:
        """Move the device clock on by the executor's own CPU time since the last action
        ended, and book it to that action. Called before anything that may wait, so the
        time spent waiting for a message is never in it."""
        self._book_host(self.host.take())

    def _waiting(self, step, on: int | float) -> None:
        """Tell the launcher this rank now blocks on ``on`` (a rank of its pipeline, ALL_RANKS),
        or no longer (NOT_WAITING): a hung rank is the one not blocked on another. The launcher
        counts processes: replica k's pipeline rank r is process k * p + r (RankLayout)."""
        if self.progress is not None:
            if on >= 0:
                on += self.process - self.rank
            self.progress(step, -1, -1, waiting=on)

    @property
    def process(self) -> int:
        """This rank's process: pipeline rank ``rank`` of replica ``record.replica`` (RankLayout)."""
        return self.record.replica * self.schedule.num_ranks + self.rank

    def _report(self, step, done: int, total: int) -> None:
        """Tell the launcher how far this rank is, at most every PROGRESS_EVERY_S and once its
        step is done (done == total): it reads the board only every 0.1 s, and a write after
        every action was the executor's own time on the device clock, action after action. "Now"
        is the latest event's end (read already, for its record): no clock read of its own."""
        if self.progress is None:
            return
        now = self._last_wall
        if now >= self._next_report or done == total:
            self._next_report = now + PROGRESS_EVERY_S
            self.progress(step, done, total)

    def _receive(self, step, mb_in_step, mailbox: Mailbox, key, src, nbytes):
        """The message ``key`` from ``src`` (``nbytes``: its planned bytes, for the RECV event).
        The clock moves to max(itself, the message's arrival) at the action's start, once the
        host time before it is settled (_act, _arrive): all of that comes before the max, where
        the simulator puts an action's host_after. Taking a message that is in already is the
        executor's own work between two actions: the host stopwatch runs on through it, with no
        clock read of its own. A receive that has to wait settles first, so the host stopwatch
        is stopped through the wait and the take after it, the message's latency (the link
        cost's ping-pong takes a message each round); queued accounting that outlasted the wait
        is booked as host time first (_account_deferred)."""
        wall_start = wall_now()
        got = mailbox.take_if_in(key, src)
        if got is None:  # it would wait: settled first, so that the wait is never host time
            self._settle_host()
            accounted = 0.0
            if self._deferred:  # the rank would idle: its queued accounting runs now, until the message is in
                accounted = self._account_deferred(lambda: mailbox.ready(key, src))
            self._waiting(step, src)
            got = mailbox.receive(key, src)
            self._waiting(step, NOT_WAITING)
            if src != self.rank and self.clock + accounted > got[1] + self.link_cost:
                self._book_outlasted(accounted)
        tensor, stamp = got
        if src != self.rank:  # the clock meets the arrival at the action's start (_arrive)
            self._last_wall = wall_end = wall_now()  # _event's row, built here: one frame fewer
            row = [key[1], RECV, mb_in_step, 0.0, 0.0, step, wall_start, wall_end, src, nbytes, 0.0]
            self.events.append(row)
            self._arrival = (stamp + self.link_cost, row)
        if self.cuda_memory is not None:
            self.cuda_memory.note_received(tensor)
        return tensor

    def _arrive(self) -> None:
        """The device clock to max(itself, the arrival of the message the action received,
        _receive), once the host time before the action is settled: all of it comes before the
        max, where the simulator puts an action's host_after; the RECV event spans the max."""
        arrival, row = self._arrival
        self._arrival = None
        row[3] = self.clock
        self.clock = row[4] = max(self.clock, arrival)

    def _account_deferred(self, arrived) -> float:
        """Count the queued activation accounting now (ActivationTracker.replay), while the rank
        would wait for a message, one action after another until ``arrived()`` (the rest waits
        for the next wait); returns its thread CPU time. The device clock then moves to
        max(start + that, the message's arrival): where the message came later, the wait
        hid it (the RECV event spans the wait, as before); where it did not, the rank was
        busy with its own work all along, and that time is host_after of the action before,
        as any (_receive). Either way the simulator fed the durations and host_after puts
        every action where the clock did (tests/test_engine_run.py)."""
        started = thread_time()
        self.tracker.replay(until=arrived)
        return thread_time() - started

    def _book_outlasted(self, accounted: float) -> None:
        """Queued accounting that outlasted the wait it ran in (_receive): the rank was busy with
        its own work all along, so it is host time after the last action after all. A method of
        its own so that bench/executor_probe.py can move it there from "in a wait"."""
        self._book_host(accounted)

    def _book_host(self, elapsed: float) -> None:
        """Move the device clock on by ``elapsed`` of the executor's own time, booked to the last
        action (none yet in this step: nothing queued either, as in _settle_host)."""
        last = self._last_action
        if last is not None:
            self.clock += elapsed
            last[ROW_HOST_AFTER] += elapsed

    def _send(self, step, mb_in_step, mailbox: Mailbox, tensor, key, dst, nbytes):
        wall_start = self._last_wall  # the action's end, read just now: one clock read fewer
        mailbox.send(key, tensor, self.clock, dst, nbytes)
        if dst != self.rank:  # _event's row, built here: one frame fewer
            self._last_wall = wall_end = wall_now()
            self.events.append([key[1], SEND, mb_in_step, self.clock, self.clock, step, wall_start, wall_end, dst,
                                nbytes, 0.0])

    # ---- the actions -----------------------------------------------------------------
    def _prefetch(self, step: int, offset: int) -> None:
        """Make a step's inputs (first stage) and targets (last stage) for this rank, keyed by
        stream micro-batch (``offset`` plus the micro-batch's index in the step). Ready before
        the step's work, as a data loader's prefetch would have it: making it is not pipeline
        work, and inside the step it showed up as executor overhead (bench/RESULTS.md, section 3)."""
        last = self.schedule.num_stages - 1
        for a in self.schedule.actions[self.rank]:
            if a.kind == FORWARD and a.stage == 0:
                self._inputs[offset + a.microbatch] = self.make_input(step, a.microbatch)
            if a.kind == FORWARD and a.stage == last:
                self._targets[offset + a.microbatch] = self.make_target(step, a.microbatch)

    def _plan(self, program, m: int | None) -> list[tuple]:
        """Each action of ``program`` with what doing it looks up resolved once per run, not
        once per action (bench/EXECUTOR.md): (kind, stage index, its Stage, its micro-batch's
        key in the stages and messages, its index in its step, (message key, source, bytes) of
        what it receives, (message key, destination, bytes) of what it sends, or an update's
        scale). ``m``: micro-batches per step in a stream (a key names its step); None for one
        step's program."""
        last, to_rank = self._last_stage, self.schedule.rank_of  # a replicated stage's micro-batches go round-robin
        shape_of = self.shape_of
        plans = []
        for a in program:
            s, stream_mb = a.stage, a.microbatch
            mb_in_step = stream_mb if m is None else stream_mb % m
            receive = send = None
            if a.kind == FORWARD:
                if s > 0:
                    receive = _planned(("act", s, stream_mb), to_rank(s - 1, mb_in_step), shape_of)
                if s < last:
                    send = _planned(("act", s + 1, stream_mb), to_rank(s + 1, mb_in_step), shape_of)
            elif a.kind in (BACKWARD, BACKWARD_INPUT):
                if s < last:
                    receive = _planned(("grad", s, stream_mb), to_rank(s + 1, mb_in_step), shape_of)
                if s > 0:
                    send = _planned(("grad", s - 1, stream_mb), to_rank(s - 1, mb_in_step), shape_of)
            elif a.kind == UPDATE:
                send = 1.0  # a program's update steps at full scale (a step check's: _update)
            plans.append((a.kind, s, self.stages.get(s), stream_mb, mb_in_step, receive, send))
        return plans

    def _act(self, plan: tuple, step: int, mailbox: Mailbox | None) -> None:
        """Do one action of step ``step`` as its plan says (_plan): take what it needs, run it on
        the device clock, record it, queue its memory accounting and post its send. All in one
        frame from an action's end to the next one's start: right after an action each frame
        and call there costs microseconds, not the tenths it costs warm (bench/COLD_CALLS.md);
        the timing in a frame of its own, with the stage's method handed to it as a bound
        method and its arguments packed, was 3-5 µs of 1F1B's gaps without a message
        (bench/EXECUTOR.md at a0220cf). On CPU two
        thread-time reads between two actions, not four: the host stopwatch's last reading
        starts the action's, and the action's last one starts the host's (engine/device.py).
        R keeps a clock of its own (_reduce)."""
        kind, stage_index, stage, stream_mb, mb_in_step, receive, send = plan
        if kind == FORWARD:
            x = self._inputs.pop(stream_mb) if receive is None else self._receive(step, mb_in_step, mailbox, *receive)
            target = self._targets.pop(stream_mb) if send is None else None
        elif kind == BACKWARD or kind == BACKWARD_INPUT:
            grad = None if receive is None else self._receive(step, mb_in_step, mailbox, *receive)
        elif kind == UPDATE:  # ``send`` is its scale
            if step == self.capture_step:
                self._capture_grads(stage_index, stage)
        elif kind == REDUCE_GRAD:
            self._reduce(step, stage_index)
            return
        wall_start = wall_now()
        host = self.host
        if host.counts:  # CPU: the host stopwatch and the action's, inline
            began = thread_time()
            since, host.since = host.since, None
            last = self._last_action
            if since is not None and last is not None:  # _settle_host
                self.clock += began - since
                last[ROW_HOST_AFTER] += began - since
            if self._arrival is not None:
                self._arrive()
        else:
            self._settle_host()
            if self._arrival is not None:
                self._arrive()
            self.stopwatch.start()
        # Called by name, not made a bound method with its arguments packed beforehand: each of
        # those is a first touch right after an action.
        if kind == FORWARD:
            result = stage.forward(stream_mb, x, target, self.loss_scale)
        elif kind == BACKWARD or kind == BACKWARD_INPUT:
            result = stage.backward(stream_mb, grad, kind == BACKWARD_INPUT)
        elif kind == BACKWARD_WEIGHT:
            result = stage.weight_grad(stream_mb)
        else:
            result = stage.update(send)
        if host.counts:
            host.since = ended = thread_time()
            duration = ended - began
        else:
            duration = self.stopwatch.stop()
        start = self.clock
        self.clock = end = start + duration
        self._last_wall = wall_end = wall_now()
        row = self._last_action = [stage_index, kind, mb_in_step, start, end, step, wall_start, wall_end, None, 0, 0.0]
        self.events.append(row)  # _event's row, built here: one frame fewer
        deferred = self._deferred
        # An update with nothing queued before it is counted at once; after a barrier step's flush the
        # last actions' accounting still is, and the updates' waits with it (_close_step).
        if deferred is None or (kind == UPDATE and not deferred):
            stage.account(kind, stream_mb)
            self.tracker.sample(end)
        else:  # counted later, in order (ActivationTracker.replay): here one tuple
            self._account_later(stage, kind, stream_mb, end)
        if self.cuda_memory is not None:
            self.cuda_memory.mark(f"{kind} stage {stage_index}, micro-batch {mb_in_step}, step {step}",
                                  backward=kind in (BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT),
                                  outgoing=result if kind in (BACKWARD, BACKWARD_INPUT) else None)
        if kind == FORWARD:
            if send is None:  # the loss, a float once the step is over (_record_losses)
                self._losses.setdefault(step, {})[mb_in_step] = result
            else:
                self._send(step, mb_in_step, mailbox, result, *send)
            if stage.versioned:
                stage.note_versions()
        elif kind == UPDATE:
            self.record.peak_stashed_bytes = max(self.record.peak_stashed_bytes,
                                                 sum(st.stashed_bytes() for st in self.stages.values()))
        elif send is not None:  # B or I
            self._send(step, mb_in_step, mailbox, result, *send)

    def _reduce(self, step: int, stage_index: int) -> None:
        """R: this stage's gradients averaged over its replicas. On the device clock it starts
        when the group's last member gets there (after the whole pipeline's flush when the
        schedule says so, a message's link later) and lasts the collective's measured cost."""
        self._settle_host()
        wall_start = wall_now()
        self._waiting(step, ALL_RANKS)
        if self.schedule.reduce_at_flush and self._flushed_step != step:
            self._flushed_step = step
            latest = self.reduce.latest(self.clock, pipeline=True)
            if latest > self.clock:  # another stage finished last: its word takes a link's time
                self.clock = latest + self.link_cost
        self.clock = start = self.reduce.latest(self.clock)  # the wait before it is idle, as a receive's
        stage = self.stages[stage_index]
        if stage.versioned:  # PipeDream's replicated stage: the round's gradients wait in its stash's accumulator
            self.reduce.average_named(stage.grad_accum, stage.weights)
        else:
            self.reduce.average(stage.module)
        self._waiting(step, NOT_WAITING)
        self.clock += self.reduce.cost_s[stage_index]
        self._last_action = self._event(step, stage_index, REDUCE_GRAD, 0, start, self.clock, wall_start, wall_now())
        self.host.start()

    def _update(self, step: int, stage_index: int, mb_in_step: int = 0, stream_mb: int = 0,
                scale: float | None = 1.0) -> None:
        """U of a stage at ``scale`` (a step check's: engine/runtime/post_validation.py)."""
        self._act((UPDATE, stage_index, self.stages[stage_index], stream_mb, mb_in_step, None, scale), step, None)

    def _capture_grads(self, stage_index: int, stage: Stage) -> None:
        """Keep ``capture_step``'s gradients of a stage before its update (--check)."""
        self._settle_host()  # a copy for the check, not the engine's work
        self.captured_grads.update(_stage_grads(stage_index, stage))
        self.host.start()

    def _record_losses(self) -> None:
        """Move the steps' micro-batch losses (last stage only) into the record, by step. A
        loss is kept as its tensor until here: reading its value right after the forward took
        microseconds between two actions. The caller runs this before the step's last
        _settle_host, so the reading is still the step's own time (the last action's host_after)."""
        for step in sorted(self._losses):
            losses = self._losses.pop(step)
            ordered = [float(losses[j]) for j in sorted(losses)]
            self.record.microbatch_losses.append(ordered)
            self.record.losses.append(sum(ordered) / len(ordered))

    # ---- steps with barriers -----------------------------------------------------------
    def run_step(self, step: int) -> None:
        """One step of the schedule, started together with every other device (a flush and
        a barrier before it); the update follows in finish_step."""
        if self._step_plan is None:
            self._step_plan = self._plan(self.schedule.actions[self.rank], None)
        program = self._step_plan
        self._prefetch(step, 0)
        # Every step starts together on the device clock, as after a flush and barrier.
        self._start_together(step)
        cpu_start = time.process_time()
        mailbox = self._mailbox = Mailbox(self.rank, self.messages, self.shape_of, self.transport)
        total = len(program)
        act, report = self._act, self._report
        for index, plan in enumerate(program, 1):
            act(plan, step, mailbox)
            if self._last_wall >= self._next_report:
                report(step, index, total)
        if self._losses:  # only the last stage's rank has any: elsewhere the call was the step's host time for nothing
            self._record_losses()
        self._settle_host()
        mailbox.finish()
        self._count_messages(mailbox)
        self.record.cpu_seconds.append(time.process_time() - cpu_start)
        if self.schedule.is_async:  # its updates were in the program: the step is over
            self._close_step(step)

    def _close_step(self, step: int) -> None:
        """After the rank's last action of a barrier step (its last optimizer step U, or an
        asynchronous schedule's last action): count what its last actions queued and report the
        step done. Nothing of the step follows, so this is between two steps, as the garbage
        collection and the next step's data are (engine/runtime/worker.py play_step): outside
        every action and off the device clock, which the next step's barrier starts anew at the
        latest rank's (_start_together). The memory curve is the same: each sample keeps its
        action's end (ActivationTracker.replay). Counted inside the step, this was the last
        action's host_after: 1F1B's largest gap without a send (bench/EXECUTOR.md at 83f8f24)."""
        self.host.take()  # stopped uncounted: what follows is no action's host time
        self.tracker.replay()
        total = len(self._step_plan)
        self._report(step, total, total)

    def _start_together(self, step: int) -> None:
        self.host.take()
        self._last_action = None
        start = torch.tensor([self.clock], dtype=torch.float64, device=self.device.torch_device)
        self._waiting(step, ALL_RANKS)
        dist.all_reduce(start, op=dist.ReduceOp.MAX)
        self._waiting(step, NOT_WAITING)
        self.clock = float(start.item())
        self.tracker.sample(self.clock)

    def _count_messages(self, mailbox: Mailbox) -> None:
        self.record.messages_sent += mailbox.sent
        self.record.bytes_sent += mailbox.bytes_sent

    def finish_step(self, step: int) -> None:
        """Synchronous schedules update once, after the flush; with a step check, after the
        global gradient state is all-reduced (engine/runtime/post_validation.py)."""
        if self.schedule.is_async:
            return
        scale = 1.0 if self.step_check is None else self._reduced_scale(step)
        for stage_index in self.stages:
            self._update(step, stage_index, scale=scale)
        self._close_step(step)

    # ---- overlapping steps -------------------------------------------------------------
    def run_stream(self, on_step=None) -> None:
        """Every step of the run as one stream (engine/schedules/stream.py): no barrier between steps;
        this rank turns to step k+1 when its own program does. ``on_step(k)`` is called as
        the rank turns to step k (the launcher's fault injection)."""
        stream = self.stream
        program = stream.program.actions[self.rank]
        starts = stream.step_starts(self.rank)
        bounds = starts[1:] + [len(program)]
        m = stream.microbatches_per_step
        plans = self._plan(program, m)
        mailbox = self._mailbox = Mailbox(self.rank, self.messages, self.shape_of, self.transport)
        checked = self.step_check is not None
        last_update, verdict_at = stream.check_points(self.rank)
        self._start_together(0)  # the run starts together; its steps do not
        step, cpu_start, index, validated = -1, 0.0, 0, set()
        while index < len(program):
            a = program[index]
            if step + 1 < stream.steps and index == starts[step + 1]:
                if step >= 0:
                    self.record.cpu_seconds.append(time.process_time() - cpu_start)
                step += 1
                self._turn_to(step, m, on_step)
                cpu_start = time.process_time()
            if checked and index in verdict_at and verdict_at[index] not in validated:
                validated.add(verdict_at[index])
                if self._take_verdict(verdict_at[index]):
                    self.record.steps_replayed.append(step)
                    self._replay_step(step, mailbox, m)
                    index = starts[step]
                    continue
            action_step, mb_in_step = divmod(a.microbatch, m)
            if checked and a.kind == UPDATE:
                self._checked_update(action_step, a.stage, mb_in_step, a.microbatch, index, last_update)
            else:
                self._act(plans[index], action_step, mailbox)
            self._report(step, index + 1 - starts[step], bounds[step] - starts[step])
            index += 1
        if checked and stream.steps - 1 not in validated:
            self._take_verdict(stream.steps - 1)  # the last step: nothing after it to replay
        self._record_losses()
        self.tracker.replay()
        self._settle_host()
        mailbox.finish()
        if checked:
            self.step_check.chain.finish()
        self._count_messages(mailbox)
        self.record.cpu_seconds.append(time.process_time() - cpu_start)

    def _turn_to(self, step: int, m: int, on_step) -> None:
        """Between two steps of this rank: collect garbage and make the step's data, outside
        the device clock as between barrier steps (engine/runtime/worker.py). The step's
        queued accounting is counted first, in the step (the last action's host_after)."""
        self.tracker.replay()
        self._settle_host()
        if on_step is not None:
            on_step(step)
        if step > 0:
            gc.collect()
        self._prefetch(step, step * m)
        self.host.start()

    def parameters(self) -> dict[str, torch.Tensor]:
        """Every local parameter's current value, named as captured_grads names gradients."""
        return {f"{s}.{n}": p.detach().clone() for s, stage in self.stages.items()
                for n, p in stage.module.named_parameters()}

    def summarize(self) -> RankRecord:
        self.tracker.replay()
        r = self.record
        rank, origin = self.rank, self.wall_origin
        r.events = [Event.from_row(rank, row, origin) for row in self.events]
        r.memory = self.tracker.samples
        r.peak_activation_bytes = self.tracker.peak
        r.activation_bytes = {s: st.activation_bytes for s, st in self.stages.items()}
        r.weight_grad_bytes = {s: st.weight_grad_bytes for s, st in self.stages.items()}
        r.parameter_bytes = sum(st.parameter_bytes() for st in self.stages.values())
        r.gradient_bytes = r.parameter_bytes  # one gradient per parameter, accumulated in place
        r.optimizer_bytes = sum(st.optimizer_bytes() for st in self.stages.values())
        r.weight_versions = max(st.peak_versions for st in self.stages.values())
        r.message_buffer_bytes = getattr(self.transport, "buffer_bytes", None)
        if self.cuda_memory is not None:
            r.cuda_peak_bytes, r.cuda_breakdown = self.cuda_memory.finish()
        return r


def _planned(key, peer: int, shape_of) -> tuple:
    """(message key, the peer it goes to or comes from, its bytes): float32 elements of its
    planned shape, as every transport carries a message (engine/runtime/transport.py), asked of
    no tensor per message (a tensor's numel() took microseconds between two actions)."""
    return key, peer, math.prod(message_shape(key, shape_of)) * 4


def _stage_grads(stage_index: int, stage: Stage) -> dict[str, torch.Tensor]:
    """Current .grad of a stage's parameters, named "stage.parameter"."""
    return {f"{stage_index}.{name}": p.grad.detach().clone() for name, p in stage.module.named_parameters()
            if p.grad is not None}


def measure_link_cost(rank: int, world: int, shape: tuple, device: torch.device, transport,
                      rounds: int = 40) -> float:
    """One-way time of a stage-boundary message between ranks 0 and 1 over the run's own
    transport, measured once per run by ping-pong; the minimum over rounds, as contention
    only ever adds to it. Rounds are cheap (tens of microseconds each), and on a busy host a
    round often waits for a core at one end: with few rounds, every one of them had and the
    minimum came out tens of times a message's cost."""
    if world < 2:
        return 0.0
    payload = torch.zeros(shape, device=device)
    best = float("inf")
    for _ in range(rounds):
        if rank == 0:
            sent_at = time.perf_counter()
            transport.isend(payload, 0.0, 1).wait()
            transport.irecv(shape, 1).wait()
            best = min(best, (time.perf_counter() - sent_at) / 2)
        elif rank == 1:
            transport.irecv(shape, 0).wait()
            transport.isend(payload, 0.0, 0).wait()
    cost = torch.tensor([best if rank == 0 else 0.0], dtype=torch.float64, device=device)
    dist.broadcast(cost, 0)
    return float(cost.item())
