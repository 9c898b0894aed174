"""The registry: every schedule by name, with what the rest of PipeLab needs to know about it.

A schedule module registers its builder with ``@register(...)``; engine/schedules/__init__.py
imports every module of the package, so a new file is all a new schedule takes. Everything
that lists or builds schedules reads this registry: ``pipelab list``, the simulator
and the executor (through ``build_schedule``), the closed forms (``pipelab.engine.theory.formulas``), the
lessons' and the playground's pickers (``lessons.SCHEDULES``), the benchmarks and the errors
that name the valid schedules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from types import MappingProxyType

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules.base import Schedule, check_counts
from pipelab.engine.schedules.chunks import ONE_CHUNK, ChunkRule
from pipelab.engine.schedules.costs import UNIT_PASS_COSTS, PassCosts
from pipelab.engine.theory.schedule_theory import ScheduleTheory

CUSTOM = "custom"
"""The name of a schedule written by hand (RunConfig.custom_schedule, a CSV imported from torch):
never a registered one, so every place that tells the two apart compares with this."""

Builder = Callable[[int, int, int], Schedule]
"""(ranks p, micro-batches m, chunks v) -> Schedule; pure, no torch. A builder registered
with ``takes_costs=True`` is also given ``costs=PassCosts`` (engine/schedules/costs.py)."""


@dataclass(frozen=True, kw_only=True)
class ScheduleInfo:
    name: str
    build: Builder
    summary: Mapping[str, str]
    """Language ("en", "zh") -> one line: what the schedule does. The pages, the recap and
    ``pipelab list`` (English) say it from here, not from the catalogs."""
    constraint: Mapping[str, str]
    """Language -> what it refuses or gives up, in a few words ("m % p == 0", "none"): the
    recap's constraints column."""
    paper: str
    """Where it comes from (paper, arXiv ID and section)."""
    synchronous: bool = True
    """False when stages update inside the step (PipeDream, 2BW): stale weights, no --check."""
    chunks: ChunkRule = ONE_CHUNK
    """The chunk counts v the builder takes."""
    theory: ScheduleTheory
    """Its closed forms (bubble, memory), where the papers give them; NO_THEORY, said
    explicitly, where they give none."""
    order: int = 1000
    """Position in every list (pickers, ``pipelab list``, tables): lower first, ties by
    registration. The built-in schedules use 10 to 100."""
    takes_costs: bool = False
    """True when the order depends on the pass costs (ZB-H2 at real costs, ZB-1p/2p):
    ``build_schedule`` then passes ``costs``, unit costs unless given."""
    label: str = ""
    """How a sentence or a table names it ("1F1B", "DualPipeV"), the same in every language;
    its registered name when empty (``schedule_label``)."""
    torch_class: str | None = None
    """The class in torch.distributed.pipelining.schedules that ships the same order
    ("ScheduleGPipe"), or None: tests/test_torch_csv.py compares the two for every schedule
    that names one."""
    _seq: int = field(default=0, repr=False, compare=False)


REGISTRY: dict[str, ScheduleInfo] = {}
"""Name -> ScheduleInfo, kept in list order (``ScheduleInfo.order``)."""

_registrations = count()


def register(name: str, *, summary: Mapping[str, str], constraint: Mapping[str, str], paper: str,
             theory: ScheduleTheory, synchronous: bool = True, chunks: ChunkRule = ONE_CHUNK, order: int = 1000,
             takes_costs: bool = False, label: str = "",
             torch_class: str | None = None) -> Callable[[Builder], Builder]:
    """Decorator: make the builder the schedule ``name``. Registering a name twice is an error
    (unregister it first): two files claiming one name would make the listing depend on
    import order. ``summary`` and ``constraint`` map each course language to its text
    (tests/test_schedule_contract.py checks every language is there); ``theory`` has no
    default, so a schedule without closed forms says ``NO_THEORY`` rather than forgets it."""
    if not name or name == CUSTOM or any(c.isspace() for c in name):
        raise ScheduleError(f"schedule name must be non-empty, without spaces and not {CUSTOM!r}, got {name!r}")

    def wrap(fn: Builder) -> Builder:
        if name in REGISTRY:
            raise ScheduleError(f"schedule {name!r} is already registered (by {REGISTRY[name].build.__module__})")
        info = ScheduleInfo(name=name, build=fn, summary=MappingProxyType(dict(summary)),
                            constraint=MappingProxyType(dict(constraint)), paper=paper, synchronous=synchronous,
                            chunks=chunks, theory=theory, order=order, takes_costs=takes_costs,
                            label=label, torch_class=torch_class, _seq=next(_registrations))
        listed = sorted([*REGISTRY.values(), info], key=lambda i: (i.order, i._seq))
        REGISTRY.clear()
        REGISTRY.update((i.name, i) for i in listed)
        return fn
    return wrap


