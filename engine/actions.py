"""Pipeline actions: the unit every schedule is made of.

A schedule is data (the idea of `_Action` in torch.distributed.pipelining): for each rank,
an ordered list of actions. `Action(stage=1, kind="F", microbatch=3)` prints as ``1F3`` and
``Action.parse("1F3")`` gives it back, so schedules can be written, read and diffed as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from pipelab.engine.errors import Message


class ActionKind(StrEnum):
    """What an action computes. A str enum: ``ActionKind.FORWARD == "F"``, it prints and
    serializes (JSON, traces) as its letter, and plain letters work wherever a kind goes."""

    FORWARD = "F"
    BACKWARD = "B"
    """A full backward."""
    # I and W are B's two halves as zero bubble splits them (arXiv 2401.10241, section 2):
    # I computes the input gradient (the previous stage waits for it), W the weight gradient
    # (needed only by the optimizer step).
    BACKWARD_INPUT = "I"
    BACKWARD_WEIGHT = "W"
    UPDATE = "U"
    """This stage's optimizer step, applying the gradient accumulated up to this micro-batch.
    Synchronous schedules update once after the flush and carry no U; PipeDream updates after
    every backward (arXiv 1806.03377) and 2BW once per p micro-batches (arXiv 2006.09503)."""
    REDUCE_GRAD = "R"
    """This stage's gradients averaged over its data-parallel replicas (an all-reduce in the
    stage's group), once per step after the stage's last backward: torch.distributed.pipelining's
    REDUCE_GRAD. Written with micro-batch 0 ("2R0"): it covers every micro-batch of the step.
    Only runs with data parallelism (RunConfig.data_parallel > 1) carry it
    (engine/schedules/data_parallel.py)."""


FORWARD = ActionKind.FORWARD
BACKWARD = ActionKind.BACKWARD
BACKWARD_INPUT = ActionKind.BACKWARD_INPUT
BACKWARD_WEIGHT = ActionKind.BACKWARD_WEIGHT
UPDATE = ActionKind.UPDATE
REDUCE_GRAD = ActionKind.REDUCE_GRAD

KINDS = tuple(ActionKind)
# Kinds that end a micro-batch's backward on a stage: after them the stage's input gradient
# exists and can be sent to the previous stage.
INPUT_GRAD_KINDS = (BACKWARD, BACKWARD_INPUT)

_PATTERN = re.compile(rf"^\s*(\d+)\s*([{''.join(KINDS)}])\s*(\d+)\s*$")


class ScheduleError(ValueError):
    """A schedule, or a parameter of one, breaks a rule; the message names the rule. Raised
    with a coded ``Message`` (engine/errors.py), a page can say it in its own language."""

    @classmethod
    def of(cls, code: str, /, **values) -> "ScheduleError":
        return cls(Message.of(code, **values))


@dataclass(frozen=True, order=True)
class Action:
    stage: int
    """Pipeline stage (model chunk) index, 0 is the one holding the input layer."""
    kind: ActionKind
    """One of F, B, I, W, U; a plain letter is turned into its ActionKind."""
    microbatch: int
    """Micro-batch index within the step, from 0."""

    def __post_init__(self) -> None:
        if type(self.kind) is not ActionKind:  # a plain letter: the builders pass the kind itself
            if self.kind not in KINDS:
                raise ScheduleError.of("unknown_kind", got=repr(self.kind), valid=tuple(KINDS))
            object.__setattr__(self, "kind", ActionKind(self.kind))  # frozen: the one normalizing write
        if self.stage < 0 or self.microbatch < 0:
            raise ScheduleError.of("negative_index", stage=self.stage, microbatch=self.microbatch)

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.microbatch}"

    @classmethod
    def parse(cls, text: str) -> "Action":
        """Parse ``"1F3"`` (stage, kind, micro-batch) back into an Action."""
        match = _PATTERN.match(text)
        if not match:
            raise ScheduleError.of("bad_action", got=repr(text), valid="".join(KINDS))
        return cls(int(match.group(1)), match.group(2), int(match.group(3)))


def F(stage: int, microbatch: int) -> Action:
    return Action(stage, FORWARD, microbatch)


def B(stage: int, microbatch: int) -> Action:
    return Action(stage, BACKWARD, microbatch)


def I(stage: int, microbatch: int) -> Action:  # noqa: E743 - the paper's letter
    return Action(stage, BACKWARD_INPUT, microbatch)


def W(stage: int, microbatch: int) -> Action:
    return Action(stage, BACKWARD_WEIGHT, microbatch)


def U(stage: int, microbatch: int) -> Action:
    return Action(stage, UPDATE, microbatch)


def R(stage: int) -> Action:
    return Action(stage, REDUCE_GRAD, 0)
