"""No dead ends and limits before work, driven headless with AppTest: results labelled with
their settings, chunks from the registry, one-line errors instead of silence, nothing
computed outside the server's limits."""

from __future__ import annotations

import time

import pytest
from test_app import SMALL, chart_specs, open_page, set_knobs, wait_for_charts

from app.playground import MAX_CUSTOM_CHARS
from engine.config import Limits


def errors(at) -> list[str]:
    return [e.value for e in at.error]


def theory_charts(at) -> int:
    return sum(1 for c in at.get("plotly_chart") if "Theory" in c.proto.spec)


def reveal_theory(at, slug: str) -> None:
    """The theory preview stays folded until the student predicts (app/course.py): open it."""
    at.button(key=f"{slug}:theory:reveal").click().run()


def test_the_root_opens_lesson_one():
    at = open_page(None)
    assert at.title[0].value.startswith("1. ")


def test_a_finished_run_opens_with_the_claim_and_its_verdict():
    at = open_page("1f1b")
    set_knobs(at, "1f1b", SMALL)
    at.button(key="1f1b:main:start").click().run()
    wait_for_charts(at)
    verdict = next(m.value for m in at.markdown if m.value.startswith("**Claim.**"))
    assert "1F1B has GPipe's bubble" in verdict
    boxes = [b.value for kind in ("success", "info", "warning") for b in getattr(at, kind)]
    assert any(b.startswith("**Verdict: ") for b in boxes)
    table = next(df.value for df in at.dataframe if "measured (device clock)" in df.value.columns)
    assert list(table.columns) == ["", "measured (device clock)", "formula", "simulated"]
    assert table.iloc[0, 0] == "micro-batches alive at once, device 0"
    assert [e.label for e in at.expander][-1].startswith("Details")


def test_results_stay_labelled_with_the_settings_they_ran_with():
    at = open_page("1f1b")
    set_knobs(at, "1f1b", SMALL)
    at.button(key="1f1b:main:start").click().run()
    wait_for_charts(at)
    assert not at.warning
    # Leave the lesson and come back: the form is back at the defaults (m = 8), the m = 2
    # run is still on screen, and it says which settings it ran with.
    at.switch_page("lesson_pages/1_naive.py").run()
    at.switch_page("lesson_pages/4_1f1b.py").run()
    assert at.number_input(key="1f1b:knob:microbatches").value == 8
    assert chart_specs(at)
    (note,) = [w.value for w in at.warning]
    assert "earlier settings" in note and "m 2 → 8" in note


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


def test_zb_v_on_the_zero_bubble_page_runs_its_two_chunks():
    at = open_page("zero-bubble")
    assert theory_charts(at) == 0  # folded until the student predicts or reveals it
    reveal_theory(at, "zero-bubble")
    set_knobs(at, "zero-bubble", SMALL)
    at.selectbox(key="zero-bubble:knob:schedule").set_value("zb-v").run()
    assert not errors(at)
    assert any("zb-v runs exactly 2 chunk(s) per device" in c.value for c in at.caption)
    assert theory_charts(at) == 1
    at.button(key="zero-bubble:main:start").click().run()
    wait_for_charts(at)
    assert any("zb-v, p=2 devices" in c.value and "v=2 chunk(s)" in c.value for c in at.caption)


def test_the_playground_says_when_chunks_are_not_used():
    at = open_page("playground")
    at.number_input(key="playground:knob:chunks").set_value(3).run()
    assert any(c.value == "gpipe runs exactly 1 chunk(s) per device; chunks = 3 is not used." for c in at.caption)
    at.selectbox(key="playground:knob:schedule").set_value("interleaved").run()
    assert not any("is not used" in c.value for c in at.caption)  # interleaved takes any v


@pytest.mark.parametrize("knob, value, message", [
    ("microbatches", -3, "microbatches must be a whole number >= 1, got -3"),
    ("microbatches", Limits().max_microbatches + 1, f"microbatches is at most {Limits().max_microbatches} on "
                                                    f"this server, got {Limits().max_microbatches + 1}"),
    ("stages", 0, "stages must be a whole number >= 1, got 0"),
    ("hidden", 10**9, f"hidden is at most {Limits().max_hidden} on this server, got 1000000000"),
])
def test_a_bad_number_is_one_line_in_place_of_the_preview_and_run_starts_nothing(knob, value, message):
    at = open_page("gpipe")
    at.number_input(key=f"gpipe:knob:{knob}").set_value(value).run()
    assert errors(at) == [message]
    assert theory_charts(at) == 0
    at.button(key="gpipe:main:start").click().run()
    at.button(key="gpipe:sweep:start").click().run()
    assert errors(at) == [message]  # said once, and no batch started
    assert not at.main.get("progress") and not chart_specs(at)  # the sidebar keeps the course progress


def test_the_inputs_name_the_server_caps(monkeypatch):
    monkeypatch.setenv("PIPELAB_MAX_MICROBATCHES", "12")
    at = open_page("gpipe")
    assert at.number_input(key="gpipe:knob:microbatches").label == "micro-batches m (1–12)"
    at.number_input(key="gpipe:knob:microbatches").set_value(13).run()
    assert errors(at) == ["microbatches is at most 12 on this server, got 13"]


def test_settings_at_the_caps_take_bounded_time_and_above_them_nothing():
    limits = Limits()
    at = open_page("interleaved")
    reveal_theory(at, "interleaved")
    for knob, value in (("stages", limits.max_stages), ("microbatches", limits.max_microbatches),
                        ("layers", limits.max_layers), ("chunks", limits.max_layers // limits.max_stages)):
        at.number_input(key=f"interleaved:knob:{knob}").set_value(value)
    started = time.monotonic()
    at.run()
    took = time.monotonic() - started
    assert not errors(at) and theory_charts(at) == 1
    # The preview at the caps, 32 stages x 64 micro-batches, is built and drawn capped
    # (charts.MAX_BARS): a few seconds on a busy 2-core host, not minutes.
    assert took < 20, took
    spec = next(c.proto.spec for c in at.get("plotly_chart") if "Theory" in c.proto.spec)
    assert "time slices" in spec
    # So many chunks that p x v stages could never fit the layer cap: refused before any build.
    at.number_input(key="interleaved:knob:chunks").set_value(10**6)
    started = time.monotonic()
    at.run()
    assert time.monotonic() - started < 5
    assert len(errors(at)) == 1 and "need at least as many layers" in errors(at)[0]
    assert theory_charts(at) == 0


@pytest.mark.parametrize("text, message", [
    ("rank 0: " + "0F0 " * (MAX_CUSTOM_CHARS // 4), f"custom schedule is at most {MAX_CUSTOM_CHARS} characters"),
    ("".join(f"rank {r}: {r}F0\n" for r in range(Limits().max_stages + 1)), "rank lines; stages is at most"),
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
    assert spec["layout"]["xaxis"]["title"]["text"] == "time (units of T_F, simulated)"
    assert spec["layout"]["xaxis"]["range"][1] < 10  # 2 micro-batches of 1 + 2 units, not 9000
