"""The small models a pipeline splits into stages, and their deterministic data.

Two kinds, both a flat list of layers so ``partition.py`` can cut them anywhere:

- ``gpt``: a character-level GPT in the style of karpathy/nanoGPT ``model.py`` (Radford et
  al. 2019): [Embedding, Block x layers, Head]. Cross-entropy loss over the characters.
- ``mlp``: [Linear+GELU x (layers - 1), Linear head] learning a fixed random linear
  "teacher" with MSE; the simplest model in which to see the schedule rather than the
  model. Its ``layers`` counts every Linear, the head included, so 8 layers split 2 per
  stage over 4 stages: the head costs as much as a block, and counted apart it made the
  last stage 1.5x the others, a bubble no schedule removes.

Every linear layer is a ``DeferrableLinear`` so zero-bubble schedules can split backward
into I and W (see ``weight_grad.py``); on stages whose schedule does not split it, it runs
as torch's own linear. Data is a pure function of (seed, step, micro-batch):
the first stage makes inputs and the last stage makes targets, with no communication.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pipelab.engine.runtime.weight_grad import DeferrableLinear

# About 48 KB of public-domain English, transcribed by hand (no download at run time): the
# Declaration of Independence, the Bill of Rights, two speeches of Lincoln, Genesis 1 and
# Psalm 23 (KJV), five Shakespeare sonnets, Poe's "The Raven" and chapter I and part of II of
# Carroll's "Alice's Adventures in Wonderland". The file's header lists them too.
CORPUS_PATH = Path(__file__).parent / "data" / "corpus.txt"
# Fixed character vocabulary: newline plus the 95 printable ASCII characters (space to ~).
# Fixed rather than computed from the corpus so a saved model's vocab never shifts.
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))
KINDS = ("gpt", "mlp", "wide-first")


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    kind: str = "gpt"
    """Model family: "gpt" (char-level transformer), "mlp" (Linear+GELU blocks) or "wide-first"
    (the mlp with a wide feed-forward block first: one layer as heavy as eight of the rest)."""
    layers: int = 4
    """Depth: transformer blocks for gpt (the embedding and the head come on top, as nanoGPT's
    n_layer); Linear layers for mlp, the head included."""
    hidden: int = 128
    """Width of the residual stream (gpt) or of every Linear (mlp)."""
    heads: int = 4
    """Attention heads per block (gpt only); must divide ``hidden``."""
    seq_len: int = 64
    """Characters per sequence (gpt only)."""
    vocab: int = len(CHARS)
    """Output classes of the gpt head; at least len(CHARS) = 96 so every character fits."""
    microbatch_size: int = 8
    """Sequences (gpt) or rows (mlp) per micro-batch."""
    seed: int = 0
    """Seeds both the initial weights and the data."""

    def validate(self) -> None:
        """Raise ValueError naming the first broken constraint."""
        if self.kind not in KINDS:
            raise ValueError(f"unknown model kind {self.kind!r}; valid kinds: {', '.join(KINDS)}")
        for name in ("layers", "hidden", "heads", "seq_len", "vocab", "microbatch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.kind == "wide-first" and self.layers < 2:
            raise ValueError(f"the wide-first model needs layers >= 2 (its wide block and the head), got {self.layers}")
        if self.kind == "gpt":
            if self.hidden % self.heads:
                raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")
            if self.vocab < len(CHARS):
                raise ValueError(f"vocab must be >= {len(CHARS)} (the character set), got {self.vocab}")
            if self.seq_len + 1 > len(corpus_ids()):
                raise ValueError(f"seq_len {self.seq_len} is longer than the corpus ({len(corpus_ids())} chars)")


# ---- data -----------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def corpus_ids() -> torch.Tensor:
    """The shipped corpus encoded as character ids, shape (N,), dtype long."""
    return encode(CORPUS_PATH.read_text(encoding="ascii"))


def encode(text: str) -> torch.Tensor:
    """Characters -> ids in CHARS; anything outside the set raises (the corpus is pure ASCII)."""
    index = {c: i for i, c in enumerate(CHARS)}
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def decode(ids: torch.Tensor | list[int]) -> str:
    """Ids -> text, for printing samples."""
    return "".join(CHARS[int(i)] for i in ids)


def _generator(*key: int) -> torch.Generator:
    # SeedSequence mixes the key tuple well, so (seed, step, mb) never collide as sums would.
    seed = int(np.random.SeedSequence([k % 2**32 for k in key]).generate_state(1)[0])
    return torch.Generator().manual_seed(seed)


def make_microbatch(config: ModelConfig, step: int, microbatch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of micro-batch ``microbatch`` of step ``step``; same on every rank."""
    gen = _generator(config.seed, step, microbatch)
    b = config.microbatch_size
    if config.kind == "gpt":
        ids = corpus_ids()
        t = config.seq_len
        starts = torch.randint(0, len(ids) - t, (b,), generator=gen)  # windows of t+1 chars
        windows = torch.stack([ids[s : s + t + 1] for s in starts.tolist()])  # (B, T+1)
        return windows[:, :-1], windows[:, 1:]  # next-character prediction: (B, T), (B, T)
    x = torch.randn(b, config.hidden, generator=gen)  # (B, C)
    return x, x @ _teacher(config.hidden, config.seed).t()  # (B, C), (B, C)


