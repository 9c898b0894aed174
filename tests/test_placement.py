"""Pinned ranks (engine/runtime/placement.py): the topology read from fake sysfs trees, the rule
that decides whether a launch pins, the claims that keep launches on one host apart, and (slow)
a real run's ranks on the cores its result records."""

from __future__ import annotations

import dataclasses
import os

import pytest

from pipelab.engine.config import ConfigError
from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.results.records import Placement
from pipelab.engine.runtime import placement as P
from tests.fake_results import fake_metrics


def fake_sysfs(root, cpus: dict[int, dict[str, str]]) -> str:
    """A /sys/devices/system/cpu tree: per CPU, its topology files' contents."""
    for cpu, files in cpus.items():
        folder = root / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text + "\n")
    return str(root)


def siblings(*lists: str) -> dict[int, dict[str, str]]:
    """Each CPU's thread_siblings_list, from the lists of its core (one string per core)."""
    return {cpu: {"thread_siblings_list": text} for text in lists for cpu in P.parse_cpu_list(text)}


def ids(*cores: tuple[int, int, int]) -> dict[int, dict[str, str]]:
    """(cpu, package, core_id) per CPU: no siblings list, the ids only."""
    return {cpu: {"physical_package_id": str(pkg), "core_id": str(core)} for cpu, pkg, core in cores}


#   case                                  tree                                   allowed       -> physical cores
TOPOLOGIES = [
    ("no hyperthreads",                      siblings("0", "1"),                    (0, 1),       [(0,), (1,)]),
    ("hyperthread pairs 0,2 and 1,3",        siblings("0,2", "1,3"),                (0, 1, 2, 3), [(0, 2), (1, 3)]),
    ("hyperthread pairs as a range",         siblings("0-1", "2-3"),                (0, 1, 2, 3), [(0, 1), (2, 3)]),
    ("affinity leaves out CPU 3",            siblings("0,2", "1,3"),                (0, 1, 2),    [(0, 2), (1,)]),
    ("affinity leaves out two cores",        siblings("0,4", "1,5", "2,6", "3,7"),  (0, 4, 3, 7), [(0, 4), (3, 7)]),
    ("core ids, no siblings list",           ids((0, 0, 0), (1, 0, 0), (2, 0, 1)),  (0, 1, 2),    [(0, 1), (2,)]),
    ("equal core ids on two packages",       ids((0, 0, 0), (1, 1, 0)),             (0, 1),       [(0,), (1,)]),
    ("no topology at all: each CPU alone",   {0: {}, 1: {}, 2: {}},                 (0, 1, 2),    [(0,), (1,), (2,)]),
]


@pytest.mark.parametrize("case, tree, allowed, cores", TOPOLOGIES, ids=[t[0] for t in TOPOLOGIES])
def test_physical_cores_from_sysfs(tmp_path, case, tree, allowed, cores):
    assert P.physical_cores(allowed, fake_sysfs(tmp_path, tree)) == cores


@pytest.mark.parametrize("text, cpus", [("0", (0,)), ("0-3", (0, 1, 2, 3)), ("0-1,8,10-11", (0, 1, 8, 10, 11)),
                                        ("", ())])
def test_the_kernel_cpu_list_format_both_ways(text, cpus):
    assert P.parse_cpu_list(text) == cpus
    assert P.cpu_list_text(cpus) == text


def cores_of(n: int, threads: int = 1) -> list[tuple[int, ...]]:
    """n physical cores of ``threads`` hyperthreads each, numbered as Linux does (siblings n apart)."""
    return [tuple(c + k * n for k in range(threads)) for c in range(n)]


#        free cores       ranks  mode      -> pinned  reason                      rank CPUs                 reference
RULE = [
    (cores_of(2),       2,     "auto",   False,   Placement.FEW_CORES,        (),                       ()),
    (cores_of(3),       2,     "auto",   True,    Placement.PINNED,           ((0,), (1,)),             (2,)),
    (cores_of(2),       2,     "ranks",  True,    Placement.SHARED_REFERENCE, ((0,), (1,)),             (0, 1)),
    (cores_of(1),       2,     "ranks",  False,   Placement.FEW_CORES,        (),                       ()),
    (cores_of(4),       4,     "auto",   False,   Placement.FEW_CORES,        (),                       ()),
    (cores_of(8, 2),    4,     "auto",   True,    Placement.PINNED,           ((0, 8), (1, 9), (2, 10), (3, 11)),
     (4, 12, 5, 13, 6, 14, 7, 15)),
    (cores_of(16),      4,     "off",    False,   Placement.OFF,              (),                       ()),
]