def unregister(name: str) -> None:
    """Remove a schedule (tests, plugins); unknown names are an error."""
    get_schedule_info(name)
    del REGISTRY[name]


def get_schedule_info(name: str) -> ScheduleInfo:
    if name not in REGISTRY:
        raise ScheduleError.of("unknown_schedule", got=repr(name), valid=tuple(REGISTRY))
    return REGISTRY[name]


class RegisteredNames(Sequence[str]):
    """A live, read-only view of the registered names in list order: it sees schedules
    registered after it was made, so ``lessons.SCHEDULES`` needs no edit for a new one."""

    def __getitem__(self, index):
        return tuple(REGISTRY)[index]

    def __len__(self) -> int:
        return len(REGISTRY)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(REGISTRY))

    def __contains__(self, name: object) -> bool:
        return name in REGISTRY

    def __repr__(self) -> str:
        return f"RegisteredNames{tuple(REGISTRY)!r}"


SCHEDULE_NAMES = RegisteredNames()
"""Every registered schedule's name, live."""


def chunked_schedules() -> tuple[str, ...]:
    """The schedules whose chunk count v is a knob (interleaved, zb-v, dualpipev, ...)."""
    return tuple(name for name, info in REGISTRY.items() if info.chunks.takes_chunks)


def chunks_for(name: str, asked: int | None = None) -> int:
    """The one answer to "how many chunks v does schedule ``name`` run with when ``asked`` is asked
    for": ``asked`` itself where the schedule takes it, else its only count (2 for a V, 1 for most);
    its default for None. Every caller (RunConfig's checks, the lessons' knobs, the pages' notes,
    the recap, the theory tables) asks here; whether a refused v is an error is the caller's to say."""
    rule = get_schedule_info(name).chunks
    return rule.default if asked is None else rule.resolve(asked)


def schedule_label(name: str) -> str:
    """How pages and sentences name schedule ``name``: its registered ``label``, else the name
    itself (also for CUSTOM and a name no longer registered, as a stored run may hold)."""
    info = REGISTRY.get(name)
    return info.label or name if info is not None else name


def torch_classes() -> dict[str, str]:
    """Our schedule -> the torch class that ships the same order, for each that declares one."""
    return {name: info.torch_class for name, info in REGISTRY.items() if info.torch_class}


def cost_aware_schedules() -> tuple[str, ...]:
    """The schedules whose order depends on the pass costs (ScheduleInfo.takes_costs)."""
    return tuple(name for name, info in REGISTRY.items() if info.takes_costs)


def build_schedule(name: str, ranks: int, microbatches: int, chunks: int | None = None,
                   costs: PassCosts | None = None) -> Schedule:
    """Build a registered schedule; errors name the broken constraint. ``costs`` reach only
    a builder registered with ``takes_costs`` (unit costs when None); the others ignore them."""
    info = get_schedule_info(name)
    check_counts(ranks, microbatches)
    rule = info.chunks
    v = rule.default if chunks is None else chunks
    if not rule.accepts(v):
        raise ScheduleError.of("chunks_rule", schedule=name, rule=rule.describe(), got=v)
    if info.takes_costs:
        return info.build(ranks, microbatches, v, costs=UNIT_PASS_COSTS if costs is None else costs)
    return info.build(ranks, microbatches, v)
