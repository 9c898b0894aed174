"""The classroom pages, headless (AppTest): a finished run is kept with a link; My runs lists
this browser's runs, opens one or compares two; a link shows that run alone; the instructor
view needs the token; the wait estimate is the queue place times the recent median run."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pipelab.app.runner import runs
from pipelab.app.runner.storage import RunStore
from pipelab.app.runner.stored_run import new_run_id, run_context
from pipelab.app.screens import instructor
from pipelab.lessons import get_lesson
from pipelab.lessons import i18n as catalogs
from pipelab.lessons.i18n.run_label import RunLabel, stored_form
from tests.app_pages import switch
from tests.engine_runs import measured
from tests.test_app import MAIN, SMALL, open_page, set_knobs, wait_for_charts

TOKEN = "s3cret-for-the-class"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """Each test its own store: the app's store is one per server (st.cache_resource)."""
    monkeypatch.setenv("PIPELAB_DATA_DIR", str(tmp_path))
    runs.get_store.clear()
    yield tmp_path
    runs.get_store.clear()


@pytest.fixture(scope="module")
def two_results():
    return measured("1f1b", 2, 4), measured("gpipe", 2, 4)


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


@pytest.mark.slow
def test_a_finished_run_is_kept_with_its_link_and_listed_under_my_runs(data_dir):
    at = open_page("gpipe")
    set_knobs(at, "gpipe", {**SMALL, "microbatches": 3})
    at.button(key="gpipe:main:start").click().run()
    wait_for_charts(at)
    kept = [c for c in captions(at) if c.startswith("Kept on this server")]
    assert kept and "runs?run=" in kept[0], captions(at)
    run_id = kept[0].split("runs?run=")[1][:12]
    stored = RunStore(data_dir).get(run_id)
    assert (stored.lesson, stored.settings["schedule"], stored.settings["microbatches"]) == ("gpipe", "gpipe", 3)
    assert stored.context == run_context("run", run_id, 0, None), "kept for its verdict on a later page"

    switch(at, "page_scripts/my_runs.py").run()  # same session: same browser id
    assert not at.exception, at.exception
    listed = at.dataframe[0].value
    assert list(listed["run"]) == [run_id]
    at.multiselect(key="my-runs:chosen").select(run_id).run()
    assert not at.exception, at.exception
    assert any("Measured" in json.dumps(json.loads(c.proto.spec).get("layout", {})) for c in at.get("plotly_chart"))


@pytest.mark.slow
def test_my_runs_lists_only_this_browsers_runs_and_compares_two(data_dir, two_results):
    store = RunStore(data_dir)
    a = store.save(two_results[0], owner="someone-else", lesson="1f1b")
    b = store.save(two_results[1], owner="someone-else", lesson="gpipe")
    at = open_page("page_scripts/my_runs.py")
    assert not at.dataframe, "another browser's runs are not listed"
    for other in (a, f"http://host:8501/runs?run={b}"):  # an id or a whole link
        at.text_input(key="my-runs:other").input(other).run()
        at.multiselect(key="my-runs:chosen").select(other[-12:]).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value  # comparison_view's summary table
    assert sorted(table["schedule"]) == ["1f1b", "gpipe"]
    key = next(m.value for m in at.markdown if "F forward" in m.value)  # the colour key over the timelines
    assert "U optimizer" in key, "each chart draws the update after the flush: the key names it"


@pytest.mark.slow
def test_my_runs_links_every_run_and_an_opened_run_shows_its_share_link(data_dir, two_results, monkeypatch):
    monkeypatch.setattr("pipelab.app.browser.browser_id", lambda: "browser")
    store = RunStore(data_dir)
    ids = [store.save(result, owner="browser", lesson="1f1b", label=f"run {i}") for i, result in enumerate(two_results)]
    at = open_page("page_scripts/my_runs.py")
    listed = at.dataframe[0].value
    assert list(listed.columns)[:2] == ["label", "link"]
    assert sorted(listed["link"]) == sorted(f"runs?run={run_id}" for run_id in ids)
    assert "link" in at.dataframe[0].proto.columns  # drawn as links (st.column_config.LinkColumn)
    at.multiselect(key="my-runs:chosen").select(ids[0]).run()
    assert not at.exception, at.exception
    share = catalogs.text("en", "my_runs.share", link=f"[runs?run={ids[0]}](runs?run={ids[0]})")
    assert share in [m.value for m in at.markdown]
    # The link is the address that opens the run alone (shared_run).
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.run()
    switch(at, "page_scripts/my_runs.py")
    at.query_params["run"] = ids[0]
    at.run()
    assert "run 0" in at.subheader[0].value


