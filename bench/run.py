"""PipeLab's benchmark: measures, then writes bench/RESULTS.md and the README's bench section.

    PYTHONPATH=. .venv/bin/python bench/run.py            # full run, about 10 min on 2 cores
    PYTHONPATH=. .venv/bin/python bench/run.py --quick    # fewer steps and configs, ~2 min

Figures (design.md, "Measuring honestly"): 1. step time vs torch.distributed.pipelining and
vs one process; 2. measurement fidelity (device clock vs simulator, device vs wall clock);
3. the executor's own overhead; 4. app latency (bench/app_latency.py, chromium); 5. growth.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

if __package__ in (None, ""):  # run as a script: make "bench" and "engine" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import overlap  # noqa: E402
from bench import report as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WARMUP = 2  # steps dropped on both sides: step 0 (engine warm-up, torch shape inference) and 1

# Models. Speed: design.md's 8 x Linear(512)+GELU, micro-batch 32, and the default gpt with 6
# blocks (4 would give 6 layers, too few for the 8 stages of interleaved / zb-v at p=4).
MLP_SPEED = dict(model="mlp", layers=8, hidden=512, microbatch_size=32)
GPT_SPEED = dict(model="gpt", layers=6, hidden=128, heads=4, seq_len=64, microbatch_size=8)
LESSON = dict(model="mlp", layers=8, hidden=256, microbatch_size=16)  # the lessons' default size
TINY = dict(model="mlp", layers=8, hidden=64, microbatch_size=4)

TARGETS = {"speed_ratio": 0.9, "fidelity_sim": 0.03, "fidelity_wall": 0.05, "overhead": 0.05,
           "growth_sim": 0.10, "memory_flat": 1.10}


def all_schedules() -> tuple[str, ...]:
    """Every registered schedule (engine/schedules), in list order: the fidelity section's."""
    from engine.schedules import REGISTRY
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
    lesson: dict = field(default_factory=dict)
    speed_schedules: list[str] | None = None  # torch class names; None = all five
    fid_schedules: tuple = field(default_factory=all_schedules)
    app_runs: int = 5  # browser runs for app latency (section 4); 0 skips it
    growth_rounds: int = 3  # runs of every growth point (section 5); the median one is reported


def make_plan(quick: bool, tiny: bool) -> Plan:
    if tiny:  # smoke test: everything tiny, every code path once
        return Plan(rounds=1, speed_steps=WARMUP + 1, fid_steps=2, growth_steps=2, growth_m=[4, 8], growth_p=[2],
                    speed_models={"mlp": TINY}, fid_model=TINY, lesson=TINY,
                    speed_schedules=["Schedule1F1B"], fid_schedules=("gpipe", "1f1b", "zb-v"), app_runs=0,
                    growth_rounds=1)
    if quick:
        return Plan(rounds=1, speed_steps=WARMUP + 3, fid_steps=3, growth_steps=3, growth_m=[8, 32], growth_p=[2, 4],
                    speed_models={"mlp": MLP_SPEED, "gpt": GPT_SPEED}, fid_model=MLP_SPEED, lesson=LESSON,
                    app_runs=3, growth_rounds=1)
    return Plan(rounds=5, speed_steps=WARMUP + 5, fid_steps=6, growth_steps=5, growth_m=[8, 32, 128],
                growth_p=[2, 4, 8], speed_models={"mlp": MLP_SPEED, "gpt": GPT_SPEED}, fid_model=MLP_SPEED,
                lesson=LESSON)


