"""Overlapping steps, measured: each schedule's bubble with a barrier between steps and
without, in the same benchmark run (engine/schedules/stream.py).

Three pairs (p=4, m=8), two at their lesson's own defaults, read from the lessons so the
figure measures what the lesson claims, and one at ``pipelab run``'s:

- ZB-H2 with barriers vs ZB-H2 with overlapping steps: the paper's claim that with the
  optimizer's synchronization gone (post-validation) the parallelograms tile
  (arXiv 2401.10241, section 4), at lesson 6's size and at the command line's (half the
  rows per micro-batch, so each action is half as long and the engine's own time between
  actions weighs twice as much). ZB-H2 is built for costs one profiled step measured, as
  the page and the command line build it (engine/runtime/profile_costs.py), once per pair,
  so both sides run the same order;
- 1F1B (PipeDream-Flush) vs PipeDream: the same 1F1B order without the flush
  (arXiv 1806.03377, section 3).

Target: the overlapped bubble (device clock, the steady steps) at most half of its pair's.
Every configuration runs ``rounds`` times, the rounds interleaved so that a spell of host
noise falls on both sides of a pair, and each reports its median run. Beside the measured
ratio stands theory's at the median runs' own costs (the simulator fed each run's per-stage
mean costs and the engine's time after each action): where that is near 0.5 already, the
target is at the edge of what the costs allow, whatever the engine does.

``python -m bench.overlap --out bench/OVERLAP.md`` writes the section with the machine it
ran on; bench/run.py puts it in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

if __package__ in (None, ""):  # run as a script: make "bench", "engine" and "lessons" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import report as R  # noqa: E402
from pipelab.lessons import Knobs, get_lesson  # noqa: E402

HEADING = "6. Overlapping steps"
STEPS = 6  # steady steps 1..4 (pipelab.engine.results.timeline.steady_steps)
TARGET = 0.5


COMMAND_LINE = None
"""Pair.lesson for a pair at ``pipelab run``'s defaults (pipelab.engine.config.COMMAND_LINE_DEFAULTS)."""


@dataclass(frozen=True)
class Pair:
    """Two runs of one size, with a barrier between steps and without."""
    label: str
    lesson: str | None
    """The lesson whose defaults (model, depth, width, rows) the pair runs at: the claim is
    made there, so the figure reads them and cannot measure another size after a change.
    COMMAND_LINE: the command line's defaults, read from where ``pipelab run`` reads them."""
    barrier: tuple[str, bool]
    """(schedule, overlap_steps)"""
    overlapped: tuple[str, bool]

    @property
    def knobs(self) -> Knobs:
        if self.lesson is COMMAND_LINE:
            from pipelab.engine.config import COMMAND_LINE_DEFAULTS
            return Knobs(**{k: v for k, v in COMMAND_LINE_DEFAULTS.items() if k != "steps"})
        return get_lesson(self.lesson).defaults

    @property
    def size(self) -> dict:
        k = self.knobs
        return dict(model=k.model, hidden=k.hidden, microbatch_size=k.microbatch_size)

    @property
    def where(self) -> str:
        """Whose defaults the pair runs at, as the report names them."""
        return "the command line's" if self.lesson is COMMAND_LINE else f"the {self.lesson} lesson's"


PAIRS = (Pair("ZB-H2: barrier vs overlapping", "zero-bubble", ("zb-h2", False), ("zb-h2", True)),
         Pair("ZB-H2 at the command line: barrier vs overlapping", COMMAND_LINE, ("zb-h2", False), ("zb-h2", True)),
         Pair("1F1B vs PipeDream (no flush)", "pipedream", ("1f1b", False), ("pipedream", False)))


TINY = dict(model="mlp", hidden=64, microbatch_size=4)  # the smoke test's: every code path once
TINY_DEPTHS = (4,)


def measure(plan) -> dict:
    """The figure at the plan's rounds (its growth rounds) and size (tiny for the smoke test)."""
    from bench.measure import log
    return bench_overlap(plan.growth_rounds, tiny=plan.tiny, log=log)


