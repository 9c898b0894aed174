"""Does one click show the claim? Twenty single clicks per lesson button, as the page runs them.

    PYTHONPATH=. .venv/bin/python -m bench.clicks                 # 20 clicks of every button
    PYTHONPATH=. .venv/bin/python -m bench.clicks --clicks 3 --lessons interleaved,zero-bubble
    PYTHONPATH=. .venv/bin/python -m bench.clicks --lessons naive --buttons compare --out bench/CLICKS-naive.md
    PYTHONPATH=. .venv/bin/python -m bench.clicks --buttons run-all-four,run-them-all --out bench/CLICKS-sections.md

A student presses Run once and reads a verdict. This presses every lesson's buttons (Run, and
its Compare and Sweep where the page has them, and its sections' own: lesson 6's "Run all four"
and "Run them all", judged by their time) ``--clicks`` times each, every click a fresh
measurement built exactly as the page builds it (pipelab.app.runner.runs.knobs_to_config, the lesson's
comparisons side by side through pipelab.engine.runtime.paired with the lesson's headline, pipelab.lessons.claims
for the verdict), and records the verdict and its headline figure: the first row of the
verdict's table, measured on the device clock. The buttons take turns click by click, so a
host that drifts over the benchmark moves every button alike.

Targets (the issue's, never loosened here): at least 19 of 20 clicks say "holds", and the
headline's spread over the clicks (max - min) is at most 0.05 for a fraction and 0.10 for a
ratio; every step-time ratio a verdict shows spreads at most 0.05 and, where theory at the
run's own costs promises a step more than 5 % shorter, says "shorter" in every click; a Run
takes at most 10 s, a comparison 15 s and "Run them all" 45 s (median click). Writes bench/CLICKS.md and
bench/out/clicks.json (every click, as it finishes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

TARGET_HOLDS = 19 / 20
SPREAD = {"": 0.05, "x": 0.10}
"""The headline's largest spread over the clicks, by its unit: a fraction, a ratio."""
STEP_SPREAD = 0.05
"""A step-time ratio's largest spread over the clicks."""
STEP_GAIN = 0.05
"""Theory at the run's own costs promising a step shorter by more than this: every click must say shorter."""
EXTRA_BUTTONS = {"dualpipe_table": "run-all-four", "memory_tradeoff": "run-them-all",
                 "split_or_replicate": "split-or-replicate"}
"""A lesson section's own button that runs several schedules side by side (app/views/extras/<kind>.py,
``run_items`` and ``RUN_PAIRS``), by the section's kind. Those show a table and a chart, not a claim's
verdict: their clicks are judged by their time alone. A section that plans first (``planned_request``:
lesson 3's "split or replicate") has a verdict of its own, and its clicks are judged by it."""
SECONDS = {"run": 10.0, "compare": 15.0, "sweep": 15.0, "run-all-four": 15.0, "run-them-all": 45.0,
           "split-or-replicate": 15.0}
"""The median click's longest wait, by button, on a quiet host (a Run that compares is a comparison;
"Run them all" runs every synchronous schedule)."""
RAN = "ran"
"""A section button's status: every schedule it runs came back."""


@dataclass(frozen=True)
class Button:
    slug: str
    button: str
    """"run", "compare" or "sweep", as the page labels its buttons, or a section's (EXTRA_BUTTONS)."""