def log(msg: str) -> None:
    print(f"[bench {time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


T0 = time.monotonic()


def mp_context():
    """The engine's forkserver, also preloading torch._dynamo (imported by the first
    torch.optim constructor: 1.5-5 s per rank otherwise) and torch's pipelining, so neither
    side pays imports inside its runs. Start-up is not what this benchmark measures."""
    from engine import launch
    ctx = launch._mp_context()
    ctx.set_forkserver_preload(["torch", "torch.distributed", "engine.worker", "torch._dynamo",
                                "torch.distributed.pipelining", "bench.torch_pipelining"])
    return ctx


def ours(schedule: str, steps: int, stages: int = 4, microbatches: int = 8, **model):
    from engine.config import RunConfig
    from engine.launch import run
    return run(RunConfig(schedule=schedule, stages=stages, microbatches=microbatches, steps=steps, **model))


def model_config(model: dict):
    from engine.model import ModelConfig
    keys = ("layers", "hidden", "heads", "seq_len", "microbatch_size")
    return ModelConfig(kind=model["model"], **{k: model[k] for k in keys if k in model})


# ---- 1. speed -------------------------------------------------------------------------

def bench_speed(plan: Plan, ctx) -> dict:
    from bench.torch_pipelining import SCHEDULES, run_torch, single_process_step_times
    names = plan.speed_schedules or list(SCHEDULES)
    out = {}
    for kind, model in plan.speed_models.items():
        mc = model_config(model)
        base = single_process_step_times(mc, 8, plan.speed_steps)[WARMUP:]
        rows = {n: {"ours": [], "ours_device": [], "ours_gloo": [], "theirs": [], "ours_rounds": [],
                    "theirs_rounds": [], "ours_cpu": [], "theirs_cpu": [], "error": None} for n in names}
        for rnd in range(plan.rounds):
            for n in names:  # A B A B: ours, ours through gloo, theirs, ours ... for drift
                row, ours_name = rows[n], SCHEDULES[n][0]
                if row["error"]:
                    continue
                try:
                    r = ours(ours_name, plan.speed_steps, **model)
                    kept = r.metrics["step_times_wall_s"][WARMUP - 1:]
                    row["ours"] += kept
                    row["ours_rounds"].append(statistics.median(kept))
                    row["ours_device"].append(r.metrics["device_step_time_s"])
                    row["ours_cpu"] += r.metrics["cpu_times_s"][WARMUP - 1:]
                    # The same engine with its messages through gloo, as torch's are.
                    g = ours(ours_name, plan.speed_steps, transport="torch", **model)
                    row["ours_gloo"] += g.metrics["step_times_wall_s"][WARMUP - 1:]
                    t, t_cpu = (times[WARMUP:] for times in run_torch(ctx, n, mc, 4, 8, plan.speed_steps))
                    row["theirs"] += t
                    row["theirs_cpu"] += t_cpu
                    row["theirs_rounds"].append(statistics.median(t))
                    log(f"speed {kind} {n} round {rnd}: ours {R.ms(row['ours_rounds'][-1])} theirs {R.ms(row['theirs_rounds'][-1])}")
                except Exception as err:  # noqa: BLE001 - one failure must not lose the report
                    row["error"] = R.error_text(err)
                    log(f"speed {kind} {n} failed: {row['error']}")
        for n, row in rows.items():
            row["ours_median"], row["theirs_median"] = R.median(row["ours"]), R.median(row["theirs"])
            row["ratio"] = (row["ours_median"] / row["theirs_median"]) if row["ours_median"] and row["theirs_median"] else None
            row["ours_gloo_median"] = R.median(row["ours_gloo"])
            row["ours_cpu_median"], row["theirs_cpu_median"] = R.median(row["ours_cpu"]), R.median(row["theirs_cpu"])
            row["cpu_ratio"] = (row["ours_cpu_median"] / row["theirs_cpu_median"]
                                if row["ours_cpu_median"] and row["theirs_cpu_median"] else None)
            row["gloo_ratio"] = (row["ours_gloo_median"] / row["theirs_median"]
                                 if row["ours_gloo_median"] and row["theirs_median"] else None)
            row["verdict"] = R.verdict(row["ratio"], TARGETS["speed_ratio"])
        out[kind] = {"single_process": R.median(base), "single_process_all": base, "rows": rows, "model": model}
    return out


def speed_md(speed: dict) -> str:
    from bench.torch_pipelining import SCHEDULES
    parts = []
    for kind, s in speed.items():
        rows = []
        for n, row in s["rows"].items():
            if row["error"]:
                rows.append([n, SCHEDULES[n][0], "error", "", "", "", "", "", "", "", R.NOT_MEASURED + ": " + row["error"]])
                continue
            rows.append([n, SCHEDULES[n][0], R.ms(row["ours_median"]), R.ms(row["theirs_median"]), R.num(row["ratio"], 3),
                         R.ratio_spread(row["ours_rounds"], row["theirs_rounds"]),
                         f"{R.spread(row['ours_rounds'])} / {R.spread(row['theirs_rounds'])}",
                         f"{R.ms(row['ours_gloo_median'])} ({R.num(row['gloo_ratio'], 2)})",
                         R.ms(R.median(row["ours_device"])),
                         f"{R.ms(row['ours_cpu_median'])} / {R.ms(row['theirs_cpu_median'])} ({R.num(row['cpu_ratio'], 2)})",
                         row["verdict"]])
        parts.append(f"**{kind}** ({_model_text(s['model'])}; p=4, m=8; single process, one thread: "
                     f"**{R.ms(s['single_process'])}**, so the 2-core floor is about {R.ms(s['single_process'] / 2)})\n\n"
                     + R.table(["torch schedule", "our schedule", "ours (wall)", "torch (wall)", "ours / torch",
                                "ours / torch, round by round", "per-round medians ours / torch", "ours through gloo (/ torch)", "ours, device clock",
                                "CPU per step, all ranks: ours / torch (ratio)", "target <= 0.90"], rows))
    return "\n\n".join(parts)


def _model_text(m: dict) -> str:
    if m["model"] == "mlp":
        return (f"mlp: {m['layers']} x Linear({m['hidden']}), GELU after all but the head, "
                f"micro-batch {m['microbatch_size']}")
    return (f"gpt: {m['layers']} blocks, hidden {m['hidden']}, {m['heads']} heads, seq {m['seq_len']}, "
            f"micro-batch {m['microbatch_size']}")


# ---- 2. fidelity, 3. overhead ----------------------------------------------------------

def bench_fidelity(plan: Plan) -> dict:
    out = {"p4": {}, "p2": {}}
    for p, key in ((4, "p4"), (2, "p2")):
        for s in plan.fid_schedules:
            try:
                m = ours(s, plan.fid_steps, stages=p, **plan.fid_model).metrics
            except Exception as err:  # noqa: BLE001
                out[key][s] = {"error": R.error_text(err)}
                log(f"fidelity p={p} {s} failed: {out[key][s]['error']}")
                continue
            row = {k: m[k] for k in ("bubble_fraction", "bubble_fraction_wall", "simulated_bubble_fraction",
                                     "simulated_bubble_fraction_per_action_costs",
                                     "simulated_bubble_fraction_per_step_costs", "formula_bubble_fraction",
                                     "step_time_s", "device_step_time_s", "simulated_step_time_s")}
            row["diff_sim"] = abs(m["bubble_fraction"] - m["simulated_bubble_fraction_per_step_costs"])
            row["diff_sim_action_means"] = abs(m["bubble_fraction"] - m["simulated_bubble_fraction_per_action_costs"])
            row["diff_sim_stage_means"] = abs(m["bubble_fraction"] - m["simulated_bubble_fraction"])
            row["diff_wall"] = abs(m["bubble_fraction"] - m["bubble_fraction_wall"])
            row["verdict"] = R.verdict(row["diff_sim"] if p == 4 else row["diff_wall"],
                                       TARGETS["fidelity_sim"] if p == 4 else TARGETS["fidelity_wall"])
            out[key][s] = row
            log(f"fidelity p={p} {s}: device {row['bubble_fraction']:.3f} "
                f"sim {row['simulated_bubble_fraction_per_step_costs']:.3f} "
                f"(each action's mean {row['simulated_bubble_fraction_per_action_costs']:.3f}, "
                f"per-stage means {row['simulated_bubble_fraction']:.3f}) wall {row['bubble_fraction_wall']:.3f}")
    return out


def fidelity_md(fid: dict) -> str:
    p4 = [[s, "error", "", "", "", "", "", "", "", r["error"]] if "error" in r else
          [s, R.num(r["bubble_fraction"]), R.num(r["simulated_bubble_fraction_per_step_costs"]), R.num(r["diff_sim"]),
           R.num(r["simulated_bubble_fraction_per_action_costs"]), R.num(r["diff_sim_action_means"]),
           R.num(r["simulated_bubble_fraction"]), R.num(r["diff_sim_stage_means"]), R.num(r["formula_bubble_fraction"]),
           r["verdict"]] for s, r in fid["p4"].items()]
    p2 = [[s, "error", "", "", r["error"]] if "error" in r else
          [s, R.num(r["bubble_fraction"]), R.num(r["bubble_fraction_wall"]), R.num(r["diff_wall"]), r["verdict"]]
          for s, r in fid["p2"].items()]
    return ("p=4, m=8 (4 ranks on 2 cores). The simulator is fed this run's measured costs, never its start "
            "times. The target's column plays each measured step with the durations its actions had: the "
            "device clock's own model, so any difference is a wait the schedule does not have, or a stamp "
            "gone wrong. The next two feed one mean cost per action over the measured steps, then one per "
            "stage and kind, as a cost model known before the run would: they show what averaging hides, "
            "the variation from step to step and, per stage, where an action sits in the step (a stage's "
            "first forward of a step runs with cold caches).\n\n"
            + R.table(["schedule", "bubble, device clock", "simulated, each step's own costs", "abs diff",
                       "simulated, each action's mean cost", "abs diff", "simulated, per-stage mean costs",
                       "abs diff", "formula", "target <= 0.03"], p4)
            + "\n\np=2, m=8 (2 ranks on 2 cores: each rank has a core when nothing else runs, so the wall clock "
            "should then agree; other load on the host (see the load average above) breaks that):\n\n"
            + R.table(["schedule", "bubble, device clock", "bubble, wall clock", "abs diff", "target <= 0.05"], p2))


def bench_overhead(plan: Plan) -> dict:
    from engine.actions import KINDS, UPDATE
    out = {}
    for s, p in (("1f1b", 4), ("gpipe", 4), ("zb-h1", 4), ("interleaved", 4), ("1f1b", 2)):
        label = f"{s}, p={p}"
        try:
            r = ours(s, plan.fid_steps, stages=p, **plan.lesson)
        except Exception as err:  # noqa: BLE001
            out[label] = {"error": R.error_text(err)}
            continue
        # The optimizer step after the flush is not a schedule action of synchronous schedules.
        kinds = set(KINDS) if r.schedule.is_async else set(KINDS) - {UPDATE}
        steps = r.measured_steps()
        shares = R.overhead_shares(r.timeline.events, steps, kinds)
        sends = R.send_shares(r.timeline.events, steps, kinds)
        out[label] = {"median": R.median(shares), "max": max(shares) if shares else None,
                      "send_median": R.median(sends), "step_time_s": r.metrics["step_time_s"],
                      "actions_per_rank": len(r.schedule.actions[0])}
        out[label]["verdict"] = R.verdict(out[label]["median"], TARGETS["overhead"])
        log(f"overhead {label}: {R.pct(out[label]['median'])}")
    return out


def overhead_md(ov: dict) -> str:
    rows = [[k, "error", "", "", "", v["error"]] if "error" in v else
            [k, R.pct(v["median"]), R.pct(v["max"]), R.pct(v["send_median"]), R.ms(v["step_time_s"]), v["verdict"]]
            for k, v in ov.items()]
    return R.table(["run (mlp lesson size, m=8)", "overhead, median", "max", "of which posting sends",
                    "step time (wall)", "target <= 5%"], rows)


# ---- 4. app latency -------------------------------------------------------------------

def bench_app_latency(plan: Plan) -> dict:
    """Click Run to timeline drawn in chromium (bench/app_latency.py); skipped with --tiny."""
    if plan.app_runs <= 0:
        return {"error": "skipped (--tiny)"}
    try:
        from bench.app_latency import measure_app_latency
        return measure_app_latency(runs=plan.app_runs, log=log)
    except Exception as err:  # noqa: BLE001 - no chromium, no playwright, a timeout: report, go on
        return {"error": R.error_text(err)}


def app_latency_md(app: dict) -> str:
    if app.get("warm_median_s") is None:
        return f"Not measured: {app.get('error', 'no runs')}."
    rows = [[f"run {i + 1}" + (" (cold: starts the forkserver)" if i == 0 else ""), f"{t:.2f} s"]
            for i, t in enumerate(app["runs"])]
    rows += [["median of runs 2..n (warm)", f"{app['warm_median_s']:.2f} s"],
             ["median of all runs", f"{app['median_s']:.2f} s"],
             ["identical settings again, answered from the cache", f"{R.num(app.get('cached_s'), 2)} s"]]
    return ("Seconds from clicking Run on the default lesson to its timeline chart drawn, in chromium, each "
            "run on a fresh browser session; run i sets hidden width to default + i so the server's cache "
            "does not answer (bench/app_latency.py).\n\n" + R.table(["", "seconds"], rows)
            + f"\n\nTarget: warm median <= {app['target_s']:g} s: {app['verdict']}.")


# ---- 5. growth ------------------------------------------------------------------------

def _growth_row(r) -> dict:
    m = r.metrics
    measured_peaks = [r.memory[k]["peak_activation_bytes"] for k in sorted(r.memory)]
    simulated_peaks = m["simulated_peak_activation_bytes_per_device"]
    row = {"wall": m["step_time_s"], "device": m["device_step_time_s"], "sim": m["simulated_step_time_s"],
           "sim_by_action": m["simulated_step_time_per_action_costs_s"],
           "peak_act": max(measured_peaks), "sim_peak_act": max(simulated_peaks)}
    buffers = [r.memory[k]["message_buffer_bytes"] for k in sorted(r.memory)]
    row["buffers"] = max(buffers) if None not in buffers else None
    # The target: the simulator fed each action's own mean cost, as in section 2. A hidden
    # stall that grows with m or p (a sender blocked on a full channel, a wait the schedule
    # does not have) lengthens the device clock's step and not this prediction.
    row["device_vs_sim"] = row["device"] / row["sim_by_action"] - 1 if row["sim_by_action"] else None
    row["device_vs_stage_means"] = row["device"] / row["sim"] - 1 if row["sim"] else None
    row["verdict"] = R.verdict(abs(row["device_vs_sim"]) if row["device_vs_sim"] is not None else None,
                               TARGETS["growth_sim"])
    row["first_f"] = R.first_forward_ratio(r.timeline.events, r.measured_steps())
    # Memory against the simulator, device by device; the worst device's difference.
    diffs = [a / b - 1 for a, b in zip(measured_peaks, simulated_peaks) if b]
    row["mem_vs_sim"] = max(diffs, key=abs) if diffs else None
    row["mem_verdict"] = R.verdict(abs(row["mem_vs_sim"]) if diffs else None, TARGETS["growth_sim"])
    return row


def median_run(rows: list[dict]) -> dict:
    """Of one point's runs, the median by device vs simulated (its own row, so every figure in
    it comes from one run), with all runs' device vs simulated beside it; an error only if
    every run failed."""
    good = sorted((r for r in rows if "error" not in r), key=lambda r: r["device_vs_sim"] or 0.0)
    if not good:
        return rows[0]
    return dict(good[(len(good) - 1) // 2], device_vs_sim_runs=[r.get("device_vs_sim") for r in rows
                                                                 if "error" not in r])


def bench_growth(plan: Plan) -> dict:
    """Every point of both sweeps, ``plan.growth_rounds`` times over (whole sweeps in turn, so
    a spell of host noise lands on one run of a point, not all of them); per point, the
    median run by device vs simulated (median_run)."""
    runs: dict[str, dict[str, list]] = {"m": {}, "p": {}}
    points = [("m", f"{s} m={m}", s, dict(plan.lesson, stages=4, microbatches=m))
              for s in ("gpipe", "1f1b") for m in plan.growth_m]
    points += [("p", f"1f1b p={p}, layers={2 * p}", "1f1b", dict(plan.lesson, stages=p, layers=2 * p))
               for p in plan.growth_p]
    for round_ in range(plan.growth_rounds):
        for sweep, key, schedule, settings in points:
            try:
                row = _growth_row(ours(schedule, plan.growth_steps, **settings))
            except Exception as err:  # noqa: BLE001
                row = {"error": R.error_text(err)}
            runs[sweep].setdefault(key, []).append(row)
            log(f"growth {key} round {round_}: " + (row["error"] if "error" in row else R.pct(row["device_vs_sim"])))
    out = {sweep: {key: median_run(rows) for key, rows in by_key.items()} for sweep, by_key in runs.items()}
    # 1F1B keeps at most p micro-batches in flight: its peak memory should not grow with m,
    # neither its activations nor the message slots its channels hold (engine/slots.py).
    ones = [v for k, v in out["m"].items() if k.startswith("1f1b") and "error" not in v]
    for key, name in (("peak_act", "memory_flat"), ("buffers", "buffers_flat")):
        flat = ones[-1][key] / ones[0][key] if len(ones) > 1 and ones[0][key] else None
        out[f"{name}_ratio"] = flat
        out[f"{name}_verdict"] = R.verdict(flat, TARGETS["memory_flat"])
    return out


def _with_runs(v: dict) -> str:
    runs = v.get("device_vs_sim_runs") or []
    return R.pct(v["device_vs_sim"]) + (f" (runs: {', '.join(R.pct(x) for x in runs)})" if len(runs) > 1 else "")


def growth_md(g: dict) -> str:
    def rows(d):
        return [[k, "error", "", "", "", "", "", "", "", "", "", "", "", v["error"]] if "error" in v else
                [k, R.ms(v["wall"]), R.ms(v["device"]), R.ms(v["sim_by_action"]), _with_runs(v),
                 v["verdict"], R.ms(v["sim"]), R.pct(v.get("device_vs_stage_means")), R.num(v["first_f"], 1),
                 R.mib(v["peak_act"]), R.mib(v["sim_peak_act"]), R.pct(v["mem_vs_sim"]), v["mem_verdict"],
                 R.mib(v.get("buffers"))]
                for k, v in d.items()]
    head = ["run", "step, wall", "step, device clock", "step, simulated (each action's mean cost)",
            "device vs simulated", "target abs <= 10%", "step, simulated with per-stage mean costs (reference)",
            "device vs that", "first F of a step / median F", "peak activations (worst rank)", "simulated",
            "measured vs simulated (worst rank)", "target abs <= 10%", "message slots (worst rank)"]
    return ("Each point ran in every round of the sweeps; the row is the run with the median device vs "
            "simulated (all runs' figures in parentheses), so a spell of host noise during one run does not "
            "decide.\n\nAs m grows (p=4, mlp lesson size):\n\n" + R.table(head, rows(g["m"]))
            + f"\n\n1F1B peak activation memory, largest m / smallest m: {R.num(g['memory_flat_ratio'], 2)} "
              f"(target <= {TARGETS['memory_flat']:.2f}: {g['memory_flat_verdict']}); its message slots: "
              f"{R.num(g.get('buffers_flat_ratio'), 2)} ({g.get('buffers_flat_verdict', R.NOT_MEASURED)})"
            + "\n\nAs p grows at fixed work per device (layers = 2p, m=8):\n\n" + R.table(head, rows(g["p"]))
            + "\n\nThe prediction is the simulator fed each action's own mean cost over the measured "
              "steps, as in section 2: a stall that grows with m or p and that the schedule does not have "
              "(a sender blocked on a full channel, a wait on the wrong message) lengthens the device "
              "clock's step and not the prediction. The reference column feeds one mean per stage and "
              "kind instead, as the app's \"simulated\" chart. An action that waited for its input runs "
              "with its caches cold (the column \"first F of a step / median F\" shows it for the "
              "clearest case, the fill); waiting actions are the ones on the critical path, so there the "
              "device clock's step exceeds the per-stage prediction, by an amount that moves from run to "
              "run with the host's load.")


# ---- summary and report -----------------------------------------------------------------

def summary_rows(results: dict) -> list[list]:
    rows = []
    for kind, s in results["speed"].items():
        ratios = [r["ratio"] for r in s["rows"].values() if r["ratio"] is not None]
        verdicts = [r["verdict"] for r in s["rows"].values()]
        measured = ", ".join(f"{n.replace('Schedule', '')} {R.num(r['ratio'], 3)}" for n, r in s["rows"].items())
        rows.append([f"Step time ours / torch.distributed.pipelining, {kind}, p=4 m=8", measured or "—",
                     "<= 0.90 each", f"{R.all_met(verdicts)} ({R.count_met(verdicts)})" if ratios else R.NOT_MEASURED])
        gloo = ", ".join(f"{n.replace('Schedule', '')} {R.num(r.get('gloo_ratio'), 2)}" for n, r in s["rows"].items())
        rows.append([f"Same, ours with messages through gloo too (`--transport torch`), {kind}", gloo or "—",
                     "reference, no target", "—"])
        cpu = ", ".join(f"{n.replace('Schedule', '')} {R.num(r.get('cpu_ratio'), 2)}" for n, r in s["rows"].items())
        rows.append([f"Host CPU per step, all ranks, ours / torch, {kind}", cpu or "—", "reference, no target", "—"])
        best = min((r["ours_median"] for r in s["rows"].values() if r["ours_median"]), default=None)
        rows.append([f"One process, one thread, same step ({kind})",
                     f"{R.ms(s['single_process'])} (best pipeline: {R.ms(best)})", "reference, no target", "—"])
    p4 = [r for r in results["fidelity"]["p4"].values() if "error" not in r]
    for key, label, target in (("p4", "Bubble: device clock vs simulator (each step's own costs), p=4, max abs diff",
                                "fidelity_sim"),
                               ("p2", "Bubble: device vs wall clock, p=2, max abs diff", "fidelity_wall")):
        d = results["fidelity"][key]
        diffs = [r["diff_sim" if key == "p4" else "diff_wall"] for r in d.values() if "error" not in r]
        verdicts = [r.get("verdict", R.NOT_MEASURED) for r in d.values()]
        rows.append([label, R.num(max(diffs)) if diffs else "—", f"<= {TARGETS[target]:.2f} each",
                     f"{R.all_met(verdicts)} ({R.count_met(verdicts)})"])
        if key == "p4":
            for diff, fed in (("diff_sim_action_means", "each action's mean cost"),
                              ("diff_sim_stage_means", "per-stage mean costs")):
                within = sum(r[diff] <= TARGETS[target] for r in p4)
                rows.append([f"Same, simulator fed {fed} (averages away the steps' variation)",
                             f"{R.num(max(r[diff] for r in p4))} ({within}/{len(p4)} within "
                             f"{TARGETS[target]:.2f})" if p4 else "—", "reference, no target", "—"])
    ov = results["overhead"].get("1f1b, p=4", {})
    rows.append(["Executor overhead, share of step (1f1b, p=4, lesson size)", R.pct(ov.get("median")), "<= 5%",
                 ov.get("verdict", R.NOT_MEASURED)])
    app = results.get("app_latency") or {}
    if app.get("warm_median_s") is not None:
        rows.append(["App latency: click Run to timeline drawn, default lesson (browser)",
                     f"median {app['warm_median_s']:.2f} s (cold first run {app['cold_s']:.2f} s, "
                     f"from cache {R.num(app.get('cached_s'), 2)} s)", "median <= 5 s", app["verdict"]])
    else:
        rows.append(["App latency (browser)", app.get("error", "not measured"), "median <= 5 s", R.NOT_MEASURED])
    g = results["growth"]
    runs = [v for d in (g["m"], g["p"]) for v in d.values()]

    def worst(key):
        return max((abs(v[key]) for v in runs if v.get(key) is not None), default=None)

    gv = [v["verdict"] for v in runs if "verdict" in v]
    rows.append(["Growth: device step time vs simulator (each action's mean cost; m and p sweeps, median run of each point)",
                 f"worst {R.pct(worst('device_vs_sim'))}", "abs <= 10% each", f"{R.all_met(gv)} ({R.count_met(gv)})"])
    rows.append(["Same, simulator fed per-stage mean costs", f"worst {R.pct(worst('device_vs_stage_means'))}",
                 "reference, no target", "—"])
    rows += overlap.summary_rows(results.get("overlap"))
    mv = [v["mem_verdict"] for v in runs if "mem_verdict" in v]
    rows.append(["Growth: peak activations per device vs simulator (m and p sweeps)", f"worst {R.pct(worst('mem_vs_sim'))}",
                 "abs <= 10% each", f"{R.all_met(mv)} ({R.count_met(mv)})"])
    rows.append(["Growth: 1F1B peak activations, largest m / smallest m", R.num(g["memory_flat_ratio"], 2), "<= 1.10",
                 g["memory_flat_verdict"]])
    rows.append(["Growth: 1F1B message slots per rank, largest m / smallest m", R.num(g.get("buffers_flat_ratio"), 2),
                 "<= 1.10", g.get("buffers_flat_verdict", R.NOT_MEASURED)])
    return rows


def summary_md(results: dict) -> str:
    mach = results["machine"]
    return (f"Measured by `bench/run.py{' --quick' if results['quick'] else ''}` on {mach['date']}: {mach['cpu']}, "
            f"{mach['cores']} cores, {mach['ram']} RAM, torch {mach['torch']}. Details: [bench/RESULTS.md](bench/RESULTS.md).\n\n"
            + R.table(["figure", "measured", "target", "verdict"], summary_rows(results)))


METHOD = """\
## How each figure is measured

- **Step time.** Ours: the engine's `step_time_s` definition (earliest action start to latest action
  end on the wall clock, all ranks of one host share CLOCK_MONOTONIC), excluding the optimizer step.
  torch: every rank notes `time.monotonic()` right after a barrier and right after
  `schedule.step(x, target=y, losses=[])`; step time = latest end - earliest start. Both sides run
  one process per rank from the same forkserver (torch, torch._dynamo and torch's pipelining
  preloaded), gloo for collectives (and for all of torch's messages; ours pass theirs through shared
  memory, or gloo in the "through gloo" column), one compute thread per rank, the same layers and weights (the engine's model
  with `DeferrableLinear` turned back into `nn.Linear` on the torch side; ours runs it as `nn.Linear`
  too, except on stages whose schedule splits the backward), the same stages (the
  engine's default split, by parameter count) and the same micro-batches. The first {warmup} steps are dropped on both sides. Runs
  alternate ours, ours through gloo, torch, ours ... for every schedule and round so drift hits all; the
  median is over all kept steps of all rounds; "round by round" gives the lowest and highest
  ratio of one round's medians, ours against the torch run right after it. The single-process figure is F and B of all m
  micro-batches through the whole model in one process with `torch.set_num_threads(1)`.
- **CPU per step.** Ours: the engine's `cpu_times_s`, each rank's `time.process_time()` (its
  process, all threads) from the start of the step's pipeline work to its last action, summed over
  ranks. torch: each rank's `time.process_time()` over `schedule.step()`, summed over ranks. Same
  kept steps as the step time. With more runnable ranks than cores the cores are busy for most of
  a step, so the wall clock follows this figure.
- **Fidelity.** From the engine's own metrics: `bubble_fraction` (device clock: each action lasts
  its thread CPU time, the executor's own CPU time between actions moves the clock on without
  counting as busy, messages carry clock stamps; per device the median over the measured steps,
  then the mean over devices, as for `bubble_fraction_wall`), `simulated_bubble_fraction_per_step_costs`
  (the target's column: the simulator plays each measured step with its actions' own durations and
  host times, reduced over steps the same way), `simulated_bubble_fraction_per_action_costs` (fed
  each action's mean cost and host time over the measured steps, keyed by kind, stage and
  micro-batch), `simulated_bubble_fraction` (fed one mean per stage and kind, and one host time per
  stage, as the app's "simulated" chart) and `bubble_fraction_wall`. The two targets test the
  device clock from two sides: at p=4, its bookkeeping (the ranks compute it from stamps on
  messages, the simulator from the schedule's dependencies; fed the same durations, every action
  lands at the same time, `tests/test_engine_run.py`, unless a rank waited outside its schedule or
  a stamp went wrong); at p=2, its durations (where each rank has a core, the wall clock should
  show the same bubble). The mean-cost columns are what a cost model known before the run
  predicts. They sit below the device clock: in each step an action waits for its inputs' actual,
  varying times, and a mean of maxima exceeds the maximum of the means, by more the more the host
  disturbs the steps. "formula" is `engine/theory.py` with the run's mean F, I and W, for one
  synchronous step (ZB-H2 and ZB-V keep the (p-1) T_F at the step's ends). `engine/breakdown.py`
  splits the gap between the formula and the device clock effect by effect, for any run (a chart
  in the app).
- **Overhead.** For every rank and measured step: (wall span of the rank's events - the wall
  durations of its compute actions - the wall time it waited in receives) / wall span. What is
  left is the executor's own work between actions: building messages, posting sends, recording
  events, counting the activations each action saved or freed and sampling memory, progress
  reports. Inside an action there is only the saved-tensor hook that notes each tensor autograd
  keeps (`engine/memory.py`); the counting runs after the action's stopwatch stops. It is an
  upper bound of the executor's cost: on 4 ranks over 2 cores a rank descheduled *between* two
  actions also lands here. The p=2 row (one core per rank) has no such time, but less of its span
  is waiting for messages, so the same work per action is a larger share of it.
- **Growth.** Both sweeps run three times over, one whole sweep after the other; per point the
  table reports the run with the median device vs simulated and lists all three. From each
  run: `step_time_s` (wall), `device_step_time_s`, `simulated_step_time_per_action_costs_s`
  (the target's prediction) and `simulated_step_time_s` (per-stage means, reference); peak
  activation bytes are the worst rank's `peak_activation_bytes`, next to the worst rank's
  `simulated_peak_activation_bytes_per_device` (the simulator's schedule with the bytes one
  micro-batch's F kept on each stage in this run). Memory changes only at a rank's own actions, so
  the two agree exactly unless the engine holds or frees activations other than as the schedule
  says.
"""


def results_md(results: dict) -> str:
    mach = results["machine"]
    lines = [
        "# PipeLab benchmark results", "",
        f"Written by `bench/run.py{' --quick' if results['quick'] else ''}` (took {results['seconds']:.0f} s).", "",
        "## Machine", "",
        R.table(["", ""], [["CPU", mach["cpu"]], ["cores", mach["cores"]], ["RAM", mach["ram"]],
                           ["Python", mach["python"]], ["torch", mach["torch"]], ["OS", mach["os"]],
                           ["date", mach["date"]], ["load average at start", mach["load"]]]), "",
        "All ranks share these cores: with p=4 on 2 cores the wall clock includes waiting for a core "
        "(design.md, \"Measuring honestly\"). Numbers vary run to run by tens of percent when other "
        "work runs on the host; compare within one run.", "",
        "## Summary", "", R.table(["figure", "measured", "target", "verdict"], summary_rows(results)), "",
        "## 1. Engine speed vs torch.distributed.pipelining (CPU)", "",
        "Ours runs as users run it: its ranks (started by `engine.launch.run`) pass stage-boundary "
        "messages through shared memory and use gloo for the per-step all-reduce. torch's pipelining "
        "sends everything through gloo. The column \"ours through gloo\" is our engine with "
        "`transport=\"torch\"`, so the schedules and executors compare on the same transport.", "",
        "Mapping: ScheduleGPipe = gpipe, Schedule1F1B = 1f1b, ScheduleInterleaved1F1B = interleaved (v=2), "
        "ScheduleInterleavedZeroBubble = zb-h1 (closest: ours is the 1-chunk ZB-H1, torch's is interleaved "
        "with v=2), ScheduleZBVZeroBubble = zb-v.", "",
        speed_md(results["speed"]), "",
        "Why one process can win: 4 ranks share 2 cores, so at best the pipeline runs 2 stages at once "
        "(the floor is half the single-process time) while it adds bubbles, messages "
        "and 4 Python interpreters' worth of overhead. The pipeline pays off when each stage has its own "
        "device; the device-clock column shows the step the same schedule would take then.", "",
        "## 2. Measurement fidelity", "", fidelity_md(results["fidelity"]), "",
        "## 3. Executor overhead", "", overhead_md(results["overhead"]), "",
        "## 4. App latency", "", app_latency_md(results.get("app_latency") or {}), "",
        "## 5. Growth", "", growth_md(results["growth"]), "",
        "## 6. Overlapping steps", "", overlap.section_md(results.get("overlap")), "",
        METHOD.format(warmup=WARMUP), "",
        f"README: {results['readme']}", "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and configs (~2 min)")
    ap.add_argument("--tiny", action="store_true", help="a tiny smoke configuration (tests)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--json", default=None, help="also write the raw numbers here")
    args = ap.parse_args(argv)
    plan = make_plan(args.quick or args.tiny, args.tiny)
    started = time.monotonic()
    results = {"quick": args.quick or args.tiny, "machine": R.machine_description()}
    ctx = mp_context()
    results["speed"] = bench_speed(plan, ctx)
    results["fidelity"] = bench_fidelity(plan)
    results["overhead"] = bench_overhead(plan)
    results["growth"] = bench_growth(plan)
    results["overlap"] = overlap.bench_overlap(plan.growth_rounds, tiny=plan.lesson is TINY, log=log)
    results["app_latency"] = bench_app_latency(plan)
    results["seconds"] = time.monotonic() - started
    results["readme"] = R.update_readme(args.readme, summary_md(results))
    text = results_md(results)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    log(f"wrote {args.out}; {results['readme']}")
    print(R.table(["figure", "measured", "target", "verdict"], summary_rows(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