@pytest.mark.parametrize("param, shown", [
    ("GOOD", "run"),
    ("AAAAAAAAAAAA", "no such run"),
    ("../../runs.db", "not valid"),
    ("x' OR '1'='1", "not valid"),
])
@pytest.mark.slow
def test_a_link_shows_that_run_alone_and_rejects_bad_ids(data_dir, two_results, param, shown):
    store = RunStore(data_dir)
    good = store.save(two_results[0], owner="author", lesson="1f1b", label="the linked run")
    store.save(two_results[1], owner="author", lesson="gpipe", label="another run")
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["run"] = good if param == "GOOD" else param
    at.run()
    switch(at, "page_scripts/my_runs.py")
    at.query_params["run"] = good if param == "GOOD" else param
    at.run()
    assert not at.exception, at.exception
    text = " ".join(s.value for s in [*at.subheader, *at.error, *at.warning])
    if shown == "run":
        assert "the linked run" in text and "another run" not in text
        assert not at.dataframe or "another run" not in str(at.dataframe[0].value)
    elif shown == "no such run":
        assert "No run AAAAAAAAAAAA" in text
    else:
        assert "not valid" in text and len(at.error) == 1


@pytest.mark.slow
def test_the_instructor_view_needs_the_token(data_dir, two_results, monkeypatch):
    store = RunStore(data_dir)
    store.save(two_results[0], owner="student-1", lesson="1f1b")
    store.save(two_results[1], owner="student-2", lesson="gpipe")
    page = "page_scripts/instructor.py"

    monkeypatch.delenv(instructor.TOKEN_ENV, raising=False)
    with pytest.raises(ValueError):  # not in the navigation
        open_page(page)
    at = AppTest.from_file(str(Path(MAIN).parent / page), default_timeout=60).run()  # nor shown if reached
    assert not at.dataframe and not at.text_input and "off" in at.info[0].value

    monkeypatch.setenv(instructor.TOKEN_ENV, TOKEN)
    at = open_page(page)
    assert not at.dataframe
    at.text_input(key="instructor:token").input("wrong").run()
    assert not at.dataframe and at.error[0].value == "Wrong token."
    at.text_input(key="instructor:token").input(TOKEN).run()
    assert not at.exception, at.exception
    assert sorted(at.dataframe[0].value["lesson"]) == ["1f1b", "gpipe"]
    at.selectbox(key="instructor:lesson").select("gpipe").run()
    assert list(at.dataframe[0].value["lesson"]) == ["gpipe"]


def stored_with_context(store: RunStore, result, owner: str = "author") -> str:
    """A gpipe run stored as the lesson page stores it: kind RUN, its batch, a prediction locked at its settings."""
    run_id = new_run_id()
    predicted = {"knobs": {"schedule": "gpipe", "stages": 2, "microbatches": 4}, "values": {"gpipe.bubble": 0.2}}
    store.save(result, owner=owner, lesson="gpipe", run_id=run_id, context=run_context("run", run_id, 0, predicted))
    return run_id


def verdict_parts(at: AppTest) -> tuple[list[str], list[str], list[str]]:
    """(the claim line, the verdict line, the report's prediction cells) of a page."""
    claim = [m.value for m in at.markdown if m.value.startswith("**Claim.**")]
    verdict = [b.value for b in [*at.success, *at.info, *at.warning] if b.value.startswith("**Verdict: ")]
    cells = [m.value for m in at.markdown if m.value == "**0.200**"]
    return claim, verdict, cells


