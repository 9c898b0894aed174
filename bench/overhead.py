"""Figure 3: the executor's own overhead, the share of a rank's step spent between actions."""

from __future__ import annotations

from bench import report as R
from bench.measure import log, model_text, ours
from bench.plan import SMALL_MLP, TARGETS, Plan

HEADING = "3. Executor overhead"
RUNS = (("1f1b", 4), ("gpipe", 4), ("zb-h1", 4), ("interleaved", 4), ("1f1b", 2))
SUMMARY_RUN = "1f1b, p=4"


def measure(plan: Plan) -> dict:
    from pipelab.engine.actions import KINDS, UPDATE
    out = {}
    for s, p in RUNS:
        label = f"{s}, p={p}"
        try:
            r = ours(s, plan.fid_steps, stages=p, **plan.small)
        except Exception as err:  # noqa: BLE001
            out[label] = {"error": R.error_text(err)}
            continue
        # The optimizer step after the flush is not a schedule action of synchronous schedules.
        kinds = set(KINDS) if r.schedule.is_async else set(KINDS) - {UPDATE}
        steps = r.measured_steps()
        shares = R.overhead_shares(r.timeline.events, steps, kinds)
        sends = R.send_shares(r.timeline.events, steps, kinds)
        out[label] = {"median": R.median(shares), "max": max(shares) if shares else None,
                      "send_median": R.median(sends), "step_time_s": r.metrics.wall_step_time_s,
                      "actions_per_rank": len(r.schedule.actions[0])}
        out[label]["verdict"] = R.verdict(out[label]["median"], TARGETS["overhead"])
        log(f"overhead {label}: {R.pct(out[label]['median'])}")
    return out


def section_md(ov: dict) -> str:
    rows = [[k, "error", "", "", "", v["error"]] if "error" in v else
            [k, R.pct(v["median"]), R.pct(v["max"]), R.pct(v["send_median"]), R.ms(v["step_time_s"]), v["verdict"]]
            for k, v in ov.items()]
    return R.table(["run (small mlp, m=8)", "overhead, median", "max", "of which posting sends", "step time (wall)",
                    "target <= 5%"], rows)


def summary_rows(ov: dict) -> list[list]:
    row = ov.get(SUMMARY_RUN, {})
    return [[f"Executor overhead, share of step ({SUMMARY_RUN}, small mlp)", R.pct(row.get("median")), "<= 5%",
             row.get("verdict", R.NOT_MEASURED)]]


METHOD = """\
- **Overhead.** For every rank and measured step: (wall span of the rank's events - the wall
  durations of its compute actions - the wall time it waited in receives) / wall span. What is
  left is the executor's own work between actions: building messages, posting sends, recording
  events, counting the activations each action saved or freed and sampling memory, progress
  reports. Inside an action there is only the saved-tensor hook that notes each tensor autograd
  keeps (`engine/runtime/memory.py`); the counting runs after the action's stopwatch stops. It is an
  upper bound of the executor's cost: on 4 ranks over 2 cores a rank descheduled *between* two
  actions also lands here. The p=2 row (one core per rank) has no such time, but less of its span
  is waiting for messages, so the same work per action is a larger share of it. The model is the
  small mlp ({small}), smaller than the lessons' default: its actions are short, so the
  executor's fixed cost per action weighs more here than in a lesson's run.""".format(small=model_text(SMALL_MLP))
