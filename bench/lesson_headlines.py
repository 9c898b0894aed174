"""Figure 7: each lesson's headline claim, measured beside theory.

For every lesson that declares a headline row (``Lesson.headline_row``, in its own folder; not
the playground, whose claim is figure 2's), the runs its page offers at its defaults (Run, the
comparison, the sweep: ``lesson.defaults``, ``comparison_knobs()``, ``sweep_knobs()``), judged
by the lesson's own check (lessons/<name>/claim.py) exactly as the page judges them. One row
per lesson: the claim's headline quantity (the check's rows the headline row names), measured
on the device clock, the theory, and the check's verdict. Every lesson's
runs repeat ``rounds`` times (whole rounds in turn, as the growth figure does, so a spell of
host noise lands on one round of a lesson, not all); each lesson reports its median round.
"""

from __future__ import annotations

import dataclasses
import os

from bench import report as R
from bench.measure import log
from bench.plan import Plan
from pipelab.lessons import claims
from pipelab.lessons.headline_row import HeadlineRow

HEADING = "7. Lesson headlines"


def headline_of(slug: str) -> HeadlineRow:
    """The lesson's headline row, declared in its own folder (``Lesson.headline_row``)."""
    from pipelab.lessons import get_lesson
    return get_lesson(slug).headline_row


VERDICT = {claims.HOLDS: R.MET, claims.NOISE: "not met (within noise)", claims.FAILS: R.NOT_MET,
           claims.UNTESTED: R.NOT_MEASURED}
STATUS_RANK = {claims.HOLDS: 0, claims.NOISE: 1, claims.FAILS: 2, claims.UNTESTED: 3}


# ---- measuring ----------------------------------------------------------------------------

def measured_lessons():
    """Every lesson that declares a headline row (the playground's claim is figure 2's: none)."""
    from pipelab.lessons import LESSONS
    return [lesson for lesson in LESSONS if lesson.headline_row is not None]


def lesson_entries(lesson, size: dict, run_knobs) -> dict:
    """{kind: (label, result) entries} for the runs the lesson's page offers, labelled as the
    page labels them; ``size`` overrides every run's knobs (the tiny plan's)."""
    base = lesson.defaults.with_overrides(size) if size else lesson.defaults
    entries = {claims.RUN: [(base.schedule, run_knobs(base))]}
    if lesson.comparisons:
        entries[claims.COMPARISON] = ([(f"this lesson ({base.schedule})", run_knobs(base))]
                                      + [(label, run_knobs(k)) for label, k in lesson.comparison_knobs(base)])
    if lesson.sweep:
        entries[claims.SWEEP] = [(value, run_knobs(k)) for value, k in lesson.sweep_knobs(base)]
    return entries


def one_round(plan: Plan, round_: int = 0) -> dict:
    """{slug: {kind: verdict dict, or {"error": ...}}}. Within a round a setting shared by two
    lessons (lesson 4's GPipe is lesson 2's default) runs once, as the tests share it."""
    from pipelab.engine.runtime.launch import run
    done: dict = {}

    def run_knobs(knobs):
        if knobs not in done:
            try:
                done[knobs] = run(knobs.to_run_config())
            except Exception as err:  # noqa: BLE001 - kept, so the round does not retry it
                done[knobs] = err
        if isinstance(done[knobs], Exception):
            raise done[knobs]
        return done[knobs]

    out = {}
    for lesson in measured_lessons():
        out[lesson.slug] = {}
        for kind in (claims.RUN, claims.COMPARISON, claims.SWEEP):
            if (kind == claims.COMPARISON and not lesson.comparisons) or (kind == claims.SWEEP and not lesson.sweep):
                continue
            try:
                entries = lesson_entries(lesson, plan.lesson_size, run_knobs)[kind]
                verdict = claims.verdict(lesson.slug, lesson.claim, kind, entries)
                out[lesson.slug][kind] = dataclasses.asdict(verdict)
            except Exception as err:  # noqa: BLE001 - one failure must not lose the report
                out[lesson.slug][kind] = {"error": R.error_text(err)}
        row = headline_row(lesson.slug, [out[lesson.slug]])
        log(f"lessons {lesson.slug} round {round_}: {row['measured']} ({row['theory_from']} {row['theory']}): "
            f"{row['verdict']}" if row["status"] else f"lessons {lesson.slug} round {round_}: {row['reason']}")
    return out