@dataclass(frozen=True)
class Click:
    slug: str
    button: str
    status: str
    quantity: str
    value: float | None
    unit: str
    seconds: float
    rows: tuple = ()
    """Every row of the verdict's table as (quantity, measured, unit, simulated): the JSON keeps them."""
    method: str = ""
    """How a comparison was measured (pipelab.engine.runtime.paired: steps in turn, or rounds)."""
    placement: str = ""
    """Where the first run's ranks ran: pinned to their cores or not, and why (pipelab.engine.runtime.placement)."""

    @classmethod
    def from_dict(cls, data: dict) -> Click:
        """A click as a bench's JSON keeps it (dataclasses.asdict), its rows tuples again."""
        return cls(**{**data, "rows": tuple(tuple(r) for r in data["rows"])})


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Inside, the process's environment has ``values`` (a click's PIPELAB_PIN, PIPELAB_POLL); after,
    the caller's own again."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def press_in_turn(plan: list[Button], modes: dict[str, dict[str, str]], clicks: int, stages: int | None,
                  done: dict[str, list], on_click=None) -> None:
    """Every button of ``plan`` pressed ``clicks`` times in each mode (its environment, ``environment``),
    the modes taking turns button by button in ABBA order, so that a drifting host moves every mode
    alike. Each click goes into ``done[mode]`` (as a dict) as it finishes; ``on_click(k, button, mode,
    click)`` after it (bench/pinning.py saves and logs there)."""
    for k in range(clicks):
        for button in plan:
            for mode in (list(modes) if k % 2 == 0 else list(reversed(modes))):  # A B, B A, ...
                with environment(modes[mode]):
                    click = press(button, stages=stages)
                done[mode].append(asdict(click))
                if on_click is not None:
                    on_click(k, button, mode, click)


def buttons(slugs=None, kinds=None) -> list[Button]:
    """Every button a lesson page offers at its defaults (only ``kinds``: "run", "compare",
    "sweep", where given)."""
    from pipelab.lessons import LESSONS
    found = []
    for lesson in LESSONS:
        if slugs and lesson.slug not in slugs:
            continue
        found.append(Button(lesson.slug, "run"))
        if lesson.comparisons and not lesson.claim_compares:
            found.append(Button(lesson.slug, "compare"))
        if lesson.sweep:
            found.append(Button(lesson.slug, "sweep"))
        found += [Button(lesson.slug, EXTRA_BUTTONS[e.kind]) for e in lesson.extras if e.kind in EXTRA_BUTTONS]
    return [b for b in found if not kinds or b.button in kinds]


def press(button: Button, stages: int | None = None) -> Click:
    """One click, as the page runs it: a fresh measurement and the verdict it reads. ``stages``:
    the lesson's defaults at that many pipeline devices instead (bench/pinning.py: p = 2)."""
    import dataclasses

    from pipelab.app.runner.runs import knobs_to_config
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.runtime.paired import SideBySideRequest, run_request, sweep_request
    from pipelab.lessons import claims, get_lesson
    lesson = get_lesson(button.slug)
    knobs = lesson.defaults if stages is None else dataclasses.replace(lesson.defaults, stages=stages)
    if button.button in SECTION_OF:
        return press_section(button, knobs)
    this = [(f"this lesson ({knobs.schedule})", knobs_to_config(knobs))]
    compared = this + [(label, knobs_to_config(k)) for label, k in lesson.comparison_knobs(knobs)]
    started = time.monotonic()
    method = ""
    if button.button == "sweep":  # in one launch, steps in turn, as the page asks (paired.sweep_request)
        items = [(value, knobs_to_config(k)) for value, k in lesson.sweep_knobs(knobs)]
        outcome = run_request(sweep_request([config for _, config in items]))
        entries, kind = list(zip((value for value, _ in items), outcome.shown())), claims.SWEEP
        method = outcome.method
    elif button.button == "compare" or lesson.claim_compares:
        outcome = run_request(SideBySideRequest(tuple(config for _, config in compared)))
        shown = outcome.shown(claims.headline(lesson.slug))  # the round the page shows, by the lesson's headline
        entries, kind = list(zip((label for label, _ in compared), shown)), claims.COMPARISON
        method = outcome.method
    else:
        entries, kind = [(label, run(config)) for label, config in this], claims.RUN
    verdict = claims.verdict(lesson.slug, lesson.claim, kind, entries)
    row = verdict.rows[0] if verdict.rows else None
    return Click(button.slug, button.button, verdict.status, row.quantity if row else "",
                 None if row is None or row.measured is None else float(row.measured), row.unit if row else "",
                 time.monotonic() - started,
                 tuple((r.quantity, _float(r.measured), r.unit, _float(r.simulated))
                       for r in (verdict.rows if verdict else ())),
                 method, placement_text(entries[0][1].metrics.placement) if entries else "")


