"""Figure 1: step time of our engine against torch.distributed.pipelining and one process."""

from __future__ import annotations

import statistics

from bench import report as R
from bench.measure import log, model_config, model_text, ours
from bench.plan import TARGETS, WARMUP, Plan
from pipelab.engine.results.windows import WARM_UP_STEPS

HEADING = "1. Engine speed vs torch.distributed.pipelining (CPU)"


def measure(plan: Plan, ctx) -> dict:
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
                    # A run's own figures already leave out its WARM_UP_STEPS.
                    kept = r.metrics.wall_step_times_s[WARMUP - WARM_UP_STEPS:]
                    row["ours"] += kept
                    row["ours_rounds"].append(statistics.median(kept))
                    row["ours_device"].append(r.metrics.device_step_time_s)
                    row["ours_cpu"] += r.metrics.cpu_times_s[WARMUP - WARM_UP_STEPS:]
                    # The same engine with its messages through gloo, as torch's are.
                    g = ours(ours_name, plan.speed_steps, transport="torch", **model)
                    row["ours_gloo"] += g.metrics.wall_step_times_s[WARMUP - WARM_UP_STEPS:]
                    t, t_cpu = (times[WARMUP:] for times in run_torch(ctx, n, mc, 4, 8, plan.speed_steps))
                    row["theirs"] += t
                    row["theirs_cpu"] += t_cpu
                    row["theirs_rounds"].append(statistics.median(t))
                    log(f"speed {kind} {n} round {rnd}: ours {R.ms(row['ours_rounds'][-1])} "
                        f"theirs {R.ms(row['theirs_rounds'][-1])}")
                except Exception as err:  # noqa: BLE001 - one failure must not lose the report
                    row["error"] = R.error_text(err)
                    log(f"speed {kind} {n} failed: {row['error']}")
        for row in rows.values():
            _finish_row(row)
        out[kind] = {"single_process": R.median(base), "single_process_all": base, "rows": rows, "model": model}
    return out


def _finish_row(row: dict) -> None:
    """Medians, ratios and the verdict of one schedule's runs."""
    row["ours_median"], row["theirs_median"] = R.median(row["ours"]), R.median(row["theirs"])
    row["ratio"] = (row["ours_median"] / row["theirs_median"]) if row["ours_median"] and row["theirs_median"] else None
    row["ours_gloo_median"] = R.median(row["ours_gloo"])
    row["ours_cpu_median"], row["theirs_cpu_median"] = R.median(row["ours_cpu"]), R.median(row["theirs_cpu"])
    row["cpu_ratio"] = (row["ours_cpu_median"] / row["theirs_cpu_median"]
                        if row["ours_cpu_median"] and row["theirs_cpu_median"] else None)
    row["gloo_ratio"] = (row["ours_gloo_median"] / row["theirs_median"]
                         if row["ours_gloo_median"] and row["theirs_median"] else None)
    row["verdict"] = R.verdict(row["ratio"], TARGETS["speed_ratio"])


def tables_md(speed: dict) -> str:
    from bench.torch_pipelining import SCHEDULES
    parts = []
    for kind, s in speed.items():
        rows = []
        for n, row in s["rows"].items():
            if row["error"]:
                rows.append([n, SCHEDULES[n][0], "error", "", "", "", "", "", "", "",
                             R.NOT_MEASURED + ": " + row["error"]])
                continue
            rows.append([n, SCHEDULES[n][0], R.ms(row["ours_median"]), R.ms(row["theirs_median"]),
                         R.num(row["ratio"], 3),
                         R.ratio_spread(row["ours_rounds"], row["theirs_rounds"]),
                         f"{R.spread(row['ours_rounds'])} / {R.spread(row['theirs_rounds'])}",
                         f"{R.ms(row['ours_gloo_median'])} ({R.num(row['gloo_ratio'], 2)})",
                         R.ms(R.median(row["ours_device"])),
                         f"{R.ms(row['ours_cpu_median'])} / {R.ms(row['theirs_cpu_median'])} "
                         f"({R.num(row['cpu_ratio'], 2)})",
                         row["verdict"]])
        parts.append(f"**{kind}** ({model_text(s['model'])}; p=4, m=8; single process, one thread: "
                     f"**{R.ms(s['single_process'])}**, so the 2-core floor is about "
                     f"{R.ms(s['single_process'] / 2)})\n\n"
                     + R.table(["torch schedule", "our schedule", "ours (wall)", "torch (wall)", "ours / torch",
                                "ours / torch, round by round", "per-round medians ours / torch",
                                "ours through gloo (/ torch)", "ours, device clock",
                                "CPU per step, all ranks: ours / torch (ratio)", "target <= 0.90"], rows))
    return "\n\n".join(parts)