def bench_overlap(rounds: int, tiny: bool = False, log=print, depths: tuple[int, ...] | None = None,
                  pairs: tuple = PAIRS) -> dict:
    """{pair label: {layers: {...}}} with each side's median-run bubbles and the verdict."""
    from pipelab.engine.config import RunConfig
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.runtime.paired import profiled
    out: dict = {}
    for pair in pairs:
        label, barrier, overlapped = pair.label, pair.barrier, pair.overlapped
        size, steps = (TINY, 3) if tiny else (pair.size, STEPS)
        out[label] = {}
        for layers in (TINY_DEPTHS if tiny else depths or (pair.knobs.layers,)):
            runs: dict = {"barrier": [], "overlapped": []}
            try:
                # A cost-aware schedule (ZB-H2) built once for both sides, as a page builds it.
                sides = dict(zip(("barrier", "overlapped"), profiled(
                    [RunConfig(schedule=schedule, stages=4, microbatches=8, steps=steps, overlap_steps=overlap,
                               layers=layers, **size) for schedule, overlap in (barrier, overlapped)])))
                for _ in range(rounds):
                    for side, config in sides.items():
                        result = run(config)
                        m = result.metrics
                        runs[side].append({"bubble": m.device_bubble_fraction, "wall": m.wall_bubble_fraction,
                                           "simulated": m.simulated_bubble_fraction,
                                           "formula": m.formula_bubble_fraction,
                                           # how much colder a step's first forward runs (bench/report.py)
                                           "first_f": R.first_forward_ratio(result.timeline.events,
                                                                            result.measured_steps())})
            except Exception as err:  # one line in the report, the other figures still run
                out[label][layers] = {"error": R.error_text(err)}
                continue
            out[label][layers] = {**pair_row(runs["barrier"], runs["overlapped"]),
                                  "size": size if tiny else {"defaults": pair.where, **size}}
            log(f"overlap {label}, {layers} layers: {out[label][layers]['barrier']['bubble']:.3f} -> "
                f"{out[label][layers]['overlapped']['bubble']:.3f}")
    return out


def median_run(runs: list[dict]) -> dict:
    """The run whose device-clock bubble is the median (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda r: r["bubble"])
    return {**ordered[(len(ordered) - 1) // 2], "runs": [r["bubble"] for r in runs]}


def pair_row(barrier_runs: list[dict], overlapped_runs: list[dict]) -> dict:
    """Each side's median run, their ratio and its verdict, and theory's ratio at those runs' own costs."""
    barrier, overlapped = median_run(barrier_runs), median_run(overlapped_runs)
    ratio = overlapped["bubble"] / barrier["bubble"] if barrier["bubble"] > 0 else None
    simulated = barrier.get("simulated")
    theory = overlapped["simulated"] / simulated if simulated else None
    return {"barrier": barrier, "overlapped": overlapped, "ratio": ratio, "simulated_ratio": theory,
            "verdict": R.verdict(ratio, TARGET) if ratio is not None else R.NOT_MEASURED}


def size_text(row: dict) -> str:
    """The model and micro-batch a pair ran at, as the report names it."""
    size = row.get("size")
    if not size:  # a result written before sizes were recorded
        return "size not recorded"
    whose = f"{size['defaults']} defaults: " if "defaults" in size else ""
    return f"{whose}{size['model']} width {size['hidden']}, {size['microbatch_size']} rows per micro-batch"


def summary_rows(results: dict | None) -> list[list]:
    rows = []
    for label, by_depth in (results or {}).items():
        ok = {d: r for d, r in by_depth.items() if "error" not in r}
        measured = ", ".join(f"{d} layers {R.num(r['barrier']['bubble'])} -> {R.num(r['overlapped']['bubble'])} "
                             f"({R.num(r['ratio'], 2)})" for d, r in ok.items())
        verdicts = [r.get("verdict", R.NOT_MEASURED) for r in by_depth.values()]
        sizes = sorted({size_text(r) for r in ok.values()})
        rows.append([f"Overlapping steps, device-clock bubble, {label}, {'; '.join(sizes) or 'not run'} (ratio)",
                     measured or "; ".join(r["error"] for r in by_depth.values()),
                     f"ratio <= {TARGET:.2f} each", f"{R.all_met(verdicts)} ({R.count_met(verdicts)})"])
    return rows