@pytest.mark.slow
def test_a_shared_link_my_runs_and_the_instructor_show_the_claim_verdict_and_prediction(data_dir, two_results,
                                                                                      monkeypatch):
    store = RunStore(data_dir)
    run_id = stored_with_context(store, two_results[1])
    claim = catalogs.lesson_claim(get_lesson("gpipe"), "en")
    at = page_in("en", "page_scripts/my_runs.py", run=run_id)  # the shared link
    shown, verdict, predicted = verdict_parts(at)
    assert shown == [f"**Claim.** {claim}"] and len(verdict) == 1 and predicted == ["**0.200**"], (shown, verdict)
    assert any(s.value == "Your prediction against theory and the run" for s in at.subheader)

    monkeypatch.setenv(instructor.TOKEN_ENV, TOKEN)
    at = open_page("page_scripts/instructor.py")
    at.text_input(key="instructor:token").input(TOKEN).run()
    at.selectbox(key="instructor:open").select(run_id).run()
    assert not at.exception, at.exception
    assert verdict_parts(at)[1] == verdict and verdict_parts(at)[2] == ["**0.200**"]


@pytest.mark.parametrize("lang, note", [
    ("en", "This run is one of 2 that one click compared; the verdict below judges them together. The others: "
           "[this lesson (GPipe)](runs?run={first})."),
    ("zh", "这次运行是一次点击比较的 2 次运行之一；下面的结论把它们放在一起评判。"
           "其他几次：[本课（GPipe）](runs?run={first})。"),
])
@pytest.mark.slow
def test_a_linked_leg_of_a_comparison_says_its_verdict_judges_the_whole_comparison(data_dir, two_results, lang,
                                                                                   note):
    store = RunStore(data_dir)
    first, second = new_run_id(), new_run_id()
    store.save(two_results[1], owner="author", lesson="gpipe", run_id=first, label=stored_form(
        RunLabel.of("page.this_lesson", schedule="gpipe")), context=run_context("comparison", first, 0, None))
    store.save(two_results[1], owner="author", lesson="gpipe", run_id=second, label=stored_form(
        RunLabel.comparison("gpipe", 0)), context=run_context("comparison", first, 1, None))
    at = page_in(lang, "page_scripts/my_runs.py", run=second)
    assert note.format(first=first) in captions(at)
    # A run of its own has no such line.
    at = page_in(lang, "page_scripts/my_runs.py", run=stored_with_context(store, two_results[1]))
    assert not any(c.startswith(note[:10]) for c in captions(at))


@pytest.mark.slow
def test_a_run_stored_without_context_is_shown_without_a_verdict(data_dir, two_results):
    """Runs kept before runs kept their context (or an extra's runs): the run, no made-up verdict."""
    run_id = RunStore(data_dir).save(two_results[1], owner="author", lesson="gpipe")
    at = page_in("en", "page_scripts/my_runs.py", run=run_id)
    assert verdict_parts(at) == ([], [], [])
    assert at.get("plotly_chart")


@pytest.mark.parametrize("typed, token, ok", [
    (TOKEN, TOKEN, True),
    ("wrong", TOKEN, False),
    ("", TOKEN, False),
    (TOKEN[:-1], TOKEN, False),
    ("", None, False),
    ("anything", None, False),
])
def test_token_check(typed, token, ok):
    assert instructor.token_matches(typed, token) is ok


@pytest.mark.slow
def test_exports_carry_settings_and_headline_figures_without_browser_ids(tmp_path, two_results):
    store = RunStore(tmp_path)
    store.save(two_results[0], owner="student-browser-id", lesson="1f1b")
    listed = store.all_runs()
    exported = json.loads(instructor.to_json(listed))
    assert exported[0]["settings"]["schedule"] == "1f1b"
    assert exported[0]["headline"]["bubble (device)"] == round(two_results[0].metrics.device_bubble_fraction, 3)
    text = instructor.to_csv(listed)
    header = text.splitlines()[0].split(",")
    assert {"lesson", "setting stages", "bubble (device)", "time", "browser"} <= set(header)
    assert "student-browser-id" not in text + instructor.to_json(listed)


@pytest.mark.parametrize("recent, position, concurrent, expected", [
    ([], 3, 1, "queued: position 3"),
    ([4.0, 6.0, 100.0], 3, 1, "queued: position 3, about 18 s to start (3 x 6.0 s, the median of the latest runs)"),
    ([10.0], 4, 2, "queued: position 4, about 20 s to start (4 x 10.0 s, the median of the latest runs)"),
])
def test_the_wait_estimate_is_place_times_the_recent_median_run(monkeypatch, recent, position, concurrent, expected):
    window = runs._RecentRuns()
    for seconds in recent:
        window.add(seconds)
    monkeypatch.setattr(runs, "recent_runs", lambda: window)
    assert runs.wait_text(position, concurrent) == expected