@pytest.mark.parametrize("cores, ranks, mode, pinned, reason, rank_cpus, reference", RULE)
def test_a_launch_pins_only_with_a_core_per_rank_and_one_for_the_reference(cores, ranks, mode, pinned, reason,
                                                                            rank_cpus, reference):
    got = P.plan(cores, ranks, mode)
    assert (got.pinned, got.reason, got.rank_cpus, got.reference_cpus) == (pinned, reason, rank_cpus, reference)
    assert (got.cores, got.ranks) == (len(cores), ranks)
    assert all(got.cpus_of(r) == (rank_cpus[r] if pinned else ()) for r in range(ranks))


#        free cores   ranks  PIPELAB_PIN  PIPELAB_POLL  -> its ranks poll for messages
POLLS = [
    (cores_of(3),   2,     "auto",      "auto",          True),   # pinned, the reference's core to spare
    (cores_of(2),   2,     "ranks",     "auto",          False),  # pinned, no core to spare: they sleep
    (cores_of(2),   2,     "ranks",     "on",            True),   # PIPELAB_POLL=1: wherever pinned
    (cores_of(2),   2,     "auto",      "on",            False),  # not pinned: ranks may share a core
    (cores_of(3),   2,     "auto",      "off",           False),  # PIPELAB_POLL=0
    (cores_of(16),  4,     "off",       "on",            False),  # PIPELAB_PIN=0
]


@pytest.mark.parametrize("cores, ranks, mode, poll, polls", POLLS)
def test_pinned_ranks_poll_for_messages_where_the_host_has_a_core_to_spare(cores, ranks, mode, poll, polls):
    assert P.plan(cores, ranks, mode, poll=poll).polls == polls


@pytest.mark.parametrize("polls, poll_s", [(True, P.POLL_S), (False, 0.0)])
def test_a_rank_polls_for_messages_only_where_its_placement_says(monkeypatch, polls, poll_s):
    monkeypatch.setenv(P.RANK_POLLS_ENV, "1")  # whatever the forkserver inherited says nothing about this launch
    seen = []
    P.run_pinned(lambda args: seen.append(P.poll_seconds()), (), (), None, polls)
    assert seen == [poll_s]


#   reads            variable        value    -> mode
SWITCHES = [
    (P.pin_mode,      "PIPELAB_PIN",  None,    "auto"),
    (P.pin_mode,      "PIPELAB_PIN",  "1",     "auto"),
    (P.pin_mode,      "PIPELAB_PIN",  "0",     "off"),
    (P.pin_mode,      "PIPELAB_PIN",  "ranks", "ranks"),
    (P.poll_mode,     "PIPELAB_POLL", None,    "auto"),
    (P.poll_mode,     "PIPELAB_POLL", "auto",  "auto"),
    (P.poll_mode,     "PIPELAB_POLL", "0",     "off"),
    (P.poll_mode,     "PIPELAB_POLL", "1",     "on"),
]


@pytest.mark.parametrize("reads, variable, value, mode", SWITCHES)
def test_pipelab_pin_and_poll_switch(reads, variable, value, mode):
    assert reads({} if value is None else {variable: value}) == mode


@pytest.mark.parametrize("reads, variable, takes", [(P.pin_mode, "PIPELAB_PIN", "0, 1, ranks"),
                                                   (P.poll_mode, "PIPELAB_POLL", "auto, 0, 1")])
def test_an_unknown_value_is_a_one_line_error(reads, variable, takes):
    with pytest.raises(ConfigError) as err:
        reads({variable: "yes"})
    assert f"{variable} must be one of {takes}, got 'yes'" in str(err.value) and "\n" not in str(err.value)


def test_two_launches_on_one_host_never_share_a_core(tmp_path, monkeypatch):
    """A server's concurrent runs (or Ray tasks on one node) claim their cores: with 5 cores the
    first launch of 2 ranks takes 3 (2 ranks + the reference), the second finds 2 free and is
    not pinned; once the first ends, its cores are free again."""
    monkeypatch.setenv("PIPELAB_PIN", "1")
    monkeypatch.setattr(P, "allowed_cpus", lambda: (0, 1, 2, 3, 4))
    sysfs, locks = fake_sysfs(tmp_path / "sys", siblings("0", "1", "2", "3", "4")), str(tmp_path / "locks")
    with P.launch_placement(2, sysfs, locks) as first:
        with P.launch_placement(2, sysfs, locks) as second:
            assert first.rank_cpus == ((0,), (1,)) and first.reference_cpus == (2,)
            assert (second.pinned, second.reason, second.cores) == (False, Placement.FEW_CORES, 2)
            assert first.polls and not second.polls  # the first has a core to spare, the second is not pinned
        with P.launch_placement(1, sysfs, locks) as third:
            assert third.rank_cpus == ((3,),) and third.reference_cpus == (4,)
    with P.launch_placement(2, sysfs, locks) as again:
        assert again.rank_cpus == ((0,), (1,))