def placement_text(placement) -> str:
    """A run's placement in one line: each rank's CPUs, or "not pinned: N cores for M ranks"."""
    if placement is None:
        return "not recorded"
    if not placement.pinned:
        return f"not pinned ({placement.reason}): {placement.cores} cores for {placement.ranks} ranks"
    from pipelab.engine.runtime.placement import cpu_list_text
    ranks = "; ".join(f"rank {r} on {cpu_list_text(c)}" for r, c in enumerate(placement.rank_cpus))
    return f"{ranks}; reference on {cpu_list_text(placement.reference_cpus)}"


SECTION_OF = {label: kind for kind, label in EXTRA_BUTTONS.items()}


def press_section(button: Button, knobs) -> Click:
    """A section's button, as its page runs it: its schedules side by side in one launch where
    they can share one. Judged by its time; "ran" when every schedule came back."""
    import importlib

    from pipelab.engine.runtime.paired import SideBySideRequest, run_request
    section = importlib.import_module(f"pipelab.app.views.extras.{SECTION_OF[button.button]}")
    if hasattr(section, "planned_request"):
        return press_planned(button, section)
    items = section.run_items(knobs)
    started = time.monotonic()
    outcome = run_request(SideBySideRequest(tuple(config for _, config in items), pairs=section.RUN_PAIRS))
    seconds = time.monotonic() - started
    shown = outcome.shown()
    came_back = len(shown) == len(items)
    return Click(button.slug, button.button, RAN if came_back else "missing", "schedules run side by side",
                 float(len(shown)), "count", seconds, method=outcome.method,
                 placement=placement_text(shown[0].metrics.placement) if shown else "")


def press_planned(button: Button, section) -> Click:
    """A section that profiles, plans, then runs its plans side by side (engine/runtime/planned_runs.py), as
    its page does, judged by its own verdict (lessons/split_or_replicate.py): the headline is the replicated
    run's throughput over the straight one's, the median over pairs of steps (device clock)."""
    from pipelab.engine.runtime.planned_runs import REPLICATED, STRAIGHT, run_planned
    from pipelab.lessons import split_or_replicate as split
    started = time.monotonic()
    outcome = run_planned(section.planned_request())
    seconds = time.monotonic() - started
    verdict = split.verdict(outcome.plans, [outcome.run_of(STRAIGHT), outcome.run_of(REPLICATED)])
    names = f"{outcome.plans[REPLICATED].config} over {outcome.plans[STRAIGHT].config}"
    rows = ((f"throughput, {names}", verdict.ratio[0], "x", verdict.predicted),
            *((f"throughput, {p.config}", split.throughput(outcome.run_of(i)), "micro-batches/s", p.throughput)
              for i, p in enumerate(outcome.plans) if outcome.ran.index(outcome.ran[i]) == i))
    return Click(button.slug, button.button, verdict.status, rows[0][0], verdict.ratio[0], "x", seconds, rows,
                 outcome.method, placement_text(outcome.run_of(STRAIGHT).metrics.placement))


def _float(x) -> float | None:
    return None if x is None else float(x)


def compares(button: Button) -> bool:
    from pipelab.lessons import get_lesson
    return button.button == "compare" or (button.button == "run" and get_lesson(button.slug).claim_compares)