def test_query_parameters_set_no_knob(data_dir):
    """Knobs come from the form only: a link cannot preset one, let alone past a limit."""
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.run()
    switch(at, "gpipe")
    preset = {"stages": "999", "microbatches": "100000", "hidden": "1000000", "gpipe:knob:stages": "999"}
    for name, value in preset.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    assert at.text_input(key="gpipe:knob:stages").value == str(get_lesson("gpipe").defaults.stages)
    assert int(at.text_input(key="gpipe:knob:hidden").value) <= 1024


def test_xsrf_protection_stays_on():
    import tomllib
    config = tomllib.loads((Path(MAIN).parent.parent / ".streamlit" / "config.toml").read_text())
    assert config["server"]["enableXsrfProtection"] is True


def page_in(lang: str, page: str, **params) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    switch(at, page)
    at.query_params["lang"] = lang
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def english_words(text: str) -> list[str]:
    """Runs of two English words in a row: a sentence left untranslated (ids, 'MiB', 'CSV'
    and the environment variable's name are single tokens)."""
    import re
    return re.findall(r"[A-Za-z]{2,} [A-Za-z]{2,}", text)


@pytest.mark.slow
def test_my_runs_and_the_instructor_view_speak_chinese(data_dir, two_results, monkeypatch):
    store = RunStore(data_dir)
    store.save(two_results[0], owner="student-1", lesson="1f1b")
    at = page_in("zh", "page_scripts/my_runs.py")
    assert at.title[0].value == "我的运行" and at.info[0].value.startswith("这个浏览器还没有运行")
    assert not english_words(" ".join([at.info[0].value, *(c.value for c in at.caption),
                                       at.text_input(key="my-runs:other").label]))
    at = page_in("zh", "page_scripts/my_runs.py", run="AAAAAAAAAAAA")
    assert at.warning[0].value.startswith("这台服务器上没有运行 AAAAAAAAAAAA")

    monkeypatch.setenv(instructor.TOKEN_ENV, TOKEN)
    at = page_in("zh", "page_scripts/instructor.py")
    at.text_input(key="instructor:token").input("wrong").run()
    assert at.title[0].value == "教师" and at.error[0].value == "口令错误。"
    at.text_input(key="instructor:token").input(TOKEN).run()
    columns = list(at.dataframe[0].value.columns)
    assert {"时间", "课程", "浏览器"} <= set(columns) and not any(english_words(c) for c in columns), columns
    assert not english_words(" ".join(c.value for c in at.caption))
    # Exports keep the English field names scripts read.
    assert instructor.to_csv(store.all_runs()).splitlines()[0].startswith("run,time,lesson,label")


def test_a_store_notice_is_shown_in_the_pages_language(data_dir):
    from pipelab.engine.errors import Message
    from pipelab.lessons.i18n import error_text
    notice = Message.of("stored_busy")  # as RunStore.notice holds it
    assert "locked" in notice  # the English line, as a str
    assert error_text("en", notice) == notice
    assert error_text("zh", notice).startswith("保存的运行正忙")


# ---- a stored run's label reads in its reader's language -------------------------------------

ZH_LABELS = {"本课（GPipe）", "使用重计算的 GPipe"}
EN_LABELS = {"this lesson (GPipe)", "GPipe with re-materialization"}


@pytest.mark.parametrize("made_in, on_the_page, viewed_in, listed", [
    ("zh", ZH_LABELS, "en", EN_LABELS),
    ("en", EN_LABELS, "zh", ZH_LABELS),
])
@pytest.mark.slow
def test_a_comparison_run_is_listed_in_the_language_of_whoever_reads_my_runs(data_dir, made_in, on_the_page,
                                                                             viewed_in, listed):
    at = page_in(made_in, "gpipe")
    set_knobs(at, "gpipe", {**SMALL, "microbatches": 3})
    at.button(key="gpipe:compare:start").click().run()
    wait_for_charts(at)
    first_columns = {cell for table in at.dataframe for cell in table.value.iloc[:, 0]}
    assert on_the_page <= first_columns, "the lesson page itself speaks its own language"

    switch(at, "page_scripts/my_runs.py")  # same session: same browser id
    at.query_params["lang"] = viewed_in
    at.run()
    assert not at.exception, at.exception
    assert set(at.dataframe[0].value[catalogs.text(viewed_in, "my_runs.col.label")]) == listed
    titles = at.multiselect(key="my-runs:chosen").options
    lesson = catalogs.lesson_title(get_lesson("gpipe"), viewed_in)
    assert {next(label for label in listed if title.startswith(label)) for title in titles} == listed, titles
    assert all(lesson in title for title in titles), titles