def section_md(speed: dict) -> str:
    return "\n".join([
        "Ours runs as users run it: its ranks (started by `pipelab.engine.runtime.launch.run`) pass stage-boundary "
        "messages through shared memory and use gloo for the per-step all-reduce. torch's pipelining "
        "sends everything through gloo. The column \"ours through gloo\" is our engine with "
        "`transport=\"torch\"`, so the schedules and executors compare on the same transport.", "",
        "Mapping: ScheduleGPipe = gpipe, Schedule1F1B = 1f1b, ScheduleInterleaved1F1B = interleaved (v=2), "
        "ScheduleInterleavedZeroBubble = zb-h1 (closest: ours is the 1-chunk ZB-H1, torch's is interleaved "
        "with v=2), ScheduleZBVZeroBubble = zb-v.", "",
        tables_md(speed), "",
        "Why one process can win: 4 ranks share 2 cores, so at best the pipeline runs 2 stages at once "
        "(the floor is half the single-process time) while it adds bubbles, messages "
        "and 4 Python interpreters' worth of overhead. The pipeline pays off when each stage has its own "
        "device; the device-clock column shows the step the same schedule would take then."])


def summary_rows(speed: dict) -> list[list]:
    rows = []
    for kind, s in speed.items():
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
    return rows


METHOD = """\
- **Step time.** Ours: the engine's `step_time_s` definition (earliest action start to latest action
  end on the wall clock, all ranks of one host share CLOCK_MONOTONIC), excluding the optimizer step.
  torch: every rank notes `time.monotonic()` right after a barrier and right after
  `schedule.step(x, target=y, losses=[])`; step time = latest end - earliest start. Both sides run
  one process per rank from the same forkserver (torch, torch._dynamo and torch's pipelining
  preloaded), gloo for collectives (and for all of torch's messages; ours pass theirs through shared
  memory, or gloo in the "through gloo" column), one compute thread per rank, the same layers and
  weights (the engine's model with `DeferrableLinear` turned back into `nn.Linear` on the torch side;
  ours runs it as `nn.Linear` too, except on stages whose schedule splits the backward), the same
  stages (the engine's default split, by parameter count) and the same micro-batches. The first
  {warmup} steps are dropped on both sides. Runs alternate ours, ours through gloo, torch, ours ...
  for every schedule and round so drift hits all; the median is over all kept steps of all rounds;
  "round by round" gives the lowest and highest ratio of one round's medians, ours against the torch
  run right after it. The single-process figure is F and B of all m micro-batches through the whole
  model in one process with `torch.set_num_threads(1)`.
- **CPU per step.** Ours: the engine's `cpu_times_s`, each rank's `time.process_time()` (its
  process, all threads) from the start of the step's pipeline work to its last action, summed over
  ranks. torch: each rank's `time.process_time()` over `schedule.step()`, summed over ranks. Same
  kept steps as the step time. With more runnable ranks than cores the cores are busy for most of
  a step, so the wall clock follows this figure.""".format(warmup=WARMUP)
