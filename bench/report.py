"""Pure helpers of the benchmark: verdicts, tables, the README section, the machine line.

No torch, no processes: tests/test_bench.py runs all of it.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import statistics

START, END = "<!-- bench:start -->", "<!-- bench:end -->"
MET, NOT_MET, NOT_MEASURED = "met", "not met", "not measured"


def verdict(value: float | None, target: float, sense: str = "<=") -> str:
    """"met" when ``value sense target`` holds, "not met" otherwise, "not measured" for None."""
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        return NOT_MEASURED
    if sense == "<=":
        return MET if value <= target else NOT_MET
    if sense == ">=":
        return MET if value >= target else NOT_MET
    raise ValueError(f"sense must be '<=' or '>=', got {sense!r}")


def all_met(verdicts: list[str]) -> str:
    """One verdict for several: met only if every measured one is met."""
    measured = [v for v in verdicts if v != NOT_MEASURED]
    if not measured:
        return NOT_MEASURED
    return MET if all(v == MET for v in measured) else NOT_MET


def count_met(verdicts: list[str]) -> str:
    return f"{sum(v == MET for v in verdicts)}/{len(verdicts)} met"


def error_text(err: BaseException) -> str:
    """One line for a failed measurement: the exception's type and its message's first line."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}"


def ms(seconds: float | None, digits: int = 1) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.{digits}f} ms"


def num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def pct(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x * 100:.{digits}f}%"


def mib(nbytes: float | None) -> str:
    return "—" if nbytes is None else f"{nbytes / 2**20:.2f} MiB"


def table(headers: list[str], rows: list[list]) -> str:
    """A GitHub markdown table; cells are str()-ed and '|' escaped."""
    def cell(v):
        return str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def prose(text: str) -> str:
    """A docstring's paragraphs as markdown: each paragraph's lines joined into one, and a list's
    items ("- " at a line's start) kept apart, one per line."""
    paragraphs = []
    for paragraph in text.strip().split("\n\n"):
        items: list[list[str]] = []
        for line in paragraph.split("\n"):
            line = line.strip()
            if line.startswith("- ") or not items:
                items.append([line])
            else:
                items[-1].append(line)
        paragraphs.append("\n".join(" ".join(item) for item in items))
    return "\n\n".join(paragraphs)


def replace_section(text: str, body: str) -> str | None:
    """``text`` with everything between the bench markers replaced by ``body``; None when the
    markers are missing or out of order (then the caller leaves the file alone)."""
    i, j = text.find(START), text.find(END)
    if i < 0 or j < 0 or j < i:
        return None
    return text[: i + len(START)] + "\n" + body.strip("\n") + "\n" + text[j:]


def verdict_of(cell: str) -> str | None:
    """A summary row's verdict cell ("met", "not met (8/10 met)", "—") as MET, NOT_MET,
    NOT_MEASURED, or None for a row with no target."""
    for v in (NOT_MET, NOT_MEASURED, MET):
        if str(cell).startswith(v):
            return v
    return None


MISSED_SHOWN = 3
"""The README names at most this many missed targets; bench/RESULTS.md has them all."""


def readme_summary(machine: str, rows: list[list], results_link: str = "bench/RESULTS.md") -> str:
    """The README's bench section: the machine line, how many targets the run met, the ones it
    missed (at most MISSED_SHOWN, each as "figure: measured (target ...)"), and a link to the
    full table. A few lines however many figures there are; ``rows`` are summary rows
    [figure, measured, target, verdict]."""
    verdicts = [verdict_of(row[3]) for row in rows]
    met = verdicts.count(MET)
    missed = [row for row, v in zip(rows, verdicts) if v == NOT_MET]
    unmeasured = verdicts.count(NOT_MEASURED)
    counted = f"**{met} of {met + len(missed) + unmeasured} targets met**"
    if unmeasured:
        counted += f" ({unmeasured} not measured)"
    lines = [machine, "", counted + ("." if not missed else "; not met:")]
    lines += [f"- {row[0]}: {row[1]} (target {row[2]})" for row in missed[:MISSED_SHOWN]]
    if len(missed) > MISSED_SHOWN:
        lines.append(f"- and {len(missed) - MISSED_SHOWN} more")
    lines += ["", f"Every figure, its target and how it is measured: [{results_link}]({results_link})."]
    return "\n".join(lines)


def update_readme(path: str, body: str) -> str:
    """Rewrite the bench section of the README at ``path``; returns what happened, in words."""
    if not os.path.exists(path):
        return f"{path} does not exist; left alone"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = replace_section(text, body)
    if new is None:
        return f"{path} has no {START} ... {END} markers; left alone"
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return f"{path}: bench section rewritten"


