"""engine/model/builtin.py and engine/runtime/weight_grad.py: shapes, deterministic data, the B/W split."""

import math

import pytest
import torch
from torch import nn

from pipelab.engine.model.builtin import (
    CHARS,
    ModelConfig,
    build_layers,
    corpus_ids,
    decode,
    loss_fn,
    make_microbatch,
    sample_input,
)
from pipelab.engine.runtime.weight_grad import DeferrableLinear, WeightGradStore, attach_grad_store

pytestmark = pytest.mark.usefixtures("one_thread")

GPT = ModelConfig(kind="gpt", layers=2, hidden=32, heads=4, seq_len=16, microbatch_size=3)
MLP = ModelConfig(kind="mlp", layers=3, hidden=16, microbatch_size=5)


def run(layers, x):
    for layer in layers:
        x = layer(x)
    return x


# ---- config -----------------------------------------------------------------------------

@pytest.mark.parametrize("changes, message", [
    (dict(kind="rnn"),            "unknown model kind 'rnn'; valid kinds: gpt, mlp"),
    (dict(layers=0),              "layers must be >= 1, got 0"),
    (dict(hidden=-4),             "hidden must be >= 1, got -4"),
    (dict(microbatch_size=0),     "microbatch_size must be >= 1, got 0"),
    (dict(hidden=30, heads=4),    "hidden (30) must be divisible by heads (4)"),
    (dict(vocab=50),              "vocab must be >= 96 (the character set), got 50"),
    (dict(seq_len=10**6),         "seq_len 1000000 is longer than the corpus"),
])
def test_validate_names_the_constraint(changes, message):
    with pytest.raises(ValueError) as err:
        ModelConfig(**changes).validate()
    assert message in str(err.value)


def test_config_is_keyword_only_and_frozen():
    with pytest.raises(TypeError):
        ModelConfig("gpt")
    with pytest.raises(AttributeError):
        ModelConfig().layers = 3


# ---- layers and shapes --------------------------------------------------------------------

@pytest.mark.parametrize("config, n_layers, in_shape, in_dtype, out_shape", [
    #  config  layers   input         dtype        output
    (GPT,      2 + 2,   (3, 16),      torch.long,  (3, 16, 96)),
    (MLP,      3,       (5, 16),      torch.float, (5, 16)),  # layers counts the head
])
def test_shapes(config, n_layers, in_shape, in_dtype, out_shape):
    layers = build_layers(config)
    x, y = make_microbatch(config, step=0, microbatch=0)
    assert len(layers) == n_layers
    assert (tuple(x.shape), x.dtype) == (in_shape, in_dtype)
    assert tuple(run(layers, x).shape) == out_shape
    assert loss_fn(config)(run(layers, x), y).dim() == 0
    assert torch.equal(sample_input(config), x)


@pytest.mark.parametrize("config", [GPT, MLP])
def test_every_linear_is_deferrable(config):
    linears = [m for layer in build_layers(config) for m in layer.modules() if isinstance(m, nn.Linear)]
    assert linears and all(isinstance(m, DeferrableLinear) for m in linears)


@pytest.mark.parametrize("config", [GPT, MLP])
def test_weights_depend_only_on_seed(config):
    state = torch.random.get_rng_state()
    a, b = build_layers(config), build_layers(config)
    c = build_layers(ModelConfig(**{**config.__dict__, "seed": 1}))
    assert torch.equal(torch.random.get_rng_state(), state)  # global RNG untouched

    def flat(layers):
        return torch.cat([p.flatten() for layer in layers for p in layer.parameters()])

    assert torch.equal(flat(a), flat(b)) and not torch.equal(flat(a), flat(c))


def test_gpt_loss_at_init_is_about_ln_vocab():
    config = ModelConfig()  # default size
    x, y = make_microbatch(config, 0, 0)
    loss = loss_fn(config)(run(build_layers(config), x), y).item()
    assert abs(loss - math.log(config.vocab)) < 0.05


# ---- data ---------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [GPT, MLP])
def test_data_is_a_function_of_seed_step_microbatch(config):
    same = [make_microbatch(config, 3, 1) for _ in range(2)]
    assert all(torch.equal(a, b) for a, b in zip(*same))
    for other in [make_microbatch(config, 3, 2), make_microbatch(config, 4, 1),
                  make_microbatch(ModelConfig(**{**config.__dict__, "seed": 5}), 3, 1)]:
        assert not torch.equal(other[0], same[0][0])


def test_gpt_targets_are_inputs_shifted_by_one():
    x, y = make_microbatch(GPT, 0, 0)
    assert torch.equal(x[:, 1:], y[:, :-1])


def test_mlp_targets_come_from_one_teacher():
    # 6 micro-batches x 5 rows = 30 rows > 16 unknowns: only a shared linear map fits exactly
    pairs = [make_microbatch(MLP, step, mb) for step in range(3) for mb in range(2)]
    x, y = torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])
    fit = torch.linalg.lstsq(x, y).solution
    assert torch.allclose(x @ fit, y, atol=1e-4)
    assert not torch.allclose(y, torch.zeros_like(y))


