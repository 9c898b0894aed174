"""Which chunk counts v (model chunks per rank) a schedule builder takes.

Most schedules place one stage per rank (v = 1). Megatron's interleaved 1F1B takes any
v >= 1 (arXiv 2104.04473, section 2.2); the V-shaped ones (ZB-V, DualPipeV) exactly 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.errors import Message


@dataclass(frozen=True)
class FixedChunks:
    """Exactly ``count`` chunks per rank."""

    count: int = 1

    @property
    def default(self) -> int:
        return self.count

    @property
    def takes_chunks(self) -> bool:
        """Whether the chunk count is a knob for this schedule: a student sets v (> 1)."""
        return self.count > 1

    def accepts(self, v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v == self.count

    def describe(self) -> str:
        return str(self.count)

    def resolve(self, v: int) -> int:
        """The v the schedule is built with when a student asks for ``v``: its only one."""
        return self.count


@dataclass(frozen=True)
class AnyChunks:
    """Any v >= 1; ``default`` when the caller names none."""

    default: int = 2

    takes_chunks = True

    def accepts(self, v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    def describe(self) -> Message:
        return Message.of("any_chunks")

    def resolve(self, v: int) -> int:
        """The v the schedule is built with when a student asks for ``v``: that one."""
        return v if self.accepts(v) else self.default


ChunkRule = FixedChunks | AnyChunks
"""What a builder declares with ``register(..., chunks=...)``."""

ONE_CHUNK = FixedChunks(1)
"""One stage per rank: the default."""