def step_rows(clicks: list[Click]) -> list[dict]:
    """Every step-time ratio the button's verdicts show, over the clicks: spread, and whether each
    click said "shorter" where theory at its run's costs promised more than STEP_GAIN."""
    found: dict[str, list] = {}
    for c in clicks:
        for quantity, value, unit, *simulated in c.rows:
            if unit == "x" and quantity.startswith("step time,") and value is not None:
                found.setdefault(quantity, []).append((value, simulated[0] if simulated else None))
    rows = []
    for quantity, pairs in found.items():
        values = [v for v, _ in pairs]
        promised = [(v, t) for v, t in pairs if t is not None and t < 1 - STEP_GAIN]
        theories = [t for _, t in pairs if t is not None]
        rows.append(dict(quantity=quantity, min=min(values), median=statistics.median(values), max=max(values),
                         spread=max(values) - min(values), theory=statistics.median(theories) if theories else None,
                         promised=len(promised), shorter=sum(v < 1 for v, _ in promised),
                         met=max(values) - min(values) <= STEP_SPREAD and all(v < 1 for v, _ in promised)))
    return rows


def headline_theory(clicks: list[Click]) -> dict | None:
    """The headline's theory at each click's own costs (the simulator fed that click's runs: its
    row's simulated column), over the clicks: min / median / max and spread, and the spread of
    measured - theory. Where theory moves as far as the measurement, the host changed between
    clicks (a core slower for a while: the runs' own costs say so) and the engine measured it;
    where measured - theory spreads as far, the measurement itself is what moves. None when the
    headline row has no theory."""
    headline_rows = [next((r for r in c.rows if r[0] == c.quantity), ()) for c in clicks]
    pairs = [(r[1], r[3]) for r in headline_rows if len(r) > 3 and r[1] is not None and r[3] is not None]
    if not pairs:
        return None
    theory = [t for _, t in pairs]
    gaps = [v - t for v, t in pairs]
    return dict(clicks=len(pairs), min=min(theory), median=statistics.median(theory), max=max(theory),
                spread=max(theory) - min(theory), gap_min=min(gaps), gap_max=max(gaps),
                gap_spread=max(gaps) - min(gaps))


def summarize(clicks: list[Click]) -> list[dict]:
    """Per button: the headline's values, min / median / max, spread, the verdicts, the targets met."""
    from pipelab.lessons.claims import FAILS, HOLDS, NOISE
    rows = []
    for key in dict.fromkeys((c.slug, c.button) for c in clicks):
        mine = [c for c in clicks if (c.slug, c.button) == key]
        values = [c.value for c in mine if c.value is not None]
        unit = mine[0].unit
        spread = max(values) - min(values) if values else None
        limit = SPREAD.get(unit, 0.0)
        holds = sum(c.status in (HOLDS, RAN) for c in mine)
        rows.append(dict(lesson=key[0], button=key[1], quantity=mine[0].quantity, unit=unit, clicks=len(mine),
                         values=values, min=min(values) if values else None,
                         median=statistics.median(values) if values else None, max=max(values) if values else None,
                         spread=spread, spread_target=limit, holds=holds, noise=sum(c.status == NOISE for c in mine),
                         fails=sum(c.status == FAILS for c in mine),
                         other=sum(c.status not in (HOLDS, RAN, NOISE, FAILS) for c in mine),
                         holds_met=holds >= TARGET_HOLDS * len(mine), spread_met=spread is not None and spread <= limit,
                         seconds=statistics.median(c.seconds for c in mine), others=other_rows(mine),
                         theory=headline_theory(mine),
                         steps=step_rows(mine), methods=sorted({c.method for c in mine if c.method}),
                         seconds_target=SECONDS["compare" if compares(Button(*key)) else key[1]]))
        rows[-1]["steps_met"] = all(r["met"] for r in rows[-1]["steps"])
        rows[-1]["seconds_met"] = rows[-1]["seconds"] <= rows[-1]["seconds_target"]
    return rows


def other_rows(clicks: list[Click]) -> list[dict]:
    """The verdict table's rows after the headline, over the clicks: min / median / max, spread."""
    found: dict[str, list] = {}
    for c in clicks:
        for quantity, value, unit, *_ in c.rows[1:]:
            if value is not None:
                found.setdefault((quantity, unit), []).append(value)
    return [dict(quantity=q, unit=u, min=min(v), median=statistics.median(v), max=max(v), spread=max(v) - min(v))
            for (q, u), v in found.items()]