def measure(plan: Plan) -> dict:
    rounds = [one_round(plan, round_) for round_ in range(plan.lesson_rounds)]
    return {"rounds": len(rounds), "size": plan.lesson_size,
            "lessons": {slug: [r[slug] for r in rounds] for slug in (rounds[0] if rounds else {})}}


# ---- the headline of a lesson's rounds ------------------------------------------------------

def values_text(values: list, unit: str) -> str:
    """Several rows' values as one cell: "0.321 / 0.214", "1.50 / 1.50 MiB", "2.41x"."""
    if all(v is None for v in values):
        return "—"
    def one(v):
        if v is None:
            return "—"
        return {"ms": f"{v:.1f}", "MiB": f"{v:.2f}", "x": f"{v:.2f}", "count": f"{v:g}"}.get(unit, f"{v:.3f}")
    suffix = {"ms": " ms", "MiB": " MiB", "x": "x", "count": "", "": ""}.get(unit, f" {unit}")
    return " / ".join(one(v) for v in values) + suffix


def quantity_text(quantities: list[str]) -> str:
    """Several rows' quantities as one: the words they share once, then what differs, e.g.
    "bubble fraction at m = 4 / 8 / 16"."""
    if len(quantities) == 1:
        return quantities[0]
    shared = os.path.commonprefix(quantities)
    shared = shared[: shared.rfind(" ") + 1]  # whole words only
    return shared + " / ".join(q[len(shared):] for q in quantities)


def _rows(headline: HeadlineRow, verdict: dict) -> list[dict]:
    return [row for row in verdict.get("rows", ()) if row["quantity"].startswith(headline.quantity)]


def _round_key(headline: HeadlineRow, verdict: dict) -> tuple:
    """Orders rounds: by the check's status (holds first), then the first headline value."""
    rows = _rows(headline, verdict)
    first = rows[0]["measured"] if rows and rows[0]["measured"] is not None else 0.0
    return (STATUS_RANK.get(verdict.get("status"), len(STATUS_RANK)), first)