def test_corpus_is_ascii_text_in_the_vocab():
    ids = corpus_ids()
    assert len(ids) > 20_000 and int(ids.max()) < len(CHARS)
    assert "Four score and seven years ago" in decode(ids)


# ---- DeferrableLinear and WeightGradStore -------------------------------------------------

def _pair(bias):
    torch.manual_seed(0)
    plain = nn.Linear(6, 4, bias=bias)
    deferred = DeferrableLinear(6, 4, bias=bias)
    deferred.load_state_dict(plain.state_dict())
    return plain, deferred


@pytest.mark.parametrize("shape, bias", [
    ((5, 6),       True),
    ((2, 3, 6),    True),
    ((2, 3, 6),    False),
    ((2, 2, 3, 6), True),
])
def test_deferred_grads_equal_plain_linear(shape, bias):
    plain, deferred = _pair(bias)
    store = WeightGradStore()
    assert attach_grad_store(deferred, store) == 1 and not store.deferring
    x = torch.randn(shape)
    x_plain, x_def = x.clone().requires_grad_(), x.clone().requires_grad_()
    plain(x_plain).pow(2).sum().backward()
    with store.capture(("stage0", 0)):
        assert store.deferring
        deferred(x_def).pow(2).sum().backward()
    assert not store.deferring
    # I ran: the input gradient is exact already; W did not: no weight gradient yet
    torch.testing.assert_close(x_def.grad, x_plain.grad, atol=1e-6, rtol=0)
    assert deferred.weight.grad is None
    assert store.pending_keys() == [("stage0", 0)] and store.pending_count(("stage0", 0)) == 1
    assert store.pending_bytes(("stage0", 0)) >= x.numel() * 4  # the saved input, at least
    assert store.flush(("stage0", 0)) == 1
    assert store.pending_keys() == [] and store.pending_bytes(("stage0", 0)) == 0
    torch.testing.assert_close(deferred.weight.grad, plain.weight.grad, atol=1e-6, rtol=0)
    if bias:
        torch.testing.assert_close(deferred.bias.grad, plain.bias.grad, atol=1e-6, rtol=0)


@pytest.mark.parametrize("store", [None, WeightGradStore()])
def test_not_deferring_is_a_plain_linear(store):
    plain, deferred = _pair(True)
    attach_grad_store(deferred, store)
    x = torch.randn(3, 2, 6)
    plain(x).sum().backward()
    deferred(x).sum().backward()
    torch.testing.assert_close(deferred.weight.grad, plain.weight.grad, atol=1e-6, rtol=0)
    assert store is None or store.pending_keys() == []


@pytest.mark.parametrize("store, backward", [
    (None,               "AddmmBackward0"),                  # torch's own, in C++
    (WeightGradStore(),  "_DeferrableLinearFnBackward"),     # ours, which can defer W
])
def test_only_a_layer_with_a_store_pays_for_the_deferrable_backward(store, backward):
    _, layer = _pair(True)
    attach_grad_store(layer, store)
    out = layer(torch.randn(3, 6, requires_grad=True))
    assert type(out.grad_fn).__name__ == backward


def test_flush_accumulates_per_key_and_works_with_functional_call():
    _, layer = _pair(True)
    store = WeightGradStore()
    attach_grad_store(layer, store)
    swapped = {n: p.detach().clone().requires_grad_() for n, p in layer.named_parameters()}
    xs = [torch.randn(4, 6) for _ in range(2)]
    for mb, x in enumerate(xs):
        with store.capture(mb):
            torch.func.functional_call(layer, swapped, (x,)).sum().backward()
    assert store.pending_keys() == [0, 1]
    # W in any order: the later micro-batch first.
    store.flush(1)
    store.flush(0)
    expected = sum(torch.ones(4, 4).T @ x for x in xs)
    torch.testing.assert_close(swapped["weight"].grad, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(swapped["bias"].grad, torch.full((4,), 8.0))
    assert layer.weight.grad is None  # the module's own parameters were not used


def test_gpt_stage_deferred_equals_plain():
    """A whole gpt model: I under capture + W by flush gives the plain backward's grads."""
    config = ModelConfig(layers=2, hidden=32, heads=2, seq_len=16, microbatch_size=2)
    plain, deferred = build_layers(config), build_layers(config)
    store = WeightGradStore()
    for layer in deferred:
        attach_grad_store(layer, store)
    x, y = make_microbatch(config, 0, 0)
    loss_fn(config)(run(plain, x), y).backward()
    with store.capture((0, 0)):
        loss_fn(config)(run(deferred, x), y).backward()
    # 4 linears per block + the head
    assert store.pending_count((0, 0)) == 4 * 2 + 1 and store.pending_bytes((0, 0)) > 0
    store.flush((0, 0))
    for a, b in zip(plain, deferred):
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            torch.testing.assert_close(q.grad, p.grad, atol=1e-6, rtol=1e-5, msg=name)


def test_capture_cannot_nest():
    store = WeightGradStore()
    with store.capture(0):
        with pytest.raises(RuntimeError, match="already capturing"):
            store.begin(1)