def section_md(results: dict | None) -> str:
    if not results:
        return "Not measured."
    rows = []
    for label, by_depth in results.items():
        for depth, r in by_depth.items():
            if "error" in r:
                rows.append([label, depth, r["error"], "", "", "", "", R.NOT_MEASURED])
                continue
            b, o = r["barrier"], r["overlapped"]
            rows.append([f"{label} ({size_text(r)})", depth,
                         f"{R.num(b['bubble'])} (wall {R.num(b['wall'])}, simulated {R.num(b['simulated'])}, "
                         f"formula {R.num(b['formula'])})",
                         f"{R.num(o['bubble'])} (wall {R.num(o['wall'])}, simulated {R.num(o['simulated'])}, "
                         f"formula {R.num(o['formula'])}; first F of a step / median F {R.num(o.get('first_f'), 2)})",
                         R.num(r["ratio"], 2), R.num(r.get("simulated_ratio"), 2),
                         ", ".join(R.num(x) for x in b["runs"]) + " / "
                         + ", ".join(R.num(x) for x in o["runs"]), r["verdict"]])
    return ("Each side's median run; device clock over the steady steps (after the first, before the last: "
            "`pipelab.engine.results.timeline.steady_steps`)."
            " The simulated column plays the same run's per-stage mean costs with its measured message cost "
            "and the engine's mean time after each action (the bubble breakdown's host-time row); the formula "
            "column is the paper's closed form at the run's mean T_F, T_I and T_W, without those. The device "
            "clock's gap to the simulated column is each action's and each step's own costs against those "
            "means (the breakdown's last two rows), and the formula's own gap to zero for ZB-H2 is "
            "(p-1)(T_F + T_I - 2 T_W) of the paper: measured T_W is below T_I here (W is a bare matmul, "
            "I also runs GELU's backward), so the deferred W cannot fill all of it. Each stage's optimizer "
            "step is busy time in the overlapped window (outside the barrier's) and adds no idle: rank 0's "
            "is on the path that rank 1's last W's cover, and rank 1's own covers as much. Overlapped, the "
            "slowest stage sets every device's period (stage 0 computes no input gradient for its first "
            "layer, so it waits), and that path has no slack even on unit costs, so the engine's time "
            "after each action and a step's cold first forward add to every device's idle. At the command line's "
            "64 rows per micro-batch each action is half as long as at lesson 6's 128, so those two weigh twice "
            "as much; theory's ratio leaves out the cold first forward (its own figure in the overlapping column), "
            "which per-stage mean costs average away.\n\n"
            + R.table(["pair", "layers", "with a barrier", "overlapping", "ratio",
                       "theory's ratio at the runs' own costs", "runs (device clock)", f"ratio <= {TARGET}"], rows))


def main(argv: list[str] | None = None) -> int:
    """This figure alone, printed as its report section: a quick check of the pairs."""
    parser = argparse.ArgumentParser(description="Overlapping steps: each pair's device-clock bubble with a "
                                     "barrier and without, in the same run (bench/RESULTS.md, section 6).")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side; the median run is reported")
    parser.add_argument("--layers", type=int, nargs="+", default=None,
                        help="model depths (default: each pair's lesson's own)")
    parser.add_argument("--pair", choices=("zb-h2", "zb-h2-cli", "pipedream", "all"), default="all",
                        help="zb-h2: at lesson 6's defaults; zb-h2-cli: at the command line's")
    parser.add_argument("--tiny", action="store_true", help="smoke test: a tiny model, one round")
    parser.add_argument("--out", default=None, help="also write the section, with the machine it ran on, to this file")
    args = parser.parse_args(argv)
    if args.rounds < 1 or any(d < 4 for d in args.layers or ()):
        parser.error("--rounds must be >= 1 and every --layers >= 4 (one layer per stage at p=4)")
    pairs = {"zb-h2": PAIRS[:1], "zb-h2-cli": PAIRS[1:2], "pipedream": PAIRS[2:], "all": PAIRS}[args.pair]
    depths = tuple(args.layers) if args.layers else None
    results = bench_overlap(1 if args.tiny else args.rounds, tiny=args.tiny, depths=depths, pairs=pairs)
    print(section_md(results))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(report_md(results, R.machine_description(), args.rounds))
    return 0


def report_md(results: dict, machine: dict, rounds: int) -> str:
    """The section as a report of its own: what ran it, where, and when."""
    return (f"# {HEADING}\n\nWritten by `python -m bench.overlap --rounds {rounds}` ({machine['date']}, "
            f"{machine['cores']} cores, load {machine['load']}, torch {machine['torch']}).\n\n"
            + section_md(results) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