def fake_dev(root, *names: str) -> str:
    """A /dev with these device files (empty files will do: only their names are read)."""
    root.mkdir()
    for name in names:
        (root / name).write_text("")
    return str(root)


#   device  local ranks  NVIDIA device files                      CUDA_VISIBLE_DEVICES  -> on GPUs
GPU_GUESSES = [
    ("cuda", 4,          (),                                      None,                 True),   # asked for: a GPU run
    ("cpu",  2,          ("nvidia0", "nvidia1"),                  None,                 False),  # asked for: a CPU run
    ("auto", 2,          ("nvidia0", "nvidia1", "nvidiactl"),     None,                 True),   # a GPU per rank
    ("auto", 4,          ("nvidia0", "nvidia1", "nvidiactl"),     None,                 False),  # too few: auto is cpu
    ("auto", 2,          ("nvidia0", "nvidia1"),                  "0",                  False),  # one of them visible
    ("auto", 2,          ("nvidia0", "nvidia1"),                  "1,0",                True),
    ("auto", 1,          ("nvidia0",),                            "-1",                 False),  # every GPU hidden
    ("auto", 1,          ("nvidia0",),                            "",                   False),
    ("auto", 1,          ("nvidiactl", "nvidia-uvm"),             None,                 False),  # a driver, no GPU
    ("auto", 1,          (),                                      None,                 False),
]


@pytest.mark.parametrize("device, ranks, files, visible, gpu", GPU_GUESSES)
def test_the_launcher_tells_a_gpu_run_without_torch(tmp_path, device, ranks, files, visible, gpu):
    env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert P.expects_gpu(device, ranks, env, fake_dev(tmp_path / "dev", *files)) is gpu


def test_a_gpu_run_is_not_pinned_and_claims_no_core(tmp_path, monkeypatch):
    """Its clock is CUDA events; pinned, its CUDA and NCCL threads would share one core, and under
    torchrun each GPU's NUMA node would be ignored. A CPU launch beside it still gets every core."""
    monkeypatch.setenv("PIPELAB_PIN", "1")
    monkeypatch.setattr(P, "allowed_cpus", lambda: (0, 1, 2, 3, 4))
    sysfs, locks = fake_sysfs(tmp_path / "sys", siblings("0", "1", "2", "3", "4")), str(tmp_path / "locks")
    with P.launch_placement(4, sysfs, locks, gpu=True) as on_gpus:
        assert (on_gpus.pinned, on_gpus.reason, on_gpus.rank_cpus, on_gpus.polls) == (False, Placement.GPU, (), False)
        with P.launch_placement(4, sysfs, locks) as on_cpus:
            assert on_cpus.rank_cpus == ((0,), (1,), (2,), (3,))
    pinned = []
    monkeypatch.setattr(P.os, "sched_setaffinity", lambda pid, cpus: pinned.append(tuple(cpus)))
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    record = P.pin_local_rank(env, sysfs, device="cuda")
    assert (record.pinned, record.reason, record.scope, pinned) == (False, Placement.GPU, Placement.PER_HOST, [])


def test_under_torchrun_each_process_pins_itself_by_its_local_rank(tmp_path, monkeypatch):
    pinned = []
    monkeypatch.setattr(P, "allowed_cpus", lambda: tuple(range(8)))
    monkeypatch.setattr(P.os, "sched_setaffinity", lambda pid, cpus: pinned.append(tuple(cpus)))
    monkeypatch.setenv(P.REFERENCE_ENV, "")  # pin_local_rank sets it; monkeypatch restores the test process's
    sysfs = fake_sysfs(tmp_path, siblings("0,4", "1,5", "2,6", "3,7"))
    env = {"RANK": "5", "WORLD_SIZE": "6", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "3"}
    record = P.pin_local_rank(env, sysfs)
    assert pinned == [(1, 5)] and record.scope == Placement.PER_HOST
    assert os.environ[P.REFERENCE_ENV] == "3,7"
    monkeypatch.setenv(P.REFERENCE_ENV, "")
    assert not P.pin_local_rank({**env, "PIPELAB_PIN": "0"}, sysfs).pinned and pinned == [(1, 5)]


def test_the_reference_runs_on_its_own_cores_and_the_rank_returns_to_its_core(monkeypatch):
    before = os.sched_getaffinity(0)
    target = max(before)
    monkeypatch.setenv(P.REFERENCE_ENV, str(target))
    with P.on_reference_cores():
        assert os.sched_getaffinity(0) == {target}
    assert os.sched_getaffinity(0) == before
    monkeypatch.delenv(P.REFERENCE_ENV)
    with P.on_reference_cores():  # not pinned: nothing moves
        assert os.sched_getaffinity(0) == before


