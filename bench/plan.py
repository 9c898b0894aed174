"""What the benchmark measures and how much of it: model sizes, targets, and the plan for a
full, ``--quick`` or ``--tiny`` run. Pure data, no torch."""

from __future__ import annotations

from dataclasses import dataclass, field

WARMUP = 2  # steps dropped on both sides: step 0 (engine warm-up, torch shape inference) and 1

# Models. Speed: 8 x Linear(512)+GELU, micro-batch 32, and the default gpt with 6 blocks (4
# would give 6 layers, too few for the 8 stages of interleaved / zb-v at p=4).
MLP_SPEED = dict(model="mlp", layers=8, hidden=512, microbatch_size=32)
GPT_SPEED = dict(model="gpt", layers=6, hidden=128, heads=4, seq_len=64, microbatch_size=8)
# Overhead and growth: a small mlp, not the lessons' default size (lessons.Knobs). Its actions
# are short, so the executor's own cost per action is a large share of a step (the overhead
# figure is then a harsh bound), and the growth sweep up to m=128 stays a small part of the
# benchmark; at the lessons' size each of its steps costs several times as much.
SMALL_MLP = dict(model="mlp", layers=8, hidden=256, microbatch_size=16)
TINY = dict(model="mlp", layers=8, hidden=64, microbatch_size=4)

TARGETS = {"speed_ratio": 0.9, "fidelity_sim": 0.03, "fidelity_wall": 0.05, "overhead": 0.05,
           "growth_sim": 0.10, "memory_flat": 1.10}


def all_schedules() -> tuple[str, ...]:
    """Every registered schedule (engine/schedules), in list order: the fidelity section's."""
    from pipelab.engine.schedules import REGISTRY
    return tuple(REGISTRY)


@dataclass
class Plan:
    rounds: int
    speed_steps: int
    fid_steps: int
    growth_steps: int
    growth_m: list[int]
    growth_p: list[int]
    speed_models: dict = field(default_factory=dict)
    fid_model: dict = field(default_factory=dict)
    small: dict = field(default_factory=dict)
    """The model of the overhead and growth figures (SMALL_MLP, or TINY)."""
    speed_schedules: list[str] | None = None  # torch class names; None = all five
    fid_schedules: tuple = field(default_factory=all_schedules)
    app_runs: int = 5  # browser runs for app latency (section 4); 0 skips it
    growth_rounds: int = 3  # runs of every growth point (section 5); the median one is reported
    lesson_rounds: int = 3  # rounds of every lesson's runs (section 7); the median one is reported
    lesson_size: dict = field(default_factory=dict)
    """Knob overrides on every lesson's defaults; empty: the lessons' own size."""
    tiny: bool = False


def make_plan(quick: bool, tiny: bool) -> Plan:
    if tiny:  # smoke test: everything tiny, every code path once
        return Plan(rounds=1, speed_steps=WARMUP + 1, fid_steps=2, growth_steps=2, growth_m=[4, 8], growth_p=[2],
                    speed_models={"mlp": TINY}, fid_model=TINY, small=TINY,
                    speed_schedules=["Schedule1F1B"], fid_schedules=("gpipe", "1f1b", "zb-v"), app_runs=0,
                    growth_rounds=1, lesson_rounds=1,
                    lesson_size={k: v for k, v in TINY.items() if k != "model"}, tiny=True)
    if quick:
        return Plan(rounds=1, speed_steps=WARMUP + 3, fid_steps=3, growth_steps=3, growth_m=[8, 32], growth_p=[2, 4],
                    speed_models={"mlp": MLP_SPEED, "gpt": GPT_SPEED}, fid_model=MLP_SPEED, small=SMALL_MLP,
                    app_runs=3, growth_rounds=1, lesson_rounds=1)
    return Plan(rounds=5, speed_steps=WARMUP + 5, fid_steps=6, growth_steps=5, growth_m=[8, 32, 128],
                growth_p=[2, 4, 8], speed_models={"mlp": MLP_SPEED, "gpt": GPT_SPEED}, fid_model=MLP_SPEED,
                small=SMALL_MLP)