@functools.lru_cache(maxsize=8)
def _teacher(hidden: int, seed: int) -> torch.Tensor:
    # Scaled by 1/sqrt(C) so targets have about unit variance, like the inputs.
    return torch.randn(hidden, hidden, generator=_generator(seed, 2**31 - 1)) / math.sqrt(hidden)


def sample_input(config: ModelConfig) -> torch.Tensor:
    """Input of micro-batch 0 of step 0 (for shape inference and profiling)."""
    return make_microbatch(config, 0, 0)[0]


def loss_fn(config: ModelConfig) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """(output, target) -> scalar: cross entropy over characters (gpt) or MSE (mlp)."""
    if config.kind == "gpt":
        return lambda logits, target: F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))
    return F.mse_loss


# ---- gpt layers (nanoGPT style) -------------------------------------------------------

class Embedding(nn.Module):
    """Token + learned position embedding: ids (B, T) -> (B, T, C)."""

    def __init__(self, vocab: int, seq_len: int, hidden: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq_len, hidden)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        B, T = ids.size()  # batch size, sequence length
        return self.tok(ids) + self.pos(torch.arange(T, device=ids.device))  # (B, T, C)


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = DeferrableLinear(hidden, 3 * hidden)  # q, k, v for all heads in one matmul
        self.proj = DeferrableLinear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, nh, T, hs): each head attends over its own C / nh channels
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads)
        self.ln2 = nn.LayerNorm(hidden)
        # 4x expansion as in GPT-2 (Radford et al. 2019) and nanoGPT
        self.mlp = nn.Sequential(DeferrableLinear(hidden, 4 * hidden), nn.GELU(), DeferrableLinear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C) -> (B, T, C)
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Head(nn.Module):
    """Final LayerNorm + projection to the vocabulary: (B, T, C) -> logits (B, T, vocab).

    Not weight-tied to the embedding as GPT-2 is: the two sit on different stages.
    """

    def __init__(self, hidden: int, vocab: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.out = DeferrableLinear(hidden, vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.ln(x))


# ---- mlp layers -----------------------------------------------------------------------

class MLPBlock(nn.Module):
    """x + GELU(Linear(x)): (B, C) -> (B, C). The residual keeps a deep stack trainable: without
    it, eight default-initialised Linear+GELU layers shrink the signal to ~0 and nothing learns."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.fc = DeferrableLinear(hidden, hidden)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.fc(x))


class WideBlock(nn.Module):
    """x + Linear(GELU(Linear(x))) through a 4x wider hidden layer, as a transformer's
    feed-forward block: (B, C) -> (B, C), 8 C^2 multiply-adds per row against an MLPBlock's C^2.
    One layer that cannot be split: the case where PipeDream replicates a stage (arXiv
    1806.03377, section 3.1) rather than cutting it."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.up = DeferrableLinear(hidden, 4 * hidden)
        self.act = nn.GELU()
        self.down = DeferrableLinear(4 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.act(self.up(x)))


def build_layers(config: ModelConfig) -> list[nn.Module]:
    """The model as a flat list of layers, deterministic given ``config.seed``.

    gpt: [Embedding, Block x layers, Head] (layers + 2 modules); mlp: [MLPBlock x (layers - 1),
    Linear head] (layers modules); wide-first: the mlp with a WideBlock in its first block's
    place. The global RNG is left untouched.
    """
    config.validate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        if config.kind in ("mlp", "wide-first"):
            first = [WideBlock(config.hidden)] if config.kind == "wide-first" else []
            blocks = first + [MLPBlock(config.hidden) for _ in range(config.layers - 1 - len(first))]
            return blocks + [DeferrableLinear(config.hidden, config.hidden)]
        layers = [Embedding(config.vocab, config.seq_len, config.hidden)]
        layers += [Block(config.hidden, config.heads) for _ in range(config.layers)]
        layers.append(Head(config.hidden, config.vocab))
        for layer in layers:
            layer.apply(_gpt_init)
        return layers


def _gpt_init(module: nn.Module) -> None:
    # GPT-2 / nanoGPT init: N(0, 0.02) weights, zero biases. Small logits at init make the
    # first loss about ln(vocab), a quick check that the model is wired right.
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
