"""The playground's runtime choice (issue 28, item 3): ours, torch's or both; settings torch's
runtime refuses disable it with their one line; both draw two measured timelines one above
the other with the sentence saying where and why they differ."""

from __future__ import annotations

import json
import time

import pytest

from pipelab.lessons import i18n
from tests.conftest import wait_until_gone
from tests.test_app import RUN_TIMEOUT, open_page, set_knobs

RADIO = "playground:runtime"


def test_torchs_runtime_is_offered_and_a_setting_it_refuses_disables_it_with_the_reason():
    at = open_page("playground")
    radio = at.radio(key=RADIO)
    assert not radio.disabled and list(radio.options) == ["ours", "torch's", "both, one above the other"]
    at.checkbox(key="playground:knob:overlap_steps").check().run()
    assert at.radio(key=RADIO).disabled
    captions = [c.value for c in at.caption]
    assert any(c.startswith("torch's runtime cannot run these settings: steps overlapping (each of torch's steps "
                            "ends with a flush)") for c in captions), captions
    at.checkbox(key="playground:knob:overlap_steps").uncheck().run()
    at.selectbox(key="playground:knob:schedule").set_value("pipedream").run()
    assert at.radio(key=RADIO).disabled
    assert any("U actions" in c.value for c in at.caption)
    assert not at.exception


@pytest.mark.slow
def test_both_runtimes_draw_two_timelines_one_above_the_other_and_say_why_they_differ():
    at = open_page("playground")
    at.selectbox(key="playground:knob:schedule").set_value("1f1b")
    set_knobs(at, "playground", {"stages": 2, "microbatches": 4, "layers": 4, "hidden": 32, "microbatch_size": 4,
                                 "steps": 3, "model": "mlp"})
    at.radio(key=RADIO).set_value(2).run()  # both
    at.button(key="playground:main:start").click().run()
    deadline = time.monotonic() + 2 * RUN_TIMEOUT
    while not any(r.key == "playground:runtimes:clock" for r in at.radio) and time.monotonic() < deadline:
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
        time.sleep(0.5)
        at.run()
    sentence = next(i.value for i in at.info if i.value.startswith("Wall clock: torch's runtime took"))
    assert "ms inside the actions" in sentence and "divides the gradients by m" in sentence
    assert "On the device clock" in sentence

    def timeline_titles() -> list[str]:
        specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
        return [s["layout"]["title"]["text"] for s in specs if "runtime:" in s["layout"]["title"]["text"]]
    wall = timeline_titles()
    assert [t.split(":")[0] for t in wall] == ["1F1B, our runtime", "1F1B, torch's runtime"]  # ours above torch's
    assert all("wall clock" in t for t in wall)
    at.radio(key="playground:runtimes:clock").set_value("device clock").run()
    assert all("device clock" in t for t in timeline_titles()) and len(timeline_titles()) == 2
    batch = at.session_state["batch:playground:main"]
    assert [s.result.config.runtime for _, s in batch["finished"]] == ["engine", "torch"]
    assert not at.exception
    assert wait_until_gone() == []


def test_a_batch_on_both_runtimes_puts_ours_in_the_top_row_and_torchs_below():
    from pipelab.app.views.runtime_choice import batch
    from pipelab.engine.config import RunConfig
    pairs = [(name, RunConfig(schedule=name, stages=2, microbatches=4)) for name in ("1f1b", "gpipe")]
    both = batch(pairs, "both")
    assert [(c.schedule, c.runtime) for _, c in both] == [("1f1b", "engine"), ("gpipe", "engine"),
                                                          ("1f1b", "torch"), ("gpipe", "torch")]
    assert [label.text("en") for label, _ in both][2] == "1F1B, torch's runtime"
    assert batch(pairs, "engine") == pairs  # ours alone: the runs and labels the chooser always had


@pytest.mark.slow
def test_the_recap_chooser_runs_the_top_two_on_both_runtimes():
    from pipelab.lessons.overview import rank_schedules
    from tests.test_course_pages import finished_table
    at = open_page("page_scripts/recap.py")
    for key, value in (("recap:p", "2"), ("recap:m", "2")):
        at.text_input(key=key).set_value(value).run()
    at.number_input(key="recap:budget").set_value(2.0).run()
    at.radio(key="recap:chooser:runtime").set_value(2).run()  # both
    at.button(key="recap:chooser:start").click().run()
    top = [c.row.name for c in rank_schedules(2, 2, budget=2.0) if c.fits][:2]
    summary = finished_table(at, 4 * RUN_TIMEOUT)  # the page's other tables (the split's) come first
    said = [i18n.schedule_said("en", name) for name in top]  # the registry's labels: ZB-V, not zb-v
    assert list(summary["run"]) == [f"{name}, our runtime" for name in said] + [f"{name}, torch's runtime"
                                                                                 for name in said]
    sentences = [i.value for i in at.info if "Wall clock: torch's runtime took" in i.value]
    assert [s.split(":")[0] for s in sentences] == [f"**{name}**" for name in said]
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert sum("runtime" in title for title in titles) == 4
    assert wait_until_gone() == []


@pytest.mark.slow
def test_torchs_runtime_alone_shows_the_usual_run_view_of_its_run():
    from tests.test_app import wait_for_charts
    at = open_page("playground")
    at.selectbox(key="playground:knob:schedule").set_value("zb-h1")
    set_knobs(at, "playground", {"stages": 2, "microbatches": 3, "layers": 4, "hidden": 32, "microbatch_size": 4,
                                 "steps": 2, "model": "mlp"})
    at.radio(key=RADIO).set_value(1).run()  # torch's
    at.button(key="playground:main:start").click().run()
    specs = wait_for_charts(at, 2 * RUN_TIMEOUT)
    (_, status), = at.session_state["batch:playground:main"]["finished"]
    assert status.result.config.runtime == "torch"
    assert {y for t in specs[0]["data"] for y in t["y"]} == {"device 0", "device 1"}
    assert any(", on torch's runtime" in c.value for c in at.caption)  # the run's settings line says which
    assert wait_until_gone() == []