def _n(x, digits=3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def report_md(rows: list[dict], machine: str, clicks: int = 20) -> str:
    title = "Twenty" if clicks == 20 else str(clicks)  # the report names the clicks it ran
    lines = [f"# {title} single clicks per lesson button", "",
             f"Written by `bench/clicks.py` ({machine}). Each click is a fresh measurement built as the page builds "
             "it; a comparison is one launch whose schedules' steps take turns (A B, B A, ...), each ratio the median "
             "over pairs of steps, or rounds of whole runs where settings cannot share a launch, as on the page. The "
             "headline is the first row of the verdict's table, on the device clock. Targets: \"holds\" in at least "
             "19 of 20 clicks; spread (max - min) at most 0.05 for a fraction, 0.10 for a ratio (x), 0 for a count; "
             "every step-time ratio spread at most 0.05 and \"shorter\" in every click where theory at the run's "
             "costs promises more than 5 %; the median click at most 10 s for a Run, 15 s for a comparison, 45 s "
             "for \"Run them all\". A section's button (run-all-four, run-them-all) shows a table and a chart, not "
             "a claim: its clicks count as holding when every schedule came back, and its headline is how many "
             "did. The split-or-replicate section's button (lesson 3) plans, then runs the planner's choice, the "
             "straight pipeline and 2-1-1 side by side: its verdict holds when the replicated configuration's "
             "throughput beats the straight pipeline's where the planner predicts it (the headline: their ratio, "
             "median over pairs of steps; its other rows: each run's throughput beside the planner's).", "",
             "| lesson | button | measured as | headline | min / median / max | spread (target) "
             "| holds / noise / fails | step ratios met | s per click (target) | all met |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        unit = f" ({r['unit']})" if r["unit"] else ""
        met = r["holds_met"] and r["spread_met"] and r.get("steps_met", True) and r.get("seconds_met", True)
        steps = ("yes" if r.get("steps_met", True) else "no") if r.get("steps") else "—"
        lines.append(f"| {r['lesson']} | {r['button']} | {', '.join(r.get('methods', ())) or 'one run'} | "
                     f"{r['quantity']}{unit} | {_n(r['min'])} / {_n(r['median'])} "
                     f"/ {_n(r['max'])} | {_n(r['spread'])} ({r['spread_target']:g}) | {r['holds']} / {r['noise']} / "
                     f"{r['fails']} of {r['clicks']} | {steps} | {r['seconds']:.1f} ({r.get('seconds_target', 0):g}) | "
                     f"{'yes' if met else 'no'} |")
    steps = [(r, o) for r in rows for o in r.get("steps", ())]
    if steps:
        lines += ["", "Every step-time ratio a verdict shows (device clock; theory: the simulator at the run's own "
                  "costs, median over clicks; shorter: clicks whose step was shorter, of those where theory "
                  "promised more than 5 %):", "",
                  "| lesson | button | ratio | min / median / max | spread (target 0.05) | theory | shorter | met |",
                  "|---|---|---|---|---|---|---|---|"]
        for r, o in steps:
            lines.append(f"| {r['lesson']} | {r['button']} | {o['quantity']} | {_n(o['min'])} / {_n(o['median'])} / "
                         f"{_n(o['max'])} | {_n(o['spread'])} | {_n(o['theory'])} | {o['shorter']} of "
                         f"{o['promised']} | {'yes' if o['met'] else 'no'} |")
    lines += theory_table(rows)
    others = [(r, o) for r in rows for o in r.get("others", ())]
    if others:
        lines += ["", "The verdict table's other rows (not judged by the targets):", "",
                  "| lesson | button | row | min / median / max | spread |", "|---|---|---|---|---|"]
        for r, o in others:
            unit = f" ({o['unit']})" if o["unit"] else ""
            lines.append(f"| {r['lesson']} | {r['button']} | {o['quantity']}{unit} | {_n(o['min'])} / "
                         f"{_n(o['median'])} / {_n(o['max'])} | {_n(o['spread'])} |")
    lines += ["", "Every click's headline, in the order pressed:", ""]
    for r in rows:
        lines.append(f"- {r['lesson']} {r['button']}: " + ", ".join(_n(v) for v in r["values"]))
    return "\n".join(lines) + "\n"


def theory_table(rows: list[dict], mode: bool = False) -> list[str]:
    """The headlines beside theory at each click's own costs (headline_theory), as report lines;
    ``mode``: a column for bench/pinning.py's modes."""
    found = [r for r in rows if r.get("theory")]
    if not found:
        return []
    head = ["lesson", "button", *(["ranks"] if mode else []), "headline", "spread, measured",
            "theory at each click's costs: min / median / max", "spread, theory", "measured - theory: min / max",
            "spread, measured - theory"]
    lines = ["", "The headline beside theory at each click's own costs (the verdict's theory column for that click: "
             "the simulator fed its runs' own costs; for split-or-replicate, the planner's prediction from its "
             "profile). Where theory spreads as far as the measurement, the host changed between "
             "clicks (a core slower for a while, the engine's own time per action) and each click measured what "
             "its runs' costs predict; where measured - theory spreads as far, the measurement itself moved:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in found:
        t = r["theory"]
        lines.append(f"| {r['lesson']} | {r['button']} | " + (f"{r['mode']} | " if mode else "")
                     + f"{r['quantity']} | {_n(r['spread'])} | {_n(t['min'])} / {_n(t['median'])} / {_n(t['max'])} | "
                     f"{_n(t['spread'])} | {t['gap_min']:+.3f} / {t['gap_max']:+.3f} | {_n(t['gap_spread'])} |")
    return lines


def machine_line() -> str:
    import platform

    import torch
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
            f"{os.cpu_count()} cores, torch {torch.__version__}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.clicks", description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=20, help="clicks per button (default 20)")
    parser.add_argument("--lessons", default="", help="comma-separated lesson slugs (default: all)")
    parser.add_argument("--buttons", default="", help=f"comma-separated buttons: {', '.join(SECONDS)} (default: all)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "CLICKS.md"))
    parser.add_argument("--json", default=os.path.join(ROOT, "bench", "out", "clicks.json"))
    args = parser.parse_args(argv)
    if args.clicks < 1:
        parser.exit(2, f"{parser.prog}: error: --clicks must be >= 1, got {args.clicks}\n")
    from pipelab.lessons import LESSONS
    slugs = [s for s in args.lessons.split(",") if s]
    unknown = sorted(set(slugs) - {lesson.slug for lesson in LESSONS})
    if unknown:
        parser.exit(2, f"{parser.prog}: error: unknown lesson(s) {', '.join(unknown)}; valid: "
                       f"{', '.join(lesson.slug for lesson in LESSONS)}\n")
    kinds = [b for b in args.buttons.split(",") if b]
    if set(kinds) - set(SECONDS):
        parser.exit(2, f"{parser.prog}: error: --buttons takes {', '.join(SECONDS)}; got {args.buttons}\n")
    plan = buttons(slugs, kinds)
    if not plan:
        parser.exit(2, f"{parser.prog}: error: no such button on the lessons chosen\n")
    clicks: list[Click] = []
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    for k in range(args.clicks):
        for button in plan:  # buttons take turns: drift moves them alike
            click = press(button)
            clicks.append(click)
            print(f"click {k + 1}/{args.clicks} {button.slug} {button.button}: {click.status}, "
                  f"{click.quantity} {_n(click.value)} ({click.seconds:.1f} s)", flush=True)
            with open(args.json, "w") as f:
                json.dump([asdict(c) for c in clicks], f, indent=1)
    rows = summarize(clicks)
    with open(args.out, "w") as f:
        f.write(report_md(rows, machine_line(), args.clicks))
    print(f"wrote {args.out}")
    return 0 if all(r["holds_met"] and r["spread_met"] and r["steps_met"] and r["seconds_met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