def spread(values: list[float]) -> str:
    """min-max of a list of seconds, as text."""
    if not values:
        return "—"
    return f"{min(values) * 1000:.1f}-{max(values) * 1000:.1f} ms"


def ratio_spread(ours: list[float], theirs: list[float]) -> str:
    """min-max of ours / theirs, pair by pair (round i with round i), as text. Adjacent runs
    share the host's conditions, so the spread shows how far the host moves the ratio."""
    ratios = [o / t for o, t in zip(ours, theirs) if t]
    if not ratios:
        return "—"
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def cpu_model(cpuinfo_text: str) -> str:
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo_text, re.M)
    return m.group(1).strip() if m else platform.processor() or "unknown CPU"


def mem_total_gib(meminfo_text: str) -> float | None:
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", meminfo_text, re.M)
    return int(m.group(1)) / 2**20 if m else None


def machine_description() -> dict:
    """CPU model, cores, RAM, Python and torch versions, date (UTC)."""
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    import torch
    ram = mem_total_gib(read("/proc/meminfo"))
    return {"cpu": cpu_model(read("/proc/cpuinfo")), "cores": os.cpu_count(),
            "ram": f"{ram:.1f} GiB" if ram else "unknown", "python": platform.python_version(),
            "torch": torch.__version__, "os": platform.platform(),
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "load": " ".join(read("/proc/loadavg").split()[:3]) or "unknown"}


def first_forward_ratio(events: list, steps: list[int]) -> float | None:
    """Per stage, the median duration of a step's first forward (micro-batch 0) over the
    median of its other forwards (device clock), averaged over stages: how much colder the
    first one runs, which the simulator's mean costs leave out. ``events`` have kind, stage,
    microbatch, step, start, end."""
    first: dict[int, list[float]] = {}
    rest: dict[int, list[float]] = {}
    for e in events:
        if e.kind == "F" and e.step in steps:
            (first if e.microbatch == 0 else rest).setdefault(e.stage, []).append(e.end - e.start)
    ratios = [statistics.median(first[s]) / statistics.median(rest[s]) for s in first if s in rest]
    return statistics.fmean(ratios) if ratios else None


def overhead_shares(events: list, steps: list[int], compute_kinds: set[str]) -> list[float]:
    """Per (rank, step): (wall span - sum of compute wall durations - sum of recv wall waits)
    / wall span. ``events`` have rank, step, kind, wall_start, wall_end."""
    groups: dict[tuple[int, int], list] = {}
    for e in events:
        if e.step in steps and (e.kind in compute_kinds or e.kind in ("send", "recv")):
            groups.setdefault((e.rank, e.step), []).append(e)
    shares = []
    for evs in groups.values():
        span = max(e.wall_end for e in evs) - min(e.wall_start for e in evs)
        if span <= 0:
            continue
        busy = sum(e.wall_end - e.wall_start for e in evs if e.kind in compute_kinds or e.kind == "recv")
        shares.append(max(0.0, span - busy) / span)
    return shares


def send_shares(events: list, steps: list[int], compute_kinds: set[str]) -> list[float]:
    """Per (rank, step): wall time spent posting sends / wall span (part of the overhead)."""
    groups: dict[tuple[int, int], list] = {}
    for e in events:
        if e.step in steps and (e.kind in compute_kinds or e.kind in ("send", "recv")):
            groups.setdefault((e.rank, e.step), []).append(e)
    out = []
    for evs in groups.values():
        span = max(e.wall_end for e in evs) - min(e.wall_start for e in evs)
        if span > 0:
            out.append(sum(e.wall_end - e.wall_start for e in evs if e.kind == "send") / span)
    return out


def write_report(out: str, data: dict, report_md) -> None:
    """A bench's two files: ``report_md(data, machine)`` as ``out`` (Markdown) and every figure with
    the machine beside it as the .json of the same name (its folder made if missing: a bench that
    measured for minutes must not end on a missing folder); prints ``out``."""
    import json
    import os
    machine = machine_description()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(report_md(data, machine))
    with open(os.path.splitext(out)[0] + ".json", "w", encoding="utf-8") as f:
        json.dump({"machine": machine, **data}, f, indent=1)
    print(out)


def rounds_args(prog: str, doc: str, out: str, argv=None):
    """The arguments of a bench that measures in rounds: --rounds (at least 1), --quick (a tiny
    model: checks the script, measures nothing) and --out (its Markdown report)."""
    import argparse
    parser = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a tiny model: checks the script, measures nothing")
    parser.add_argument("--out", default=out)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    return args