def test_a_result_keeps_its_placement_and_an_old_one_reads_none():
    record = dataclasses.replace(P.plan(cores_of(4, 2), 2, "auto"), ran_on=((0, 4), (1, 5)))
    assert Placement.from_dict(record.to_dict()) == record
    saved = fake_metrics(2, placement=record).to_dict()
    assert RunMetrics.from_dict(saved).placement == record
    del saved["placement"]  # a result saved before runs recorded it
    assert RunMetrics.from_dict(saved).placement is None


@pytest.mark.slow
def test_a_p2_run_records_where_its_ranks_ran_and_they_ran_there(monkeypatch):
    """On this host's cores: by the rule (here 2 cores for 2 ranks and the reference: not
    pinned), then with PIPELAB_PIN=ranks (pinned); each rank reads its own affinity as it sets up
    its steps (Placement.ran_on). Read from outside instead, by the progress reports, a sample
    fell only after the steps, with rank 0 on the reference's CPUs, one run in three."""
    from pipelab.engine.runtime.launch import WARM_UP, run
    config = WARM_UP.with_(steps=4, layers=4, hidden=128, check=True)
    monkeypatch.delenv("PIPELAB_PIN", raising=False)
    result = run(config)
    expected = P.plan(P.physical_cores(P.allowed_cpus()), 2, "auto")
    placement = result.metrics.placement
    assert (placement.pinned, placement.ranks) == (expected.pinned, 2)
    assert placement.polls == expected.polls  # pinned with a core to spare: polled
    if not expected.pinned:  # left to the OS: each rank may run wherever this process may
        assert placement.ran_on == (P.allowed_cpus(),) * 2
    assert result.check.grad_max_rel_diff < 1e-4
    if len(P.physical_cores(P.allowed_cpus())) < 2:
        pytest.skip("one core: two ranks cannot each have one")
    monkeypatch.setenv("PIPELAB_PIN", "ranks")
    result = run(config)
    placement = result.metrics.placement
    assert placement.pinned and len(placement.rank_cpus) == 2
    assert placement.ran_on == placement.rank_cpus  # each rank on its own core while its steps ran
    assert result.check.grad_max_rel_diff < 1e-4  # the reference ran (on the ranks' cores) and agreed


#   placement                                                lang  -> the Details line says
LINES = [
    (P.plan(cores_of(2), 2, "auto"),                              "en", "2 free cores for 2 devices"),
    (P.plan(cores_of(3), 2, "auto"),                              "en", "device 0 on CPUs 0; device 1 on CPUs 1"),
    (P.plan(cores_of(3), 2, "auto"),                              "en", "one-process run on CPUs 2."),
    (P.plan(cores_of(2), 2, "ranks"),                             "en", "after every step, on the same cores"),
    (P.plan(cores_of(8), 4, "off"),                               "en", "turned pinning off"),
    (Placement(pinned=False, reason=Placement.GPU, cores=16, ranks=4), "en", "they ran on GPUs"),
    (Placement(pinned=False, reason=Placement.GPU, cores=16, ranks=4), "zh", "它们在 GPU 上运行"),
    (P.plan(cores_of(4, 2), 2, "auto", scope=Placement.PER_HOST), "en", "every machine pins its own"),
    (P.plan(cores_of(3), 2, "auto"),                              "en", "polling its channel for up to 5 ms"),
    (P.plan(cores_of(2), 2, "auto"),                              "zh", "空闲核心 2 个，设备 2 个"),
    (P.plan(cores_of(3), 2, "auto"),                              "zh", "先轮询通道，最多 5 ms"),
    (P.plan(cores_of(3), 2, "auto"),                              "zh", "设备 0 在处理器 0；设备 1 在处理器 1"),
]


@pytest.mark.parametrize("placement, lang, says", LINES)
def test_a_runs_details_say_where_its_devices_ran_in_the_pages_language(placement, lang, says):
    from pipelab.app.views.placement_line import placement_text
    assert says in placement_text(placement, lang)


@pytest.mark.parametrize("placement", [P.plan(cores_of(2), 2, "ranks"), P.plan(cores_of(2), 2, "auto"),
                                       P.plan(cores_of(3), 2, "auto", poll="off")])
def test_a_run_whose_devices_slept_says_nothing_of_polling(placement):
    from pipelab.app.views.placement_line import placement_text
    assert "polling" not in placement_text(placement, "en") and "轮询" not in placement_text(placement, "zh")


@pytest.mark.parametrize("checked, says", [
    (True, "2 devices and the gradient check"),
    (False, "the core a gradient check would take (kept though this run has none)"),  # an asynchronous run
])
def test_a_run_without_a_gradient_check_does_not_say_it_had_one(checked, says):
    from pipelab.app.views.placement_line import placement_text
    assert says in placement_text(P.plan(cores_of(2), 2, "auto"), "en", checked=checked)
