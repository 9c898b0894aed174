"""engine/model/partition.py: layer ranges per stage, read as tables."""

import pytest
import torch
from torch import nn

from pipelab.engine.config import RunConfig
from pipelab.engine.model.builtin import ModelConfig, build_layers, sample_input
from pipelab.engine.model.partition import layer_param_counts, partition, profile_layer_times, split_without_profiling

pytestmark = pytest.mark.usefixtures("one_thread")


def sizes(ranges):
    return [len(r) for r in ranges]


@pytest.mark.parametrize("layers, stages, method, weights, expected", [
    # uniform: the remainder goes to the last stages (the first already holds most activations)
    (8,  4, "uniform", None,                        [2, 2, 2, 2]),
    (10, 4, "uniform", None,                        [2, 2, 3, 3]),
    (7,  3, "uniform", None,                        [2, 2, 3]),
    (6,  6, "uniform", None,                        [1, 1, 1, 1, 1, 1]),
    (5,  1, "uniform", None,                        [5]),
    # equal weights give exactly the uniform split
    (10, 4, "params",  [1] * 10,                    [2, 2, 3, 3]),
    (7,  3, "time",    [0.5] * 7,                   [2, 2, 3]),
    # gpt-like: a light embedding and a heavy head around four equal blocks
    (6,  2, "params",  [1, 4, 4, 4, 4, 6],          [4, 2]),
    (6,  3, "params",  [1, 4, 4, 4, 4, 6],          [3, 2, 1]),
    # one heavy layer sits alone; the rest share evenly
    (5,  2, "time",    [1, 1, 9, 1, 1],             [2, 3]),
    (5,  3, "time",    [1, 1, 9, 1, 1],             [2, 1, 2]),
    (6,  3, "time",    [9, 1, 1, 1, 1, 1],          [1, 2, 3]),
    (4,  2, "time",    [0, 0, 0, 0],                [2, 2]),
])
def test_partition_table(layers, stages, method, weights, expected):
    ranges = partition(layers, stages, method, weights)
    assert sizes(ranges) == expected
    assert [i for r in ranges for i in r] == list(range(layers))


@pytest.mark.parametrize("kind, layers, stages, uniform, params", [
    # the default (params) gives a gpt's blocks out evenly, embedding first and head last
    ("gpt", 8,  4, [["E", "B"], ["B", "B"], ["B", "B", "B"], ["B", "B", "H"]],
                   [["E", "B", "B"], ["B", "B"], ["B", "B"], ["B", "B", "H"]]),
    ("gpt", 4,  4, [["E"], ["B"], ["B", "B"], ["B", "H"]], [["E", "B"], ["B"], ["B"], ["B", "H"]]),
    # equal layers: the same split either way
    ("mlp", 8,  4, [["L", "L"]] * 4, [["L", "L"]] * 4),
])
def test_the_default_split_of_the_built_in_models(kind, layers, stages, uniform, params):
    assert RunConfig().partition == "params"
    built = build_layers(ModelConfig(kind=kind, layers=layers))
    letter = {"Embedding": "E", "Block": "B", "Head": "H", "MLPBlock": "L", "DeferrableLinear": "L"}

    def names(method):
        return [[letter[type(built[i]).__name__] for i in r] for r in split_without_profiling(built, stages, method)]

    assert names("uniform") == uniform
    assert names("params") == params


@pytest.mark.parametrize("method", ["uniform", "params", "time"])
def test_never_drops_or_repeats_a_layer(method):
    for layers in range(1, 21):
        weights = None if method == "uniform" else [(i * 7) % 5 + 0.5 for i in range(layers)]
        for stages in range(1, layers + 1):
            ranges = partition(layers, stages, method, weights)
            assert len(ranges) == stages and all(len(r) >= 1 for r in ranges)
            assert [i for r in ranges for i in r] == list(range(layers)), (layers, stages)


def test_weighted_split_minimises_the_heaviest_stage():
    # brute force over every cut of 8 layers into 3 stages
    weights = [3, 1, 4, 1, 5, 9, 2, 6]
    best = min(max(sum(weights[:a]), sum(weights[a:b]), sum(weights[b:]))
               for a in range(1, 7) for b in range(a + 1, 8))
    ranges = partition(8, 3, "time", weights)
    assert max(sum(weights[i] for i in r) for r in ranges) == best


@pytest.mark.parametrize("args, message", [
    ((3, 4),                              "cannot split 3 layers into 4 stages: need at least one layer per stage"),
    ((0, 1),                              "need at least one layer and one stage, got 0 layers and 1 stages"),
    ((4, 0),                              "need at least one layer and one stage, got 4 layers and 0 stages"),
    ((4, 2, "greedy"),                    "unknown partition method 'greedy'; valid methods: uniform, params, time"),
    ((4, 2, "params"),                    "method 'params' needs weights: per-layer parameter counts"),
    ((4, 2, "time"),                      "method 'time' needs weights: per-layer times"),
    ((4, 2, "time", [1, 2, 3]),           "got 3 weights for 4 layers; need one per layer"),
    ((2, 2, "time", [1, -1]),             "weights must be finite and >= 0"),
    ((2, 2, "uniform", [1, 1]),           "method 'uniform' takes no weights"),
])
def test_errors_name_the_rule(args, message):
    with pytest.raises(ValueError) as err:
        partition(*args)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_layer_param_counts_of_the_gpt():
    config = ModelConfig(layers=2, hidden=32, heads=4, seq_len=16)
    counts = layer_param_counts(build_layers(config))
    c, v, t = 32, config.vocab, 16
    block = 2 * 2 * c + (c * 3 * c + 3 * c) + (c * c + c) + (c * 4 * c + 4 * c) + (4 * c * c + c)
    assert counts == [v * c + t * c, block, block, 2 * c + c * v]


def test_profiled_times_put_a_heavy_layer_alone():
    torch.manual_seed(0)

    def light():
        return nn.Sequential(nn.Linear(32, 32), nn.GELU())

    heavy = nn.Sequential(nn.Linear(32, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 32))
    layers = [light(), light(), heavy, light(), light()]
    for p in layers[0].parameters():
        p.grad = torch.full_like(p, 7.0)  # an existing gradient must survive profiling
    times = profile_layer_times(layers, torch.randn(64, 32), repeats=5)  # about 40x heavier
    assert len(times) == 5 and times[2] > 3 * max(times[:2] + times[3:])
    assert sizes(partition(5, 3, "time", times)) == [2, 1, 2]
    assert all(torch.all(p.grad == 7.0) for p in layers[0].parameters())
    assert all(p.grad is None for layer in layers[1:] for p in layer.parameters())


def test_profiling_a_gpt_with_integer_input():
    config = ModelConfig(layers=2, hidden=32, heads=4, seq_len=16, microbatch_size=2)
    times = profile_layer_times(build_layers(config), sample_input(config), repeats=1)
    assert len(times) == 4 and all(t > 0 for t in times)