def headline_row(slug: str, rounds: list[dict]) -> dict:
    """The lesson's reported round: of the rounds whose headline kind was judged, the median
    by (status, first headline value), so the verdict is the one most rounds reach and every
    figure comes from one round; all rounds' first headline values listed beside it."""
    headline = headline_of(slug)
    judged = [(i, r[headline.kind]) for i, r in enumerate(rounds) if "error" not in r.get(headline.kind, {"error": ""})]
    row = {"target": headline.target, "round_values": [], "kinds": {}}
    if not judged:
        error = next((r.get(headline.kind, {}).get("error") for r in rounds), None) or "not run"
        return dict(row, quantity=headline.quantity, measured="—", theory="—", theory_from=None, unit="",
                    simulated="—", status=None, verdict=R.NOT_MEASURED, reason=error, round=None)
    ordered = sorted(judged, key=lambda e: _round_key(headline, e[1]))
    index, verdict = ordered[(len(ordered) - 1) // 2]
    rows = _rows(headline, verdict)
    for _, v in judged:
        first = _rows(headline, v)
        row["round_values"].append(first[0]["measured"] if first else None)
    unit = rows[0]["unit"] if rows else ""
    formulas = [r["formula"] for r in rows]
    simulated = [r["simulated"] for r in rows]
    # Theory is the closed form; a claim without one (flat memory) stands beside the simulator.
    theory_from = ("formula" if any(f is not None for f in formulas)
                   else "simulator" if any(x is not None for x in simulated) else None)
    theory = values_text(formulas if theory_from == "formula" else simulated, unit)
    row["kinds"] = {kind: (v.get("status"), v.get("reason")) if "error" not in v else (None, v["error"])
                    for kind, v in rounds[index].items()}
    return dict(row, quantity=quantity_text([r["quantity"] for r in rows]) if rows else headline.quantity,
                measured=values_text([r["measured"] for r in rows], unit), theory=theory, theory_from=theory_from,
                unit=unit,
                simulated=values_text(simulated, unit), status=verdict["status"],
                verdict=VERDICT.get(verdict["status"], R.NOT_MEASURED), reason=verdict["reason"], round=index)


# ---- report ---------------------------------------------------------------------------------

def _titles() -> dict[str, str]:
    return {lesson.slug: f"{lesson.number}. {lesson.title}" for lesson in measured_lessons()}


def _numbers() -> dict[str, int]:
    return {lesson.slug: lesson.number for lesson in measured_lessons()}


def theory_text(row: dict) -> str:
    """The theory cell: the closed form's values, or the simulator's, saying which."""
    return f"{row['theory']} (simulator)" if row["theory_from"] == "simulator" else row["theory"]


def summary_rows(results: dict | None) -> list[list]:
    numbers = _numbers()
    at = "the smoke test's size" if (results or {}).get("size") else "its defaults"
    rows = []
    for slug, rounds in ((results or {}).get("lessons") or {}).items():
        row = headline_row(slug, rounds)
        beside = "simulator" if row["theory_from"] == "simulator" else "theory"
        rows.append([f"Lesson {numbers.get(slug, '?')} ({slug}), {headline_of(slug).kind} at {at}: "
                     f"{row['quantity']}, device clock",
                     f"{row['measured']} ({beside} {row['theory']})" if row["status"] else row["reason"],
                     row["target"], row["verdict"]])
    return rows


def section_md(results: dict | None) -> str:
    if not results or not results.get("lessons"):
        return "Not measured."
    titles = _titles()
    head, details = [], []
    for slug, rounds in results["lessons"].items():
        row = headline_row(slug, rounds)
        values = ", ".join(values_text([v], row["unit"]) for v in row["round_values"])
        head.append([titles.get(slug, slug), headline_of(slug).kind, row["quantity"], row["measured"], theory_text(row),
                     row["simulated"], row["target"], row["verdict"], values or "—"])
        for kind, (status, reason) in row["kinds"].items():
            details.append([titles.get(slug, slug), kind, status or "error", reason])
    size = results.get("size") or {}
    at = (", ".join(f"{k}={v}" for k, v in size.items()) + " on every lesson's knobs (the smoke test's size)"
          if size else "the lessons' own defaults (lessons.Knobs and each lesson's)")
    return (f"Every lesson's page runs (Run, Run comparison, Run sweep) at {at}, judged by the lesson's own "
            f"check (lessons/<name>/claim.py) as the page judges them; each lesson's median of {results['rounds']} "
            "round(s). Measured is the device clock (memory and counts as the ranks measured them); theory is "
            "the closed form, or the simulator fed the run's mean costs where the claim has none.\n\n"
            + R.table(["lesson", "judged on", "headline quantity", "measured", "theory", "simulated", "target",
                       "verdict", "rounds (first value)"], head)
            + "\n\nEvery check of the reported round, as the page words it:\n\n"
            + R.table(["lesson", "runs", "status", "why"], details))


METHOD = """\
- **Lesson headlines.** Each lesson's knobs from `lessons.LESSONS` (`defaults`, `comparison_knobs()`,
  `sweep_knobs()`, `Knobs.to_run_config()`), run with `pipelab.engine.runtime.launch.run`; the page's own check
  (`pipelab.lessons.claims.verdict`) judges each of Run, the comparison and the sweep. The headline is the
  check's rows each lesson names (`headline_row` in its folder's `__init__.py`), from the kind of run that tests the
  claim. Rounds run every lesson in turn; per lesson, the reported round is the median by the check's
  status, then by the headline's first value. "met" is the check's "holds"; its "holds within noise"
  (a threshold missed by less than a busy host moves it) counts as not met here."""
