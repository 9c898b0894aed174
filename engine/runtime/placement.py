"""Pinned ranks: each rank of a launch on a physical core of its own, where the host has one for
every rank and one more for the gradient check's one-process reference run.

Why: on a many-core host (often a virtual machine whose CPUs are hyperthreads) the scheduler
moves unpinned ranks between cores and puts two on one core's siblings from one moment to
the next, so neighbouring steps of one launch run at different speeds (issue 45: step ratios
spread 0.09-0.12 over three clicks on a 16-core host where a 2-core host gives 0.044 over
twenty). A pinned rank keeps its core, with its hyperthread siblings (nobody else's).

The rule (``plan``): a launch of M ranks is pinned when the physical cores it may use (this
process's affinity: what a container's cpuset or a Ray worker was given) that no other launch
on the host holds number at least M + 1: rank r on the r-th free core, the reference on the
rest. With fewer, nothing changes: the OS places the ranks, as before pinning existed, and
the device clock (thread CPU time) stays the fair clock. ``PIPELAB_PIN`` (``pin_mode``): "0"
never pins; "ranks" pins from M cores, the reference sharing the ranks' cores after their
steps (a 2-core host's p = 2; bench/pinning.py); "1", the default, is the rule above.

A pinned rank with a core to spare on the host (the reference's: pinned by the rule above)
waits for a shared-memory message by polling before it sleeps (``poll_seconds``,
engine/runtime/transport.py SharedMemoryTransport.take): a sleeping receiver is woken tens of
microseconds late, and waking it costs its sender CPU time (bench/WAKE.md). Without a core to
spare it sleeps: a poll takes CPU that the rest of the host (the launcher, torch's helper
threads, perhaps a hyperthread sibling outside a virtual machine's view) would then take from a
computing rank, and on this project's 2-core hosts, ranks pinned at p = 2 that polled steadied
the lessons' step ratios in one run of bench/wake.py and unsteadied them in another.
``PIPELAB_POLL`` (``poll_mode``): "auto", the default, as just said; "0" never polls; "1" polls
wherever ranks are pinned.

Only CPU runs are pinned. A GPU run's device clock is CUDA events, which the core its rank runs
on does not move, while one core each would squeeze the CUDA runtime's, NCCL's and torch's own
threads onto it and, under torchrun, ignore which NUMA node each GPU hangs off (torchrun's
``--numa-binding`` knows). The launcher decides before any rank imports torch (``expects_gpu``).

Launches on one host (a server's concurrent runs, Ray tasks on one node) each claim their
cores with a lock file per core (``claim``), held until the launch ends; the OS drops a
dead launcher's locks. Under torchrun every process knows only its local rank: it pins
itself by LOCAL_RANK among LOCAL_WORLD_SIZE (``pin_local_rank``), without claims.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from pipelab.engine.config import ConfigError
from pipelab.engine.errors import Message
from pipelab.engine.results.records import Placement

SYSFS_CPUS = "/sys/devices/system/cpu"
PIN_ENV = "PIPELAB_PIN"
PIN_MODES = {"0": "off", "1": "auto", "ranks": "ranks"}
"""PIPELAB_PIN's values and what each means (module docstring); unset is "1"."""
POLL_ENV = "PIPELAB_POLL"
POLL_MODES = {"auto": "auto", "0": "off", "1": "on"}
"""PIPELAB_POLL's values (module docstring); unset is "auto"."""
RANK_POLLS_ENV = "PIPELAB_RANK_POLLS"
"""Set in a rank's process whose launch polls for messages (``poll_seconds``)."""
POLL_S = 0.005
"""How long a polling rank polls for a message before it sleeps: longer than most waits
inside a step of the lessons' and the command line's runs (bench/WAKE.md), so those never pay
a wake-up; a longer wait (a step's start, a slow peer) then sleeps as before, its core free."""
REFERENCE_ENV = "PIPELAB_REFERENCE_CPUS"
"""Set in a pinned rank's process: the CPUs its reference run goes to (``on_reference_cores``)."""
LOCK_FOLDER = os.path.join("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir(), "pipelab-cores")
"""Where launches claim cores: one folder per host, whatever TMPDIR a launcher has. Its lock
files stay (removing one while another launch opens it would let two hold one core); a lock
itself dies with the launch that held it."""


def pin_mode(env: dict | None = None) -> str:
    """"off", "auto" or "ranks", from PIPELAB_PIN (``_mode``)."""
    return _mode(env, PIN_ENV, PIN_MODES, "1")


def poll_mode(env: dict | None = None) -> str:
    """"auto", "off" or "on", from PIPELAB_POLL (``_mode``)."""
    return _mode(env, POLL_ENV, POLL_MODES, "auto")


def _mode(env: dict | None, name: str, modes: dict[str, str], unset: str) -> str:
    """What the variable ``name`` of ``env`` (the process's by default) says, by ``modes``; a value
    it does not know is a one-line ConfigError."""
    value = (os.environ if env is None else env).get(name, unset).strip()
    if value not in modes:
        raise ConfigError(Message.plain(f"{name} must be one of {', '.join(modes)}, got {value!r}"))
    return modes[value]


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """The kernel's CPU list format ("0-3,8,10-11") as its CPU numbers, in order."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus += range(int(first), int(last or first) + 1)
    return tuple(cpus)


def cpu_list_text(cpus: Iterable[int]) -> str:
    """CPU numbers as the kernel writes them: "0-3,8"."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def physical_cores(allowed: Iterable[int], sysfs: str = SYSFS_CPUS) -> list[tuple[int, ...]]:
    """The physical cores among the CPUs ``allowed``, each as its allowed CPUs (hyperthread
    siblings share a core), ordered by their first CPU. A core's siblings come from
    ``thread_siblings_list``, else from CPUs of equal (physical_package_id, core_id); a CPU
    with neither is a core of its own."""
    allowed = sorted(set(allowed))
    mine = set(allowed)
    core_of: dict[int, tuple] = {}
    for cpu in allowed:
        topology = os.path.join(sysfs, f"cpu{cpu}", "topology")
        siblings = _read(os.path.join(topology, "thread_siblings_list"))
        if siblings:
            core_of[cpu] = ("siblings", parse_cpu_list(siblings))
            continue
        package, core = _read(os.path.join(topology, "physical_package_id")), _read(os.path.join(topology, "core_id"))
        core_of[cpu] = ("ids", package, core) if package is not None and core is not None else ("alone", cpu)
    groups: dict[tuple, list[int]] = {}
    for cpu in allowed:
        groups.setdefault(core_of[cpu], []).append(cpu)
    cores = {tuple(c for c in cpus if c in mine) for cpus in groups.values()}
    return sorted(cores)


def expects_gpu(device: str, local_ranks: int, env: dict | None = None, dev: str = "/dev") -> bool:
    """Whether a run asking for ``device`` ("cpu", "cuda", "auto") with ``local_ranks`` processes on
    this host will run on GPUs, decided without torch (the launcher never imports it): "cuda"
    does; "auto" does where every local rank has a GPU of its own (engine/device.py
    choose_device's rule), the GPUs counted as NVIDIA's device files (``dev``/nvidia0, ...) that
    CUDA_VISIBLE_DEVICES leaves visible. Where this guesses wrong, the run is pinned or not as
    before GPU runs were told apart: never a failure."""
    if device != "auto":
        return device == "cuda"
    try:
        files = sum(1 for name in os.listdir(dev) if name.startswith("nvidia") and name[6:].isdigit())
    except OSError:
        return False
    visible = (os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES")
    if visible is not None:  # CUDA stops at the first entry it cannot use: "-1" hides every GPU
        entries = [entry.strip() for entry in visible.split(",")]
        listed = 0
        for entry in entries:
            if not entry or entry.startswith("-"):
                break
            listed += 1
        files = min(files, listed)
    return files >= local_ranks > 0


def allowed_cpus() -> tuple[int, ...] | None:
    """The CPUs this process may run on (its affinity), or None where the OS has no affinity call."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return None


def plan(cores: list[tuple[int, ...]], ranks: int, mode: str, scope: str = Placement.HOST,
         poll: str = "auto") -> Placement:
    """The placement of ``ranks`` ranks on the free physical ``cores`` (each its CPUs), by the
    rule in the module docstring: pinned from ranks + 1 cores ("auto") or ranks cores ("ranks",
    the reference then on the ranks' cores); never with "off". Pinned ranks poll for their
    messages with ``poll`` "on", or "auto" where the reference has a core of its own."""
    if mode == "off":
        return Placement(pinned=False, reason=Placement.OFF, cores=len(cores), ranks=ranks, scope=scope)
    need = ranks + (1 if mode == "auto" else 0)
    if len(cores) < need or ranks < 1:
        return Placement(pinned=False, reason=Placement.FEW_CORES, cores=len(cores), ranks=ranks, scope=scope)
    mine = cores[:need]
    rest = [cpu for core in cores[ranks:] for cpu in core]
    shared = not rest
    reference = tuple(cpu for core in mine for cpu in core) if shared else tuple(rest)
    return Placement(pinned=True, reason=Placement.SHARED_REFERENCE if shared else Placement.PINNED,
                     cores=len(cores), ranks=ranks, rank_cpus=tuple(mine[:ranks]), reference_cpus=reference,
                     scope=scope, polls=poll == "on" or (poll == "auto" and not shared))


@dataclass
class CoreClaim:
    """Cores this launch holds against other launches on the host: one locked file per core."""
    cores: list[tuple[int, ...]]
    files: list = field(default_factory=list)

    def release(self) -> None:
        for f in self.files:
            f.close()  # closing drops the lock
        self.files.clear()


def claim(cores: list[tuple[int, ...]], count: int, folder: str = LOCK_FOLDER) -> CoreClaim:
    """The first ``count`` cores of ``cores`` no other launch holds (fewer if there are not that
    many), each locked in ``folder`` (a file named by the core's first CPU); the caller releases
    them. Locks die with their process, so a killed launcher leaves none."""
    os.makedirs(folder, exist_ok=True)
    held = CoreClaim([])
    for core in cores:
        if len(held.cores) == count:
            break
        f = open(os.path.join(folder, f"core{core[0]}.lock"), "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another launch holds it
            f.close()
            continue
        held.cores.append(core)
        held.files.append(f)
    return held


@contextlib.contextmanager
def launch_placement(ranks: int, sysfs: str = SYSFS_CPUS, folder: str = LOCK_FOLDER,
                     gpu: bool = False) -> Iterator[Placement]:
    """The placement of a launch of ``ranks`` processes on this host, its cores held for as long
    as the block runs (the launch: engine/runtime/rank_processes.rank_group). ``gpu``: the ranks
    run on GPUs (``expects_gpu``), and are not pinned."""
    mode, poll = pin_mode(), poll_mode()
    allowed = allowed_cpus()
    if allowed is None:
        yield Placement(pinned=False, reason=Placement.UNSUPPORTED, cores=0, ranks=ranks)
        return
    cores = physical_cores(allowed, sysfs)
    if gpu:
        yield Placement(pinned=False, reason=Placement.GPU, cores=len(cores), ranks=ranks)
        return
    if mode == "off" or len(cores) < ranks + (mode == "auto"):
        yield plan(cores, ranks, mode)
        return
    need = ranks + (mode == "auto")
    held = claim(cores, need, folder)
    try:
        # Not pinned when other launches hold cores it would need: its record counts the free ones.
        yield plan(held.cores, ranks, mode, poll=poll)
    finally:
        held.release()


def run_pinned(target, cpus: tuple[int, ...], reference: tuple[int, ...], args, polls: bool = False) -> None:
    """A rank's process entry: pin it to ``cpus`` first, before torch starts any thread (every
    thread started later inherits the mask), note where its reference run goes and whether it
    polls for its messages (``poll_seconds``), then run ``target(args)``. Empty ``cpus``: not
    pinned."""
    if polls:
        os.environ[RANK_POLLS_ENV] = "1"
    else:  # whatever the forkserver inherited says nothing about this launch
        os.environ.pop(RANK_POLLS_ENV, None)
    if cpus:
        os.sched_setaffinity(0, cpus)
        os.environ[REFERENCE_ENV] = cpu_list_text(reference)
    else:  # not pinned: whatever the forkserver inherited says nothing about this launch
        os.environ.pop(REFERENCE_ENV, None)
    target(args)


def poll_seconds() -> float:
    """How long this rank polls for a message before it sleeps (engine/runtime/transport.py
    SharedMemoryTransport.take): POLL_S where its launch's placement polls (Placement.polls),
    else 0."""
    return POLL_S if os.environ.get(RANK_POLLS_ENV) == "1" else 0.0


@contextlib.contextmanager
def on_reference_cores() -> Iterator[None]:
    """Inside, a pinned rank runs on its launch's reference CPUs (the one-process check), back
    on its own core after; unpinned, nothing changes. Enter it before sizing torch's threads:
    pipelab.engine.config.usable_cores reads the affinity."""
    reference = os.environ.get(REFERENCE_ENV)
    if not reference or allowed_cpus() is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, parse_cpu_list(reference))
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def pin_local_rank(env: dict | None = None, sysfs: str = SYSFS_CPUS, device: str = "cpu") -> Placement:
    """Under torchrun: pin this process by LOCAL_RANK among LOCAL_WORLD_SIZE on its host (every
    local process reads the same topology and affinity, so they agree without talking), by the
    same rule, unless the run asks for a ``device`` whose ranks run on GPUs (``expects_gpu``).
    Returns this host's placement (rank 0's result records its host's)."""
    env = os.environ if env is None else env
    local_world = int(env.get("LOCAL_WORLD_SIZE", env.get("WORLD_SIZE", "1")))
    local_rank = int(env.get("LOCAL_RANK", env.get("RANK", "0")))
    allowed = allowed_cpus()
    if allowed is None:
        return Placement(pinned=False, reason=Placement.UNSUPPORTED, cores=0, ranks=local_world,
                         scope=Placement.PER_HOST)
    # Messages go through torch.distributed there (engine/runtime/transport.py): nothing to poll.
    cores = physical_cores(allowed, sysfs)
    if expects_gpu(device, local_world, env):
        return Placement(pinned=False, reason=Placement.GPU, cores=len(cores), ranks=local_world,
                         scope=Placement.PER_HOST)
    record = plan(cores, local_world, pin_mode(env), scope=Placement.PER_HOST, poll="off")
    if record.pinned:
        os.sched_setaffinity(0, record.rank_cpus[local_rank])
        os.environ[REFERENCE_ENV] = cpu_list_text(record.reference_cpus)
    return record
