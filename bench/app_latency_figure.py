"""Figure 4: app latency, click Run to timeline drawn in chromium (the measurement itself is
bench/app_latency.py, which also serves the browser tests)."""

from __future__ import annotations

from bench import report as R
from bench.measure import log
from bench.plan import Plan

HEADING = "4. App latency"


def measure(plan: Plan) -> dict:
    """Skipped with --tiny (plan.app_runs == 0)."""
    if plan.app_runs <= 0:
        return {"error": "skipped (--tiny)"}
    try:
        from bench.app_latency import measure_app_latency
        return measure_app_latency(runs=plan.app_runs, log=log)
    except Exception as err:  # noqa: BLE001 - no chromium, no playwright, a timeout: report, go on
        return {"error": R.error_text(err)}


def section_md(app: dict) -> str:
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


def summary_rows(app: dict) -> list[list]:
    if app.get("warm_median_s") is not None:
        return [["App latency: click Run to timeline drawn, default lesson (browser)",
                 f"median {app['warm_median_s']:.2f} s (cold first run {app['cold_s']:.2f} s, "
                 f"from cache {R.num(app.get('cached_s'), 2)} s)", "median <= 5 s", app["verdict"]]]
    return [["App latency (browser)", app.get("error", "not measured"), "median <= 5 s", R.NOT_MEASURED]]
