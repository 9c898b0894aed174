"""The executor's side of the step check (engine/runtime/post_validation.py): what a rank does at
its updates and when a verdict comes, with barriers or with overlapping steps.

A mixin of pipelab.engine.runtime.executor.Executor, kept apart so the executor's own loop stays short:
these methods use its clock, stages, status reports and record.
"""

from __future__ import annotations

import torch.distributed as dist

from pipelab.engine.results.timeline import ROW_STEP
from pipelab.engine.runtime.comm import Mailbox
from pipelab.engine.runtime.post_validation import GradState, grad_state, reduce_across_ranks, scale_for
from pipelab.engine.runtime.status import ALL_RANKS, NOT_WAITING


class StepCheckSteps:
    def _reduced_scale(self, step: int) -> float | None:
        """Steps with barriers: the global state by one all-reduce after the flush."""
        local = GradState()
        for stage_index, stage in self.stages.items():
            self._inject(step, stage_index)
            local = local + grad_state(stage.grad_parameters())
        self._settle_host()
        self._waiting(step, ALL_RANKS)
        verdict = reduce_across_ranks(local, self.device.torch_device)
        self._waiting(step, NOT_WAITING)
        self.host.start()
        return self._note_verdict(step, verdict)

    def _inject(self, step: int, stage_index: int) -> None:
        """RunConfig.inject_nonfinite: a NaN in the last stage's first gradient."""
        if self.step_check.inject_step == step and stage_index == self.schedule.num_stages - 1:
            grad = next(p.grad for p in self.stages[stage_index].grad_parameters() if p.grad is not None)
            grad.view(-1)[0] = float("nan")

    def _note_verdict(self, step: int, verdict: GradState) -> float | None:
        scale = scale_for(verdict, self.step_check.clip)
        if scale is None:
            self.record.steps_skipped.append(step)
        elif scale != 1.0:
            self.record.steps_clipped.append(step)
        return scale

    def _checked_update(self, step: int, stage_index: int, mb_in_step: int, stream_mb: int, index: int,
                        last_update: dict) -> None:
        """U of stage ``stage_index`` in a stream with a step check: optimistic unless what this
        rank knows already decides; the rank's last U of the step passes the partial state on."""
        stage, chain = self.stages[stage_index], self.step_check.chain
        self._inject(step, stage_index)
        state = self._local.get(step, GradState()) + grad_state(stage.grad_parameters())
        known = None
        if index == last_update[step]:
            self._local.pop(step, None)
            partial, stamp = self._exchange(step, chain.partial_in, self.rank - 1)
            state = partial + state
            if self.rank == chain.world - 1:
                known = state  # the whole pipeline's: the verdict
        else:
            self._local[step] = state
        if known is not None:
            scale = scale_for(known, self.step_check.clip)
        elif state.nonfinite:
            scale = None  # a NaN so far: the step is skipped, whatever comes after
        else:
            scale = 1.0  # optimistic: clipping and NaN are rare (arXiv 2401.10241, section 4)
            stage.snapshot()
            self._optimistic.setdefault(step, []).append(stage_index)
        state = GradState(state.sum_of_squares, state.nonfinite, state.optimistic or bool(self._optimistic.get(step)))
        if index == last_update[step]:
            if known is not None:
                self._verdicts[step] = state
                chain.verdict_out(state, self.clock)
            else:
                chain.partial_out(state, self.clock)
        self._update(step, stage_index, mb_in_step, stream_mb, scale=scale)

    def _exchange(self, step: int, receive, src: int) -> tuple[GradState, float]:
        """A step-check message, waited for like a pipeline message: the clock moves to its
        stamp plus the link cost."""
        self._settle_host()
        if src < 0:
            state, _ = receive()
            return state, self.clock
        self._waiting(step, src)
        state, stamp = receive()
        self._waiting(step, NOT_WAITING)
        self.clock = max(self.clock, stamp + self.link_cost)
        return state, stamp

    def _take_verdict(self, step: int) -> bool:
        """Step ``step``'s verdict, taken and passed on; redo what was updated wrongly.
        Returns whether the next step's start must be replayed (its forwards used weights
        that changed)."""
        chain = self.step_check.chain
        if self.rank == chain.world - 1:
            verdict = self._verdicts.pop(step)
        else:
            verdict, _ = self._exchange(step, chain.verdict_in, self.rank + 1)
            chain.verdict_out(verdict, self.clock)
        scale = self._note_verdict(step, verdict)
        wrong = self._optimistic.pop(step, [])
        if scale == 1.0 or not verdict.optimistic:
            for stage_index in wrong:
                self.stages[stage_index].forget_snapshot()
            return False
        for stage_index in wrong:  # roll back and redo (or drop) the update, on the device clock
            self._settle_host()
            self.stopwatch.start()
            self.stages[stage_index].redo(scale)
            self.clock += self.stopwatch.stop()
            self.host.start()
        return True

    def _replay_step(self, step: int, mailbox: Mailbox, m: int) -> None:
        """After a rollback, start ``step`` again on every rank: its forwards so far used the
        wrong weights. Rare (a clipped or skipped step), so a collective is fine here: every
        rank tells how many messages it sent, takes and drops those of the step, forgets the
        step's forwards, and all start it again together on the device clock."""
        self._settle_host()
        self._waiting(step, ALL_RANKS)
        sent = [None] * self.step_check.chain.world
        dist.all_gather_object(sent, mailbox.sent_to)
        mailbox.rewind(step * m, {src: counts.get(self.rank, 0) for src, counts in enumerate(sent)
                                  if src != self.rank})
        self._waiting(step, NOT_WAITING)
        for stream_mb in range(step * m, (step + 1) * m):
            for stage in self.stages.values():
                stage.discard(stream_mb)
            self._inputs.pop(stream_mb, None)
            self._targets.pop(stream_mb, None)
        self._losses.pop(step, None)
        self.events = [row for row in self.events if row[ROW_STEP] != step]
        self._prefetch(step, step * m)
        self._start_together(step)
        self.host.start()
