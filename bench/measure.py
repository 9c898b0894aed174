"""How the figures start runs: our engine, torch's forkserver, the progress log."""

from __future__ import annotations

import sys
import time

T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[bench {time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def mp_context():
    """The engine's forkserver, also preloading torch._dynamo (imported by the first
    torch.optim constructor: 1.5-5 s per rank otherwise) and torch's pipelining, so neither
    side pays imports inside its runs. Start-up is not what this benchmark measures."""
    from pipelab.engine.runtime.rank_processes import mp_context
    ctx = mp_context()
    ctx.set_forkserver_preload(["torch", "torch.distributed", "pipelab.engine.runtime.worker", "torch._dynamo",
                                "torch.distributed.pipelining", "bench.torch_pipelining"])
    return ctx


def ours(schedule: str, steps: int, stages: int = 4, microbatches: int = 8, **model):
    """One run of our engine (pipelab.engine.runtime.launch.run) with a model dict such as plan.SMALL_MLP."""
    from pipelab.engine.config import RunConfig
    from pipelab.engine.runtime.launch import run
    return run(RunConfig(schedule=schedule, stages=stages, microbatches=microbatches, steps=steps, **model))


def model_config(model: dict):
    from pipelab.engine.model.builtin import ModelConfig
    keys = ("layers", "hidden", "heads", "seq_len", "microbatch_size")
    return ModelConfig(kind=model["model"], **{k: model[k] for k in keys if k in model})


def model_text(m: dict) -> str:
    """A model dict in words, for a table's caption."""
    if m["model"] == "mlp":
        return (f"mlp: {m['layers']} x Linear({m['hidden']}), GELU after all but the head, "
                f"micro-batch {m['microbatch_size']}")
    return (f"gpt: {m['layers']} blocks, hidden {m['hidden']}, {m['heads']} heads, seq {m['seq_len']}, "
            f"micro-batch {m['microbatch_size']}")