@pytest.mark.parametrize("lang, label, lesson, schedule, model, title", [
    ("en", "gpipe", "Playground", "GPipe", "mlp", "GPipe (Playground: "),
    ("zh", "gpipe", "实验场", "GPipe", "多层感知机模型（mlp）", "GPipe（实验场"),
    ("zh", "interleaved", "实验场", "交错式 1F1B", "多层感知机模型（mlp）", "交错式 1F1B（实验场"),
    ("zh", "custom", "实验场", "自定义调度", "多层感知机模型（mlp）", "自定义调度（实验场"),
])
def test_my_runs_names_the_lesson_schedule_and_model_in_the_page_s_language(monkeypatch, lang, label, lesson,
                                                                            schedule, model, title):
    """The walk (issue 47): the Chinese list read "playground", "gpipe", "mlp", and an opened
    run's title "gpipe (playground, p=4 m=8, ID)" in half-width brackets."""
    from pipelab.app.runner.stored_run import StoredRun
    from pipelab.app.screens import my_runs
    monkeypatch.setattr(my_runs, "current_lang", lambda: lang)
    monkeypatch.setattr(my_runs, "t", lambda key, **values: catalogs.text(lang, key, **values))
    run = StoredRun("QHviS5PIoWLh", 0.0, "me", "playground", label,
                    {"schedule": label, "stages": 4, "microbatches": 8, "model": "mlp"}, {})
    row = my_runs.list_row(run)
    assert my_runs.lesson_said("recap", lang) == catalogs.text(lang, "nav.recap")  # a page, not a lesson
    assert (row["label"], row["setting schedule"], row["setting model"]) == (schedule, schedule, model)
    assert row["lesson"].startswith(lesson)
    assert my_runs.title(run).startswith(title) and my_runs.title(run).endswith(
        ", p = 4, m = 8, QHviS5PIoWLh)" if lang == "en" else "，p = 4，m = 8，QHviS5PIoWLh）")


@pytest.mark.parametrize("stored, lang, shown", [
    (RunLabel.comparison("gpipe", 0), "en", "GPipe with re-materialization"),
    (RunLabel.comparison("gpipe", 0), "zh", "使用重计算的 GPipe"),
    (RunLabel.of("page.this_lesson", schedule="gpipe"), "en", "this lesson (GPipe)"),
    (RunLabel.of("page.this_lesson", schedule="gpipe"), "zh", "本课（GPipe）"),
    ("本课（gpipe）", "en", "本课（gpipe）"),  # stored before labels had keys: as stored
    ("GPipe with re-materialization", "zh", "GPipe with re-materialization"),
    ("gpipe", "zh", "GPipe"),  # a schedule's id (a playground run's label) as sentences name it
])
@pytest.mark.slow
def test_a_linked_run_shows_its_label_in_the_readers_language(data_dir, two_results, stored, lang, shown):
    run_id = RunStore(data_dir).save(two_results[1], owner="author", lesson="gpipe", label=stored_form(stored))
    at = page_in(lang, "page_scripts/my_runs.py", run=run_id)
    lesson = catalogs.lesson_title(get_lesson("gpipe"), lang)
    assert at.subheader[0].value == catalogs.text(lang, "my_runs.run_title", label=shown, lesson=lesson, p=2, m=4,
                                                  run_id=run_id)


@pytest.mark.slow
def test_exports_give_the_label_in_english_whoever_started_the_run(tmp_path, two_results):
    store = RunStore(tmp_path)
    store.save(two_results[1], owner="student-1", lesson="gpipe", label=stored_form(RunLabel.comparison("gpipe", 0)))
    store.save(two_results[1], owner="student-2", lesson="gpipe", label="本课（gpipe）")  # an old run's label
    listed = store.all_runs()
    expected = {"GPipe with re-materialization", "本课（gpipe）"}
    assert {run["label"] for run in json.loads(instructor.to_json(listed))} == expected
    assert {row["label"] for row in csv.DictReader(io.StringIO(instructor.to_csv(listed)))} == expected
