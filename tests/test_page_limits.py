"""Inputs that cannot be impossible (issue 47, item 14): the playground refuses before Run a run
that cannot finish within the server's time limit, its chunks knob names the most the other
fields allow, and the recap says in a visible line why a number is out of range, with no table
for settings its boxes no longer hold."""

from __future__ import annotations

import pytest

from pipelab.app.runner import time_estimate
from pipelab.app.runner.runs import knobs_to_config
from pipelab.engine.config import Limits
from pipelab.lessons import Knobs, i18n
from tests.test_app import open_page, set_knobs

MAXIMUM = {"stages": 8, "microbatches": 64, "layers": 32, "hidden": 1024, "microbatch_size": 128, "steps": 20}
"""The playground's maximum settings, which ran into the 120 s limit on a 2-core host."""

HOST_RATE = 50e9
"""Multiply-adds per second of one core: a little above what profiled_macs_per_second measured
on the 2-core development host (about 45e9), so the estimates below are, if anything, short."""


@pytest.fixture
def host(monkeypatch):
    """The server's profiled rate and cores, fixed: the page's estimate does not depend on the
    machine the tests run on."""
    monkeypatch.setattr(time_estimate, "profiled_macs_per_second", lambda: HOST_RATE)
    monkeypatch.setattr(time_estimate, "usable_cores", lambda: 2)
    time_estimate.least_seconds.cache_clear()
    yield
    time_estimate.least_seconds.cache_clear()


def estimate(knobs: Knobs, rate: float = HOST_RATE, cores: int = 2) -> time_estimate.Estimate:
    config = knobs_to_config(knobs)
    return time_estimate.estimate(config, config.build_schedule(), rate, cores)


def test_the_maximum_settings_cannot_finish_within_the_limit():
    limit = Limits().max_seconds
    assert estimate(Knobs(**MAXIMUM)).seconds > 2 * limit
    assert estimate(Knobs()).seconds < limit / 20  # the lessons' own size, far inside it


def test_the_estimate_counts_the_pipeline_its_check_and_its_cores():
    one_core, two = estimate(Knobs(**MAXIMUM), cores=1), estimate(Knobs(**MAXIMUM), cores=2)
    assert two.check_s == pytest.approx(one_core.check_s / 2)
    assert two.seconds == pytest.approx(two.pipeline_s + two.check_s)
    # With a core per rank the pipeline's span rules: at least the bubble-free share of one rank.
    many = estimate(Knobs(**MAXIMUM), cores=64)
    assert many.pipeline_s > one_core.pipeline_s / 8
    # Twice the steps, about twice the time; an asynchronous schedule runs no check.
    assert estimate(Knobs(**{**MAXIMUM, "steps": 10})).seconds == pytest.approx(two.seconds / 2, rel=0.02)
    assert estimate(Knobs(**{**MAXIMUM, "schedule": "pipedream"})).check_s == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_playground_refuses_a_run_that_cannot_finish_before_run(host, lang):
    at = open_page("playground")
    if lang != "en":
        at.query_params["lang"] = lang
        at.run()
    run = at.button(key="playground:main:start")
    assert not run.disabled
    set_knobs(at, "playground", MAXIMUM)
    at.run()
    assert not at.exception, at.exception
    assert at.button(key="playground:main:start").disabled
    seconds = f"{time_estimate.least_seconds(knobs_to_config(Knobs(**MAXIMUM))):.0f}"
    reason = i18n.text(lang, "playground.too_slow", seconds=seconds, cap=f"{Limits.from_env().max_seconds:g}")
    line = f":red[{i18n.text(lang, 'page.run_disabled', reason=reason)}]"
    assert [m.value for m in at.markdown].count(line) == 1, [m.value for m in at.markdown]
    # Back to a size that fits: Run is on again.
    set_knobs(at, "playground", {"steps": 3, "microbatches": 8})
    at.run()
    assert not at.button(key="playground:main:start").disabled


def chunks_label(at) -> str:
    return at.text_input(key="playground:knob:chunks").label


def test_the_chunks_range_follows_p_and_the_layers(host):
    at = open_page("playground")
    at.selectbox(key="playground:knob:schedule").set_value("interleaved").run()
    set_knobs(at, "playground", {"stages": 4, "layers": 32})
    at.run()
    at.run()  # the label reads the fields drawn after it (layers) as the student left them
    assert chunks_label(at).endswith("(1–8)")
    set_knobs(at, "playground", {"stages": 8, "layers": 16})
    at.run()
    at.run()
    assert chunks_label(at).endswith("(1–2)")
    set_knobs(at, "playground", {"stages": "x"})  # not a number yet: its default p counts
    at.run()
    assert chunks_label(at).endswith(f"(1–{16 // Knobs().stages})")


def test_the_recap_says_why_a_number_is_out_of_range_and_hides_its_tables():
    at = open_page("page_scripts/recap.py")
    tables = len(at.dataframe)
    at.text_input(key="recap:p").set_value("20").run()
    assert not at.exception, at.exception
    why = i18n.text("en", "recap.whole_out_of_range", label=i18n.text("en", "knob.stages"), low="1",
                    high=str(Limits.from_env().max_stages), got="20")
    assert any(why in m.value for m in at.markdown)
    assert any(w.value == i18n.text("en", "recap.fix_settings") for w in at.warning)
    assert len(at.dataframe) == tables - 2  # the schedules' table and the chooser's wait; the split's stays
    assert not at.table  # nor the schedules' words
    at.text_input(key="recap:p").set_value("4").run()
    assert len(at.dataframe) == tables


@pytest.mark.parametrize("typed", ["2.5", "-3", "two", ""])
def test_the_recap_refuses_a_count_that_is_no_whole_number_in_words(typed):
    """The walk typed p = 2.5 in the recap and the box rounded it to 2 without a word."""
    at = open_page("page_scripts/recap.py")
    at.text_input(key="recap:p").set_value(typed).run()
    assert not at.exception, at.exception
    why = i18n.text("en", "recap.whole_out_of_range", label=i18n.text("en", "knob.stages"), low="1",
                    high=str(Limits.from_env().max_stages), got=typed)
    assert any(why in m.value for m in at.markdown), [m.value for m in at.markdown]
    assert any(w.value == i18n.text("en", "recap.fix_settings") for w in at.warning)
