"""No dead ends and limits before work, driven headless with AppTest: results labelled with
their settings, chunks from the registry, one-line errors instead of silence, nothing
computed outside the server's limits."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest
from test_app import MAIN, SMALL, chart_specs, open_page, set_knobs, wait_for_charts

from pipelab.app.screens.playground import MAX_CUSTOM_CHARS
from pipelab.app.views.charts import MAX_BARS
from pipelab.engine.config import Limits
from pipelab.engine.schedules import REGISTRY
from pipelab.lessons.i18n import text
from tests.app_pages import switch

RUN_OFF = "Run is off until this is fixed: "
RUN_OFF_ANY = tuple(text(lang, "page.run_disabled", reason="") for lang in ("en", "zh"))


def errors(at) -> list[str]:
    """Every distinct error line on the page: error boxes, and the settings' red line under
    its field and beside each Run button (said once here)."""
    lines = [e.value for e in at.error]
    for m in at.markdown:
        if m.value.startswith(":red[") and m.value.endswith("]"):
            line = m.value[len(":red["):-1]
            line = next((line.removeprefix(p) for p in RUN_OFF_ANY if line.startswith(p)), line)
            if line not in lines:
                lines.append(line)
    return lines


def theory_charts(at) -> int:
    return sum(1 for c in at.get("plotly_chart") if "Theory" in c.proto.spec)


def reveal_theory(at, slug: str) -> None:
    """The theory preview stays folded until the student predicts (app/views/course.py): open it."""
    at.button(key=f"{slug}:theory:reveal").click().run()


def test_the_root_opens_the_course_overview_and_lesson_one_its_own_address():
    assert open_page(None).title[0].value == text("en", "overview.title")
    assert open_page("naive").title[0].value.startswith("1. ")


@pytest.mark.slow
def test_a_finished_run_opens_with_the_claim_and_its_verdict():
    at = open_page("1f1b")
    set_knobs(at, "1f1b", SMALL)
    at.button(key="1f1b:main:start").click().run()
    wait_for_charts(at)
    verdict = next(m.value for m in at.markdown if m.value.startswith("**Claim.**"))
    assert "1F1B has GPipe's bubble" in verdict
    boxes = [b.value for kind in ("success", "info", "warning") for b in getattr(at, kind)]
    assert any(b.startswith("**Verdict: ") for b in boxes)
    # A static table (no toolbar over the claim), its quantities as the rows' names.
    table = next(tb.value for tb in at.table if "measured (device clock)" in tb.value.columns)
    assert list(table.columns) == ["measured (device clock)", "formula", "theory at this run's costs (simulator)"]
    assert table.index[0] == "micro-batches alive at once, device 0"
    assert [e.label for e in at.expander][-1].startswith("Details")


@pytest.mark.slow
def test_results_stay_labelled_with_the_settings_they_ran_with():
    at = open_page("1f1b")
    set_knobs(at, "1f1b", SMALL)
    at.button(key="1f1b:main:start").click().run()
    wait_for_charts(at)
    assert not at.warning
    # Leave the lesson and come back: the form is back at the defaults (m = 8), the m = 2
    # run is still on screen, and it says which settings it ran with.
    switch(at, "naive").run()
    switch(at, "1f1b").run()
    assert at.text_input(key="1f1b:knob:microbatches").value == "8"
    assert chart_specs(at)
    (note,) = [w.value for w in at.warning]
    assert "earlier settings" in note and "m 2 → 8" in note


@pytest.mark.slow
def test_an_invalid_custom_schedule_clears_the_earlier_run():
    at = open_page("playground")
    set_knobs(at, "playground", {"stages": 2, "layers": 2, "hidden": 32, "microbatch_size": 4, "steps": 2})
    at.button(key="playground:custom:start").click().run()
    wait_for_charts(at)
    assert any("PASS" in s.value for s in at.success)
    at.text_area(key="playground:custom").set_value("rank 0: 0B0 0F0\n")
    at.button(key="playground:custom:start").click().run()
    assert any("before its forward" in e for e in errors(at))
    assert not any("PASS" in s.value for s in at.success)
    assert not chart_specs(at)


@pytest.mark.slow
def test_zb_v_on_the_zero_bubble_page_runs_its_two_chunks():
    at = open_page("zero-bubble")
    assert theory_charts(at) == 0  # folded until the student predicts or reveals it
    reveal_theory(at, "zero-bubble")
    set_knobs(at, "zero-bubble", SMALL)
    at.selectbox(key="zero-bubble:knob:schedule").set_value("zb-v").run()
    assert not errors(at)
    assert any("zb-v runs exactly v = 2 chunks per device" in c.value for c in at.caption)
    assert theory_charts(at) == 1
    at.button(key="zero-bubble:main:start").click().run()
    wait_for_charts(at)
    (_, status), = at.session_state["batch:zero-bubble:main"]["finished"]  # ZB-V beside the lesson's comparisons
    first = status.result.shown()[0]
    assert (first.schedule.name, first.schedule.num_ranks, first.schedule.chunks) == ("zb-v", 2, 2)


def test_the_playground_says_when_chunks_are_not_used():
    at = open_page("playground")
    at.text_input(key="playground:knob:chunks").set_value("3").run()
    assert any(c.value == "gpipe runs one chunk per device (v = 1); v = 3 is not used." for c in at.caption)
    at.selectbox(key="playground:knob:schedule").set_value("interleaved").run()
    assert not any("is not used" in c.value for c in at.caption)  # interleaved takes any v


@pytest.mark.parametrize("knob, value, message", [
    ("microbatches", -3, "micro-batches m must be a whole number ≥ 1, got -3"),
    ("microbatches", Limits().max_microbatches + 1, f"micro-batches m is at most {Limits().max_microbatches} on "
                                                    f"this server, got {Limits().max_microbatches + 1}"),
    ("stages", 0, "stages p (devices) must be a whole number ≥ 1, got 0"),
    ("hidden", 10**9, f"hidden width is at most {Limits().max_hidden} on this server, got 1000000000"),
])
def test_a_bad_number_is_one_line_beside_its_field_and_run_starts_nothing(knob, value, message):
    at = open_page("gpipe")
    at.text_input(key=f"gpipe:knob:{knob}").set_value(str(value)).run()
    assert errors(at) == [message]
    assert theory_charts(at) == 0
    # Every button that would run these settings is disabled, the reason beside it.
    for name in ("main", "compare", "sweep"):
        assert at.button(key=f"gpipe:{name}:start").disabled
    assert [m.value for m in at.markdown].count(f":red[{RUN_OFF}{message}]") == 3
    assert errors(at) == [message]  # said once, and no batch started
    assert not at.main.get("progress") and not chart_specs(at)  # the sidebar keeps the course progress


def test_the_inputs_name_the_server_caps(monkeypatch):
    monkeypatch.setenv("PIPELAB_MAX_MICROBATCHES", "12")
    at = open_page("gpipe")
    assert at.text_input(key="gpipe:knob:microbatches").label == "micro-batches m (1–12)"
    at.text_input(key="gpipe:knob:microbatches").set_value("13").run()
    assert errors(at) == ["micro-batches m is at most 12 on this server, got 13"]


def test_settings_at_the_caps_take_bounded_work_and_above_them_nothing(monkeypatch):
    # Work counted, not timed: no clock in the fast tier, where a busy host stretches any time.
    limits = Limits()
    at = open_page("interleaved")
    reveal_theory(at, "interleaved")
    for knob, value in (("stages", limits.max_stages), ("microbatches", limits.max_microbatches),
                        ("layers", limits.max_layers), ("chunks", limits.max_layers // limits.max_stages)):
        at.text_input(key=f"interleaved:knob:{knob}").set_value(str(value))
    at.run()
    assert not errors(at) and theory_charts(at) == 1
    # The preview at the caps, 32 stages x 64 micro-batches, is built and drawn capped: at most
    # charts.MAX_BARS bars, in time slices, so a few seconds on a busy 2-core host, not minutes.
    spec = next(c.proto.spec for c in at.get("plotly_chart") if "Theory" in c.proto.spec)
    assert "time slices" in spec
    assert sum(len(trace["x"]) for trace in json.loads(spec)["data"] if trace["type"] == "bar") <= MAX_BARS
    # So many chunks that p x v stages could never fit the layer cap: refused before any build.
    built = []  # every build of interleaved, whoever asks for it, lands here
    recording = replace(REGISTRY["interleaved"], build=lambda *args: built.append(args))
    monkeypatch.setitem(REGISTRY, "interleaved", recording)
    at.text_input(key="interleaved:knob:chunks").set_value(str(10**6))
    at.run()
    assert len(errors(at)) == 1 and "need at least as many layers" in errors(at)[0]
    assert theory_charts(at) == 0 and built == []


@pytest.mark.parametrize("text, message", [
    ("rank 0: " + "0F0 " * (MAX_CUSTOM_CHARS // 4), f"custom schedule is at most {MAX_CUSTOM_CHARS} characters"),
    ("".join(f"rank {r}: {r}F0\n" for r in range(Limits().max_stages + 1)),
     "lines (one per device); stages is at most"),
    ("rank 0: " + " ".join(f"0F{j}" for j in range(70)) + "\n", "micro-batches is at most"),
])
def test_a_custom_schedule_over_the_limits_is_one_line(text, message):
    at = open_page("playground")
    at.text_area(key="playground:custom").set_value(text)
    for button in ("playground:validate", "playground:custom:start"):
        at.button(key=button).click().run()
        assert len(errors(at)) == 1 and message in errors(at)[0], errors(at)
        assert not chart_specs(at)


def test_the_playground_unit_cost_chart_counts_forwards_not_milliseconds():
    at = open_page("playground")
    at.button(key="playground:validate").click().run()
    spec = next(s for s in chart_specs(at) if s["layout"]["title"]["text"].startswith("Simulated, unit costs"))
    assert spec["layout"]["xaxis"]["title"]["text"] == "time (units of T_F = one forward, simulated)"
    assert spec["layout"]["xaxis"]["range"][1] < 10  # 2 micro-batches of 1 + 2 units, not 9000


# ---- errors on a Chinese page: the whole reason in Chinese, no English sentence ---------------

def english_sentences(text: str) -> list[str]:
    """Two English words in a row: a sentence the page left in English (schedule names,
    actions such as 0B0 and formulas such as m % p are single tokens)."""
    return re.findall(r"[A-Za-z]{3,}[ ,;:]+[A-Za-z]{3,}", text)


def chinese_page(slug: str) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["lang"] = "zh"
    at.run()
    switch(at, slug)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("slug, knobs, chinese", [
    ("gpipe", {"microbatches": -3}, "微批次数 m 必须是 ≥ 1 的整数"),                                    # a bad knob
    ("gpipe", {"stages": Limits().max_stages + 1}, "本服务器上阶段数 p（设备）最多为"),                  # over a cap
    ("interleaved", {"stages": 4, "microbatches": 6}, "要求微批次数 m 是阶段数 p 的倍数"),             # m % p
    ("interleaved", {"chunks": 10**6}, "至少需要同样多的层"),                                          # chunks x layers
    ("playground", {"schedule": "pipedream-2bw", "stages": 4, "microbatches": 6}, "每 p 个微批次更新一次"),
    ("playground", {"schedule": "dualpipev", "stages": 4, "microbatches": 4}, "不少于阶段数的两倍"),      # m >= 2p
    ("playground", {"schedule": "interleaved", "chunks": 0}, "每个设备的模型块数 v 必须是 ≥ 1 的整数"),  # chunks
    ("playground", {"stages": 3, "replicas": "2,1"}, "给了 2 个数，但流水线有 3 个阶段"),              # replicas
    ("playground", {"stages": 3, "replicas": "2,x,1"}, "必须是每个阶段一个整数"),
    ("playground", {"stages": 3, "replicas": "0,1,1"}, "每个阶段至少要有 1 个工作进程"),
    ("playground", {"stages": 3, "replicas": "6,2,1"}, "本服务器最多"),
    ("playground", {"schedule": "zb-v", "stages": 3, "microbatches": 9, "layers": 16, "replicas": "2,1,1"},
     "复制阶段只能用每个设备一个阶段的调度"),
])
def test_a_bad_setting_on_a_chinese_page_is_said_in_chinese(slug, knobs, chinese):
    at = chinese_page(slug)
    for name, value in knobs.items():
        widget = at.selectbox(key=f"{slug}:knob:{name}:zh") if name == "schedule" else \
            at.text_input(key=f"{slug}:knob:{name}")
        widget.set_value(value if name == "schedule" else str(value))
    at.run()
    (error,) = errors(at)
    assert chinese in error and not english_sentences(error), error
    assert at.button(key=f"{slug}:main:start").disabled
    assert errors(at) == [error] and not at.main.get("progress")


@pytest.mark.parametrize("text, chinese", [
    ("rank 0: 0B0 0F0\n", "设备 0 第 0 个动作：0B0 排在它的前向 0F0 之前"),
    ("rank 0: 0F0 0X0\n", "第 1 行：无法读出动作 '0X0'"),
    ("rank 0: 0F0 0B0 0F1 0B1\nrank 1: 1F0 1F1 1B0 1B1\n", "死锁：剩下的每个设备都在等另一个设备"),
    ("rank 0: 0F0 1F0\nrank 1: 1B0\n", "阶段 1 同时出现在设备 0 和 1 上"),
    ("\n", "调度是空的"),
])
def test_a_bad_custom_schedule_on_a_chinese_page_is_said_in_chinese(text, chinese):
    at = chinese_page("playground")
    assert at.text_area(key="playground:custom").value.startswith("# 2 个设备，2 个微批次")
    at.text_area(key="playground:custom").set_value(text)
    for button in ("playground:validate", "playground:custom:start"):
        at.button(key=button).click().run()
        (error,) = errors(at)
        assert chinese in error and not english_sentences(error), error
        tables = [c.value for c in at.code]
        assert all("设备 0" in table and "rank" not in table for table in tables), tables
