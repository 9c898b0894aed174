"""engine/device.py: what choosing the CPU does to a rank's process."""

import json
import subprocess
import sys

import pytest

# A fresh process chooses the CPU (or leaves the defaults), then trains two gpt blocks the
# way a GPipe stage does: 8 micro-batch forwards, then their backwards, 12 steps. It reports
# the minor page faults of steps 1-11 (step 0 brings in everything once in both cases).
GPIPE_STAGE = """
import json, resource, sys, torch
from torch import nn
from pipelab.engine.device import choose_device, keep_freed_memory
from pipelab.engine.model.builtin import ModelConfig, build_layers, make_microbatch
applied = None
if sys.argv[1] == "cpu":
    choose_device("cpu", 0, 1)
    applied = keep_freed_memory()
threads = torch.get_num_threads()
torch.set_num_threads(1)  # the same compute in both cases
cfg = ModelConfig(kind="gpt", layers=2, hidden=128, heads=4, seq_len=64, microbatch_size=8)
layers = build_layers(cfg)
blocks = nn.Sequential(*layers[1:3])
x0 = layers[0](make_microbatch(cfg, 0, 0)[0]).detach()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for step in range(12):
    if step == 1:
        before = faults()
    outs = [blocks(x0.clone().requires_grad_(True)) for j in range(8)]
    for out in outs:
        out.backward(torch.ones_like(out))
    del outs
print(json.dumps({"faults": faults() - before, "applied": applied, "threads": threads}))
"""


def gpipe_stage(choose: str) -> dict:
    out = subprocess.run([sys.executable, "-c", GPIPE_STAGE, choose], capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_cpu_rank_reuses_freed_activation_memory_instead_of_faulting_in_fresh_pages():
    chosen, default = gpipe_stage("cpu"), gpipe_stage("none")
    if not chosen["applied"]:
        pytest.skip("this C library has no mallopt (not glibc)")
    # Measured here: 5,100-5,800 faults with the setting, 19,000-25,000 without.
    assert chosen["faults"] < default["faults"] / 2
    assert chosen["threads"] == 1  # one compute thread per rank: ranks share the cores


@pytest.mark.parametrize("kind, counts", [("cpu", True), ("cuda", False)])
def test_the_executors_own_time_is_device_time_only_on_cpu(kind, counts):
    # On CPU the executor's bookkeeping runs on the device's own processor; on a GPU it
    # overlaps the kernels, so it must not move the device clock there.
    from pipelab.engine.device import Device, HostStopwatch
    watch = HostStopwatch(Device(kind))
    assert watch.take() == 0.0  # never started
    watch.start()
    sum(i * i for i in range(200_000))  # some CPU work of this thread
    elapsed = watch.take()
    assert (elapsed > 0) == counts
    assert watch.take() == 0.0  # take() stops it


@pytest.mark.parametrize("gpus, world, rank, expected", [
    (4, 4, 3, ("cuda", 3, False, "nccl")),  # a GPU per rank: NCCL, as before
    (1, 4, 3, ("cuda", 0, True, "gloo")),  # one GPU, four ranks: shared, gloo
    (2, 4, 3, ("cuda", 1, True, "gloo")),  # rank r on GPU r mod 2
])
def test_cuda_ranks_share_a_gpu_through_gloo_when_there_are_fewer_gpus_than_ranks(monkeypatch, gpus, world, rank,
                                                                                  expected):
    import torch

    from pipelab.engine.device import choose_device
    chosen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    device = choose_device("cuda", rank, world)
    assert (device.kind, device.index, device.shared, device.backend) == expected
    assert chosen == [expected[1]]
    # Shared ranks' messages go through host memory (NCCL is not there to carry them).
    assert device.messages_through_host == expected[2]
    assert device.receives_ahead == (0 if expected[3] == "nccl" else 2)


def test_auto_never_shares_a_gpu_and_cuda_without_one_says_so(monkeypatch):
    import torch

    from pipelab.engine.device import choose_device
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    import pipelab.engine.device
    # Choosing the CPU tunes the calling process (threads, scheduling, malloc): not pytest's.
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    monkeypatch.setattr(pipelab.engine.device, "_batch_scheduling", lambda: None)
    monkeypatch.setattr(pipelab.engine.device, "keep_freed_memory", lambda: None)
    assert choose_device("auto", 0, 2).kind == "cpu"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(RuntimeError, match="needs a GPU, found none"):
        choose_device("cuda", 0, 2)
