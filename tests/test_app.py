"""The Streamlit app, driven headless with AppTest, plus the job runner on its own."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pipelab.app.runner.closed_tabs import ClosedTabs
from pipelab.app.runner.jobs import CANCELLED, DONE, FAILED, QUEUED, RUNNING, JobRunner
from pipelab.app.views.results import BREAKDOWN_CAPTION
from pipelab.app.warm_up import KEY as WARM_UP
from pipelab.engine.config import RunConfig
from pipelab.engine.runtime.rank_processes import Cancelled, RunFailed
from pipelab.lessons import LESSONS, get_lesson, i18n
from tests.app_pages import switch

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
PAGES = [lesson.slug for lesson in LESSONS]
"""Every lesson page's address (/<slug>), from the catalog."""
RUN_TIMEOUT = 90
TRADEOFF_TITLE = i18n.text("en", "chart.tradeoff_title")

# Small runs: 2 devices, 2 micro-batches, a thin MLP (only knobs the page shows are set).
SMALL = {"stages": 2, "microbatches": 2, "layers": 4, "hidden": 32, "microbatch_size": 4, "steps": 2,
         "chunks": 2, "model": "mlp"}


def open_page(slug: str | None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.run()
    if slug is not None:
        switch(at, slug)
        at.run()
    assert not at.exception, at.exception
    return at


def set_knobs(at: AppTest, slug: str, values: dict) -> None:
    keys = {w.key for w in at.text_input} | {w.key for w in at.selectbox}
    for name, value in values.items():
        key = f"{slug}:knob:{name}"
        if key not in keys:
            continue
        if name == "model":
            at.selectbox(key=key).set_value(value)
        else:  # the whole-number knobs are text fields (lesson_page.knob_form)
            at.text_input(key=key).set_value(str(value))


def chart_specs(at: AppTest) -> list[dict]:
    """Charts of runs; the unit-cost theory preview every page shows up front, lesson 6's
    memory trade-off (theory up front too, app/views/extras/memory_tradeoff.py) and the hidden chart that
    loads the browser's chart code (app/warm_up.py) are left out."""
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return [s for s in specs if not _title(s).startswith(("Theory", TRADEOFF_TITLE))
            and s["layout"].get("meta") != WARM_UP]


def _title(spec: dict) -> str:
    title = spec.get("layout", {}).get("title", {})
    return title.get("text", "") if isinstance(title, dict) else str(title)


def wait_for_charts(at: AppTest, timeout: float = RUN_TIMEOUT) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert not at.exception, at.exception
        specs = chart_specs(at)
        if specs:
            return specs
        assert not at.error, [e.value for e in at.error]
        time.sleep(0.5)
        at.run()
    raise AssertionError("no chart within the time limit")


def open_details(at: AppTest, key: str) -> None:
    """Open a run's Details, as a click on it does: the page reruns and builds its content."""
    at.session_state[f"{key}:details"] = True
    at.run()


@pytest.mark.slow
@pytest.mark.parametrize("page", [*PAGES, "page_scripts/about.py"])
def test_every_page_renders(page):
    at = open_page(page)
    assert at.title, "page has a title"
    if page in PAGES:
        assert any(b.label == "Run" for b in at.button)
    else:  # About's colour key: every colour a chart uses, lesson 7's all-reduce (R) included
        assert any("R all-reduce" in m.value and "U optimizer" in m.value for m in at.markdown)


@pytest.mark.slow
def test_the_first_page_of_a_session_loads_the_browsers_chart_and_table_code_once():
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.run()
    warm = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert [s["layout"].get("meta") for s in warm].count(WARM_UP) == 1
    assert any(WARM_UP in df.value.columns for df in at.dataframe)
    at.run()  # a later rerun of the session sends neither again
    assert all(json.loads(c.proto.spec)["layout"].get("meta") != WARM_UP for c in at.get("plotly_chart"))
    assert not any(WARM_UP in df.value.columns for df in at.dataframe)


@pytest.mark.slow
@pytest.mark.parametrize("slug", [lesson.slug for lesson in LESSONS])
def test_run_shows_one_timeline_row_per_device(slug):
    at = open_page(slug)
    set_knobs(at, slug, SMALL)
    at.button(key=f"{slug}:main:start").click().run()
    specs = wait_for_charts(at)
    timeline = specs[0]
    # The lesson's own run: p devices (2 where the page lets the stages be set; lesson 7 fixes 4).
    p = SMALL["stages"] if "stages" in get_lesson(slug).editable else get_lesson(slug).defaults.stages
    devices = [f"device {r}" for r in range(p)]
    rows = {y for trace in timeline["data"] for y in trace["y"]}
    assert rows == set(devices)
    assert timeline["layout"]["yaxis"]["categoryarray"] == devices
    lesson = get_lesson(slug)
    if not any({"stages", "data_parallel"} & set(c.overrides) for c in lesson.comparisons):
        simulated = specs[1]  # the simulated timeline, or a compared run's on the same devices
        assert {y for trace in simulated["data"] for y in trace["y"]} == set(devices)
    assert not at.exception


@pytest.mark.slow
def test_a_data_parallel_run_shows_every_process_grouped_by_pipeline_with_its_reduce():
    at = open_page("pp-dp")
    set_knobs(at, "pp-dp", SMALL)
    at.button(key="pp-dp:main:start").click().run()
    specs = wait_for_charts(at)
    two = next(spec for spec in specs if "2 pipelines of 2 stages, all-reduce after" in spec["layout"]["title"]["text"])
    rows = two["layout"]["yaxis"]["categoryarray"]
    assert rows == ["pipeline 0 · device 0", "pipeline 0 · device 1", "pipeline 1 · device 0", "pipeline 1 · device 1"]
    reduces = [trace for trace in two["data"] if trace["name"].startswith("R ")]
    assert reduces and set(reduces[0]["y"]) == set(rows)  # every process reduces its stage
    assert not at.exception


@pytest.mark.slow
def test_gpipe_gradient_check_passes():
    at = open_page("gpipe")
    set_knobs(at, "gpipe", SMALL)
    at.button(key="gpipe:main:start").click().run()
    wait_for_charts(at)
    assert any("gradient check" in s.value and "PASS" in s.value for s in at.success)
    # Details stays unbuilt while folded: no memory table, no breakdown until it is opened.
    assert not [df for df in at.dataframe if "peak activations (MiB)" in df.value.columns]
    assert not [c for c in at.caption if c.value.startswith(BREAKDOWN_CAPTION)]
    open_details(at, "gpipe:result")
    # Memory next to theory: the simulator's peak for this run's sizes, per device.
    activations = next(df.value for df in at.dataframe if "peak activations (MiB)" in df.value.columns)
    assert list(activations["peak activations (MiB)"]) == list(activations["peak activations, simulated (MiB)"])
    # The simulated chart's caption gives this run's bubble for each action's own mean cost.
    per_action = [c.value for c in at.caption if "each action's own mean cost" in c.value]
    assert len(per_action) == 1 and "bubble of 0." in per_action[0]
    # Under the bubble chart, the breakdown from the formula to this run, and its caption.
    assert len([c for c in at.caption if c.value.startswith(BREAKDOWN_CAPTION)]) == 1


@pytest.mark.parametrize("metrics, expected", [
    ({"device_steady_bubble_fraction": 0.0213}, "Inside each device's span (its first to its last action), the device "
                                         "clock shows a bubble of 0.021"),
    ({"device_steady_bubble_fraction": None}, None),  # none reported
])
def test_breakdown_caption_names_the_bubble_inside_each_devices_span(metrics, expected):
    from pipelab.app.views.results import breakdown_caption
    from tests.fake_results import fake_metrics
    caption = breakdown_caption(fake_metrics(**metrics))
    assert caption.startswith(BREAKDOWN_CAPTION)
    assert (expected in caption) if expected else caption == BREAKDOWN_CAPTION


def test_breakdown_figure_has_a_bar_per_row_coloured_by_what_it_is():
    from pipelab.app.views.charts import SERIES, breakdown_figure
    from pipelab.engine.theory.breakdown import TableRow
    rows = [TableRow("formula: every stage at the run's mean costs", 0.273, None, "formula"),
            TableRow("+ message latency", 0.30, 0.027, "simulated"),
            TableRow("measured, device clock", 0.41, 0.11, "device"),
            TableRow("measured, wall clock (cores shared)", 0.55, 0.14, "wall")]
    bar = breakdown_figure(rows).data[0]
    assert list(bar.y) == [row.label for row in rows] and list(bar.x) == [0.273, 0.30, 0.41, 0.55]
    assert list(bar.marker.color) == [SERIES["formula"], SERIES["simulated"], SERIES["device"], SERIES["wall"]]
    assert list(bar.text) == ["0.273", "0.300 (+0.027)", "0.410 (+0.110)", "0.550 (+0.140)"]


@pytest.mark.parametrize("metrics, expected", [
    ({"device_bubble_fraction": 0.412, "simulated_bubble_fraction_per_action_costs": 0.3961},
     "it gives a bubble of 0.396 (device clock 0.412)"),
    ({"device_bubble_fraction": 0.412}, None),  # a result saved before runs reported it
])
def test_simulated_caption_names_the_per_action_bubble(metrics, expected):
    from pipelab.app.views.results import SIM_CAPTION, sim_caption
    from tests.fake_results import fake_metrics
    caption = sim_caption(fake_metrics(**metrics))
    assert caption.startswith(SIM_CAPTION)
    assert (expected in caption) if expected else caption == SIM_CAPTION


def red_lines(at) -> list[str]:
    """The settings' one-line reason: under its field, then beside each Run button."""
    return [m.value[len(":red["):-1] for m in at.markdown if m.value.startswith(":red[")]


def test_stages_over_server_limit_is_one_line_error(monkeypatch):
    monkeypatch.setenv("PIPELAB_MAX_STAGES", "2")
    at = open_page("gpipe")
    set_knobs(at, "gpipe", {**SMALL, "stages": 3})
    at.run()
    assert at.button(key="gpipe:main:start").disabled
    assert not at.exception
    lines = red_lines(at)
    assert lines[0] == "stages p (devices) is at most 2 on this server, got 3", "under the field"
    assert "\n" not in lines[0] and all(line.endswith(lines[0]) for line in lines[1:]), "and beside Run"
    assert not chart_specs(at)


def test_fewer_layers_than_stages_is_one_line_error():
    at = open_page("naive")
    set_knobs(at, "naive", {"stages": 4, "layers": 1, "microbatch_size": 4})
    at.run()
    assert at.button(key="naive:main:start").disabled
    assert not at.exception
    lines = red_lines(at)
    assert "\n" not in lines[0] and "layers" in lines[0] and all(line.endswith(lines[0]) for line in lines[1:])


def test_playground_marks_the_broken_step():
    at = open_page("playground")
    at.text_area(key="playground:custom").set_value("rank 0: 0B0 0F0\n")
    at.button(key="playground:validate").click().run()
    assert not at.exception
    assert any("before its forward" in e.value for e in at.error)
    assert any("<-- here" in c.value and "*0B0" in c.value for c in at.code)


def test_playground_validates_and_simulates_the_example():
    at = open_page("playground")
    at.button(key="playground:validate").click().run()
    assert not at.exception and not at.error
    specs = chart_specs(at)
    assert specs and {y for t in specs[0]["data"] for y in t["y"]} == {"device 0", "device 1"}


# ---- the job runner alone ----------------------------------------------------------------

def _fake_run(gate: threading.Event):
    def run(config, limits, on_progress=None, cancel=None, **_):
        on_progress(0.5, "step 1 of 2")
        while not gate.wait(0.01):
            if cancel.is_set():
                raise Cancelled("run cancelled")
        return f"result of {config.stages}"
    return run


def _wait_until(runner, job_id, holds, timeout=5.0):
    """The job's status once ``holds(status)``: a test waits for what it then reads."""
    deadline = time.monotonic() + timeout
    while not holds(status := runner.status(job_id)):
        assert time.monotonic() < deadline, status
        time.sleep(0.01)
    return status


def _wait(runner, job_id, states, timeout=5.0):
    # A finished job's state, result and error change together (under the runner's lock), so
    # waiting for DONE is waiting for the result; RUNNING comes before the first progress text.
    return _wait_until(runner, job_id, lambda status: status.state in states, timeout)


def test_runner_queues_fifo_and_cancels():
    gate = threading.Event()
    runner = JobRunner(max_concurrent=1, run_fn=_fake_run(gate))
    a, b, c = (runner.submit(RunConfig(stages=s)) for s in (2, 3, 4))
    # The worker reports its progress after the job turns RUNNING: wait for the text itself.
    assert _wait_until(runner, a, lambda status: status.text == "running: step 1 of 2").state == RUNNING
    assert (runner.status(b).state, runner.status(b).position) == (QUEUED, 1)
    assert runner.status(c).text == "queued: position 2"
    runner.cancel(b)
    assert runner.status(b).state == CANCELLED and runner.status(c).position == 1
    gate.set()
    assert _wait(runner, a, (DONE,)).result == "result of 2"
    assert _wait(runner, c, (DONE,)).result == "result of 4"


def test_a_closed_tab_cancels_its_queued_runs_and_lets_the_running_one_finish():
    """A tab gone longer than the grace: its queued runs are cancelled, its running one finishes
    (and is kept); an open tab's runs, and a tab gone for less than the grace, are left alone."""
    gate = threading.Event()
    runner = JobRunner(max_concurrent=1, run_fn=_fake_run(gate))
    alive, now = {"closed": True, "open": True}, [0.0]
    tabs = ClosedTabs(runner, lambda session: alive[session], grace_s=20.0, clock=lambda: now[0])
    running, queued = runner.submit(RunConfig(stages=2)), runner.submit(RunConfig(stages=3))
    tabs.add("closed", [running, queued])
    other = runner.submit(RunConfig(stages=4))
    tabs.add("open", [other])
    _wait(runner, running, (RUNNING,))
    alive["closed"] = False
    assert tabs.sweep() == []  # just gone: a reload or a dropped socket comes back within the grace
    now[0] = 19.0
    assert tabs.sweep() == []
    now[0] = 21.0
    assert tabs.sweep() == [queued]
    assert runner.status(queued).state == CANCELLED and runner.status(other).state == QUEUED
    assert runner.status(running).state == RUNNING and tabs.sessions() == ["open"]
    gate.set()
    assert _wait(runner, running, (DONE,)).result == "result of 2"
    assert _wait(runner, other, (DONE,)).result == "result of 4"
    tabs.sweep()
    assert tabs.sessions() == [], "finished jobs are forgotten"


def test_a_tab_back_within_the_grace_keeps_its_queued_runs():
    gate = threading.Event()
    runner = JobRunner(max_concurrent=1, run_fn=_fake_run(gate))
    alive, now = {"tab": False}, [0.0]
    tabs = ClosedTabs(runner, lambda session: alive[session], grace_s=20.0, clock=lambda: now[0])
    running, queued = runner.submit(RunConfig(stages=2)), runner.submit(RunConfig(stages=3))
    tabs.add("tab", [running, queued])
    _wait(runner, running, (RUNNING,))
    tabs.sweep()
    now[0], alive["tab"] = 15.0, True
    tabs.sweep()
    now[0], alive["tab"] = 30.0, False  # gone again: the grace counts from here
    assert tabs.sweep() == [] and runner.status(queued).state == QUEUED
    gate.set()
    assert _wait(runner, queued, (DONE,)).result == "result of 3"


def test_the_same_settings_twice_are_measured_twice():
    calls = []

    def counting(config, limits, on_progress=None, cancel=None, **_):
        calls.append(config)
        return f"measurement {len(calls)}"
    runner = JobRunner(max_concurrent=1, run_fn=counting)
    first, second = (runner.submit(RunConfig(stages=2)) for _ in range(2))
    assert [_wait(runner, j, (DONE,)).result for j in (first, second)] == ["measurement 1", "measurement 2"]
    assert calls == [RunConfig(stages=2)] * 2


def test_stopping_the_runner_cancels_every_job_and_waits_for_the_running_one():
    gate = threading.Event()  # never set: the running job ends only when cancelled
    runner = JobRunner(max_concurrent=1, run_fn=_fake_run(gate))
    running, queued = runner.submit(RunConfig(stages=2)), runner.submit(RunConfig(stages=3))
    _wait(runner, running, (RUNNING,))
    assert runner.stop(timeout=5.0)  # returns once the running job has ended
    assert [runner.status(j).state for j in (running, queued)] == [CANCELLED, CANCELLED]
    assert runner.counts() == (0, 0)
    late = runner.submit(RunConfig(stages=4))
    assert runner.status(late).state == QUEUED and runner.counts() == (0, 1)  # a stopped runner starts nothing


def test_stopping_the_runner_says_when_a_run_outlives_the_timeout():
    release = threading.Event()  # set by the test, not by a clock: the run outlives stop() however slow the host

    def deaf(config, limits, on_progress=None, cancel=None, **_):
        release.wait(10.0)  # ignores its cancel Event
        return "late"
    runner = JobRunner(run_fn=deaf)
    job = runner.submit(RunConfig())
    assert not runner.stop(timeout=0.05)
    release.set()
    assert _wait(runner, job, (CANCELLED,)).error == "run cancelled"


def test_runner_cancels_a_running_job_and_reports_failures_in_one_line():
    gate = threading.Event()
    runner = JobRunner(max_concurrent=1, run_fn=_fake_run(gate))
    a = runner.submit(RunConfig(stages=2))
    _wait(runner, a, (RUNNING,))
    runner.cancel(a)
    assert _wait(runner, a, (CANCELLED,)).error == "run cancelled"

    def broken(config, limits, on_progress=None, cancel=None, **_):
        raise RuntimeError("boom\nsecond line")
    runner = JobRunner(run_fn=broken)
    status = _wait(runner, runner.submit(RunConfig()), (FAILED,))
    assert status.error == "RuntimeError: boom"


@pytest.mark.parametrize("failure, chinese", [
    (RunFailed.of("hung", ranks=(1,), seconds="8"), "设备 1 已 8 秒没有进展（卡住）；运行已停止"),
    (RunFailed.of("rank_killed", rank=0, signal=9), "设备 0 在运行中被信号 9 终止"),
    (RunFailed.of("time_limit_reached", seconds="120", ranks=(0, 1)), "已到 120 秒的时间限制；设备 0，1 还没有完成"),
])
def test_a_failed_run_is_said_in_the_page_language(failure, chinese):
    def failing(config, limits, on_progress=None, cancel=None, **_):
        raise failure
    runner = JobRunner(run_fn=failing)
    status = _wait(runner, runner.submit(RunConfig()), (FAILED,))
    assert status.error == str(failure)  # English, as the CLI says it
    assert i18n.error_text("zh", status.error) == chinese


def test_runner_keeps_bounded_history():
    runner = JobRunner(max_concurrent=2, keep_jobs=5,
                       run_fn=lambda config, limits, on_progress=None, cancel=None, **_: config.stages)
    ids = [runner.submit(RunConfig(stages=s)) for s in range(1, 13)]
    # Every job, not the last one only: two run at once, so the one before it may finish after it.
    assert runner.wait(ids, timeout=5.0)
    assert len(runner._jobs) <= 5
    assert runner.status(ids[0]).state == "unknown"


@pytest.mark.slow
def test_pipedream_comparison_puts_every_loss_on_one_chart():
    at = open_page("pipedream")
    set_knobs(at, "pipedream", {**SMALL, "steps": 3})
    at.button(key="pipedream:compare:start").click().run()
    wait_for_charts(at)
    open_details(at, "pipedream:compare")
    specs = chart_specs(at)
    losses = [s for s in specs if "Loss per step" in s["layout"]["title"]["text"]]
    assert losses and len(losses[-1]["data"]) == 3
    # Each run's bubble inside each device's span, next to the whole step's, in the table.
    table = next(df.value for df in at.dataframe if "bubble inside each device's span" in df.value.columns)
    assert len(table) == 3
    assert all(own <= step for own, step in zip(table["bubble inside each device's span"], table["bubble (device)"]))
    # Weight versions per device, measured beside theory: stage r of PipeDream keeps p - r, 1F1B one.
    versions = next(df.value for df in at.dataframe if "device 1" in df.value.columns and "run" in df.value.columns)
    assert list(versions["device 0"])[-1] == "1 (1)" and list(versions["device 1"])[0].endswith("(1)")
    assert list(versions["device 0"])[0].endswith("(2)")  # PipeDream's first stage: p - 0 = 2 versions
    # PipeDream streams its steps: its timeline shows all of them, each device's starts marked.
    assert at.checkbox(key="pipedream:compare:all-steps").value is True
    assert len(specs[0]["layout"]["shapes"]) == 2 * 3  # 2 devices x 3 steps
    assert not at.exception


@pytest.mark.slow
def test_a_second_run_measures_again_rather_than_replaying_the_first():
    at = open_page("1f1b")
    set_knobs(at, "1f1b", SMALL)
    at.button(key="1f1b:main:start").click().run()
    wait_for_charts(at)
    first = at.session_state["batch:1f1b:main"]
    at.button(key="1f1b:main:start").click().run()
    wait_for_charts(at)
    second = at.session_state["batch:1f1b:main"]
    (_, status), = second["finished"]
    assert status.state == "done"
    assert second["run_ids"] != first["run_ids"]
    assert status.result is not first["finished"][0][1].result  # a new measurement, kept under a new id


@pytest.mark.slow
def test_playground_runs_a_custom_schedule():
    at = open_page("playground")
    set_knobs(at, "playground", {"stages": 2, "layers": 2, "hidden": 32, "microbatch_size": 4, "steps": 2})
    at.button(key="playground:custom:start").click().run()
    specs = wait_for_charts(at)
    assert {y for t in specs[0]["data"] for y in t["y"]} == {"device 0", "device 1"}


@pytest.mark.slow
def test_gpipe_sweep_and_wall_clock_toggle():
    at = open_page("gpipe")
    set_knobs(at, "gpipe", SMALL)
    at.button(key="gpipe:sweep:start").click().run()
    specs = wait_for_charts(at)
    sweep = next(s for s in specs if s["layout"]["title"]["text"] == "Bubble fraction against micro-batches m")
    assert [t["name"] for t in sweep["data"]][-1] == "formula"
    kept = next(c.value for c in at.caption if c.value.startswith("Kept on this server"))
    assert all(f"[m = {m}](runs?run=" in kept for m in (4, 8, 16)), kept  # not a bare "4, 8, 16"
    # Its three values in one launch, steps taking turns (paired.sweep_request), each run measured as long as a Run
    (_, status), = at.session_state["batch:gpipe:sweep"]["finished"]
    assert status.result.method == "steps in turn"
    assert len({r.metrics.launch_id for r in status.result.shown()}) == 1
    assert any(c.value.startswith("Measured in one launch, the values' steps taking turns") for c in at.caption)
    at.button(key="gpipe:main:start").click().run()
    deadline = time.monotonic() + RUN_TIMEOUT  # the sweep's charts are already there: wait for the run's
    while not any(r.key == "gpipe:result:clock" for r in at.radio) and time.monotonic() < deadline:
        assert not at.exception, at.exception
        time.sleep(0.5)
        at.run()
    at.radio(key="gpipe:result:clock").set_value("wall clock").run()
    assert not at.exception
    assert any("wall clock" in s["layout"]["title"]["text"] for s in chart_specs(at))


@pytest.mark.slow
def test_a_rank_re_running_the_main_script_does_not_start_the_app():
    """multiprocessing runs the parent's __main__ (Streamlit makes that app/main.py) in every
    rank as "__mp_main__", exactly like this; it must not import streamlit or start a runner."""
    import subprocess
    import sys
    code = ("import runpy, sys; runpy.run_path(sys.argv[1], run_name='__mp_main__'); "
            "print(sorted(m for m in ('streamlit', 'plotly', 'pipelab.app.runner.runs') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, MAIN], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-1000:]
    assert out.stdout.strip() == "[]"


def test_theory_preview_is_built_once_for_all_sessions_with_the_same_knobs():
    from pipelab.app.screens.lesson_page import unit_cost_theory
    from pipelab.lessons import Knobs, get_lesson
    unit_cost_theory.clear()
    knobs = get_lesson("1f1b").defaults
    caption, figure = unit_cost_theory(knobs)
    assert unit_cost_theory(Knobs(**{f: getattr(knobs, f) for f in knobs.__dataclass_fields__}))[1] is figure
    assert "Bubble" in caption and len(figure.data) >= 2  # F and B bars at least
    assert unit_cost_theory(knobs.with_overrides({"microbatches": 16}))[1] is not figure
    assert unit_cost_theory(knobs.with_overrides({"microbatches": 0})) is None  # no schedule to draw


@pytest.mark.parametrize("schedule, steady_said", [("pipedream", True), ("pipedream-2bw", True), ("1f1b", False)])
def test_an_asynchronous_schedule_s_preview_says_its_bubble_counts_the_fill(schedule, steady_said):
    """The walk (issue 47): lesson 3's preview read "bubble 0.273" beside the claim table's steady
    formula 0.000 for the same run: the preview's figure is the whole run, fill and drain included."""
    from pipelab.app.screens.lesson_page import unit_cost_theory
    from pipelab.lessons import get_lesson
    caption, _ = unit_cost_theory(get_lesson("pipedream").defaults.with_overrides({"schedule": schedule}))
    assert ("in steady state, the part its claim judges, theory's idle share is 0" in caption) is steady_said


@pytest.mark.slow
def test_zero_bubble_overlap_toggle_and_the_dualpipe_table_of_four_real_runs():
    at = open_page("zero-bubble")
    set_knobs(at, "zero-bubble", {**SMALL, "microbatches": 4})  # DualPipeV needs m >= 2p
    at.run()
    theory = next(df.value for df in at.dataframe if "README (bubble; parameters; activations)" in df.value.columns)
    assert list(theory["schedule"]) == ["1F1B", "ZB-H1", "ZB-V", "DualPipeV"]
    # (p-1)(F+I+W) and (p-1)(F+I-W) at p = 2, formula / simulated
    assert list(theory["bubble (T_F)"])[:2] == ["3 / 3", "1 / 1"]
    # Overlapping steps reach every run of the comparison; their timelines show all steps, marked.
    at.checkbox(key="zero-bubble:knob:overlap_steps").check().run()
    at.button(key="zero-bubble:main:start").click().run()  # the claim compares: Run runs the comparison
    specs = wait_for_charts(at)
    assert at.checkbox(key="zero-bubble:result:all-steps").value is True
    timelines = [s for s in specs if s["layout"]["title"]["text"].startswith("Measured, ")]
    steps = get_lesson("zero-bubble").defaults.steps  # not on this page's form
    assert len(timelines) == 4 and all(len(s["layout"]["shapes"]) == 2 * steps for s in timelines)
    # Each run's bubble breakdown under the comparison's Details, one tab per run.
    open_details(at, "zero-bubble:result")
    assert len([s for s in chart_specs(at) if s["layout"]["title"]["text"].startswith("Bubble breakdown")]) == 4
    # Run all four: theory beside measurement on the table's three columns.
    at.button(key="zero-bubble:dualpipe:start").click().run()
    deadline = time.monotonic() + 3 * RUN_TIMEOUT
    while time.monotonic() < deadline and not any("activation bytes, measured (× 1F1B's)"
                                                  in df.value.columns for df in at.dataframe):
        assert not at.exception and not at.error, [e.value for e in at.error]
        time.sleep(1)
        at.run()
    bubble, params, acts = (next(df.value for df in at.dataframe if column in df.value.columns) for column in (
        "measured (ms, worst device)", "parameters, measured (× 1F1B's)",
        "activations, measured (worst device)"))
    assert list(bubble["schedule"]) == ["1F1B", "ZB-H1", "ZB-V", "DualPipeV"]
    assert all(ms > 0 for ms in bubble["measured (ms, worst device)"])
    assert list(params["parameters, measured (× 1F1B's)"])[0] == 1.0
    # Held activations are counted from the order the devices ran: exactly the simulator's.
    assert list(acts["activations, measured (worst device)"]) == list(acts["activations, simulated"])
    # Its verdict has a status (issue 47), judged against theory at the runs' own costs, in the table too.
    verdicts = [box.value for box in (*at.success, *at.info, *at.warning)
                if "Theory at these runs' own costs" in box.value]
    assert len(verdicts) == 1 and verdicts[0].startswith("**Verdict: ")
    assert all(ms > 0 for ms in bubble["simulated, own costs (ms)"])
    assert not at.exception


def test_zero_bubble_draws_every_schedule_on_the_memory_trade_off_before_any_run():
    at = open_page("zero-bubble")
    set_knobs(at, "zero-bubble", {**SMALL, "stages": 4, "microbatches": 8})
    at.run()
    (spec,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if _title(json.loads(c.proto.spec))
               == TRADEOFF_TITLE]
    theory = spec["data"][0]
    points = dict(zip(theory["customdata"], zip(theory["x"], theory["y"])))  # each point's schedule id
    assert {"1f1b", "zb-v", "v-half", "v-min"} <= set(points)
    assert {"1F1B", "ZB-V", "V-Half", "V-Min"} <= set(theory["text"])  # named as the page says them
    assert points["v-min"][0] < points["v-half"][0] < points["1f1b"][0]  # held activations: 2 < 3 < 4
    assert at.button(key="zero-bubble:memory:start")  # runs them all, as the DualPipe table's button does
    assert not at.exception


@pytest.mark.slow
def test_run_them_all_puts_each_run_beside_its_theory_on_the_memory_trade_off():
    at = open_page("zero-bubble")
    set_knobs(at, "zero-bubble", {**SMALL, "microbatches": 4})
    at.run()
    at.button(key="zero-bubble:memory:start").click().run()
    measured_name = i18n.text("en", "chart.measured_device")

    def traces():
        (spec,) = [s for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart")) if _title(s) == TRADEOFF_TITLE]
        return {trace["name"]: trace for trace in spec["data"]}

    deadline = time.monotonic() + 4 * RUN_TIMEOUT
    while time.monotonic() < deadline and measured_name not in traces():
        assert not at.exception and not at.error, [e.value for e in at.error]
        time.sleep(1)
        at.run()
    theory, runs = traces()[i18n.text("en", "chart.tradeoff_theory")], traces()[measured_name]
    assert set(runs["customdata"]) == set(theory["customdata"]) >= {"v-min", "v-half", "1f1b"}  # every schedule ran
    # Held activations are counted along the order each device ran: on the theory's vertical,
    # where the order does not depend on costs. A schedule built from costs runs the order its
    # profiled costs give (the theory's point is at unit costs), within its memory limit.
    from pipelab.engine.schedules import get_schedule_info
    measured, expected = dict(zip(runs["customdata"], runs["x"])), dict(zip(theory["customdata"], theory["x"]))
    fixed = {name for name in expected if not get_schedule_info(name).takes_costs}
    assert {n: measured[n] for n in fixed} == {n: expected[n] for n in fixed}
    p = SMALL["stages"]
    assert measured["zb-1p"] <= p and measured["zb-2p"] <= 2 * p
    assert all(0 < y < 1 for y in runs["y"])
    # Its verdict has a status (issue 47): the measured frontier against theory at the runs' own costs.
    verdicts = [box.value for box in (*at.success, *at.info, *at.warning) if "no schedule beats these" in box.value]
    assert len(verdicts) == 1 and verdicts[0].startswith("**Verdict: ") and "at each run's own costs" in verdicts[0]


def test_overlapping_steps_are_named_in_a_runs_settings_and_in_what_changed():
    from pipelab.app.views.settings_diff import changed_settings, settings_text
    assert settings_text(RunConfig(overlap_steps=True)).endswith(", steps overlapping")
    assert not settings_text(RunConfig()).endswith("overlapping")
    assert changed_settings(RunConfig(), RunConfig(overlap_steps=True)) == "steps overlap False → True"


@pytest.mark.parametrize("model, english, chinese", [
    ("mlp", "mlp model", "多层感知机模型（mlp）"),
    ("gpt", "gpt model", "小型 GPT 模型（gpt）"),
    ("wide-first", "wide-first model", "首层加宽的多层感知机模型（wide-first）"),
])
def test_a_runs_settings_name_its_model_in_the_pages_language(model, english, chinese):
    """The Chinese caption says the model in Chinese, with the picker's id beside it (issue 47)."""
    from pipelab.app.views.settings_diff import settings_text
    assert english in settings_text(RunConfig(model=model))
    assert chinese in settings_text(RunConfig(model=model), lang="zh")
    assert i18n.model_said("zh", "sequential") == "sequential", "a user's model keeps its own name"


def test_a_runs_settings_name_its_schedule_as_the_picker_does():
    from pipelab.app.views.settings_diff import settings_text
    assert settings_text(RunConfig(schedule="naive"), lang="zh").startswith("朴素方式（naive），")
    assert settings_text(RunConfig(schedule="naive")).startswith("naive, ")


# ---- a comparison's caption names the figure its pairs or rounds are read by (issue 47) -------

MY_HEADLINES = ("naive", "gpipe", "pipedream", "1f1b", "interleaved", "zero-bubble")


def test_the_side_by_side_caption_names_its_figure_in_the_unit_its_table_shows():
    """Issue 47: lesson 3's rounds read "0.084" (its first run's step in seconds), no figure of
    its table, and "the headline pair by pair" was never defined."""
    from pipelab.app.runner.runs import headline_values
    # No lesson headline: the rounds rank by the first run's step, shown in ms as the tables show it.
    assert headline_values({"headline": False, "lesson": "naive"}, [0.0841, 0.0902]) == (
        "the first run's step time (ms, device clock)", "84.1, 90.2")
    for slug in MY_HEADLINES:
        assert get_lesson(slug).headline is not None
        figure, values = headline_values({"headline": True, "lesson": slug}, [0.0841])
        assert figure == i18n.text("en", f"runs.{slug}.headline") and values == "0.084"
        assert i18n.has("zh", f"runs.{slug}.headline")
    # A difference that rounds to zero has no sign (lesson 4 read "-0.000" among its pairs).
    assert headline_values({"headline": True, "lesson": "1f1b"}, [-0.0004, 0.006])[1] == "0.000, 0.006"
    # A lesson that names no figure of its own still says what the pairs are read by.
    assert headline_values({"headline": True, "lesson": "recap"}, [1.0])[0] == i18n.text("en", "runs.headline.lesson")
    said = " ".join(i18n.text("en", key, figure="F", values="1", rounds=3, pairs=5)
                    for key in ("runs.side_by_side", "runs.pair_values", "runs.steps_in_turn"))
    assert "headline" not in said and said.count("F") >= 2


def test_the_steps_in_turn_caption_runs_on_in_chinese():
    """Issue 47: "旁边给出其范围。 每一对步中的…": the two sentences were joined by a space."""
    from pipelab.app.runner.runs import pairs_caption
    chinese = pairs_caption("zh", 8, "一步时间", "0.99，0.95")
    assert "。每一对步中的一步时间：0.99，0.95" in chinese and "。 " not in chinese
    english = pairs_caption("en", 8, "the step time", "0.99, 0.95")
    assert "beside it. In each pair of steps, the step time: 0.99, 0.95" in english
    assert pairs_caption("en", 8, None, "") == i18n.text("en", "runs.steps_in_turn", pairs=8)
