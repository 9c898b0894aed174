"""app/views/said_select.py: a picker of ids shown in the page's words (issue 47: a Chinese
page showed "interleaved" and "mlp"), whose choice survives a switch of language."""

from __future__ import annotations

import pytest
from test_course_pages import open_page

from pipelab.lessons import i18n

ZH = "zh"


@pytest.mark.parametrize("lang, schedule, shown", [
    ("en", "interleaved", "interleaved"),
    ("zh", "interleaved", "交错式 1F1B（interleaved）"),
    ("zh", "naive", "朴素方式（naive）"),
    ("zh", "1f1b", "1F1B"),  # the page's name is the id's but for case: said once, as sentences say it
    ("zh", "gpipe", "GPipe"),
    ("zh", "custom", "自定义调度（custom）"),
    ("en", "naive", "naive"),
])
def test_a_schedule_is_shown_in_the_pages_words_with_its_id(lang, schedule, shown):
    assert i18n.schedule_option(lang, schedule) == shown


def test_the_chinese_pickers_show_chinese_words_and_run_the_ids():
    at = open_page("playground", ZH)
    schedule, model = at.selectbox(key="playground:knob:schedule:zh"), at.selectbox(key="playground:knob:model:zh")
    assert "交错式 1F1B（interleaved）" in schedule.options and "interleaved" not in schedule.options
    assert model.options[:2] == ["多层感知机模型（mlp）", "小型 GPT 模型（gpt）"]
    schedule.set_value("interleaved").run()
    assert at.selectbox(key="playground:knob:schedule:zh").value == "interleaved"


def test_a_choice_survives_a_switch_of_language_and_back():
    at = open_page("playground", "en")
    at.selectbox(key="playground:knob:schedule").set_value("zb-h1").run()
    at.selectbox(key="playground:knob:model").set_value("gpt").run()
    at.query_params["lang"] = ZH
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="playground:knob:schedule:zh").value == "zb-h1"
    assert at.selectbox(key="playground:knob:model:zh").value == "gpt"
    at.selectbox(key="playground:knob:schedule:zh").set_value("interleaved").run()
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="playground:knob:schedule").value == "interleaved"
    assert at.selectbox(key="playground:knob:model").value == "gpt"


@pytest.mark.parametrize("lang, label, shown", [
    ("zh", "pipedream", "PipeDream"),               # the walk read "稳态下 pipedream" on lesson 3's Run
    ("zh", "interleaved", "交错式 1F1B（interleaved）"),
    ("en", "pipedream", "pipedream"),               # English pages keep the id, as their pickers do
    ("zh", "my label", "my label"),                 # not a schedule: as it is
    ("zh", 8, 8),                                   # a sweep value stays a number
])
def test_a_run_labelled_by_its_schedule_reads_as_the_pickers_name_it(monkeypatch, lang, label, shown):
    from pipelab.app import i18n as page_i18n
    monkeypatch.setattr(page_i18n, "current_lang", lambda: lang)
    assert page_i18n.run_label(label) == shown
