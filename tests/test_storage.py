"""Stored runs (app/runner/storage.py): kept across restarts, read back whole, bounded, and never
lost or crashing on a missing, corrupt or locked database."""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib

import pytest

from pipelab.app.runner.storage import DB_NAME, RunStore
from pipelab.app.runner.stored_run import new_run_id, run_context, valid_run_id
from pipelab.engine.results.result import RunResult
from pipelab.engine.results.schema import SCHEMA_VERSION, ResultSchemaError
from pipelab.lessons.i18n.run_label import RunLabel, stored_form
from tests.engine_runs import measured


@pytest.fixture(scope="module")
def result():
    return measured("1f1b", 2, 4, check=True)


def normalized(data: dict) -> dict:
    """What JSON keeps of a dict (tuples become lists, int keys strings)."""
    return json.loads(json.dumps(data))


@pytest.mark.slow
def test_result_reads_back_whole(result):
    again = RunResult.from_dict(normalized(result.to_dict()))
    assert normalized(again.to_dict()) == normalized(result.to_dict())
    assert again.schedule.actions == result.schedule.actions
    assert again.schedule.stage_to_rank == result.schedule.stage_to_rank
    assert again.timeline.bubble_fraction() == pytest.approx(result.timeline.bubble_fraction())
    assert again.memory[0].activation_timeline == result.memory[0].activation_timeline


@pytest.mark.slow
def test_a_run_survives_a_restart_and_lists_under_its_browser_only(tmp_path, result):
    store = RunStore(tmp_path)
    mine = store.save(result, owner="browser-a", lesson="1f1b", label="my run")
    store.save(result, owner="browser-b", lesson="gpipe")
    restarted = RunStore(tmp_path)
    assert [r.id for r in restarted.runs_of("browser-a")] == [mine]
    loaded = restarted.load(mine)
    assert normalized(loaded.to_dict()) == normalized(result.to_dict())
    listed = restarted.get(mine)
    assert (listed.lesson, listed.label, listed.settings["schedule"], listed.settings["stages"]) == \
        ("1f1b", "my run", "1f1b", 2)
    assert listed.headline["bubble (device)"] == round(result.metrics.device_bubble_fraction, 3)
    assert {r.lesson for r in restarted.all_runs()} == {"1f1b", "gpipe"}
    assert [r.lesson for r in restarted.all_runs(lesson="gpipe")] == ["gpipe"]


THIS_LESSON = RunLabel.of("page.this_lesson", schedule="gpipe")
COMPARISON = RunLabel.comparison("pipedream", 1)


@pytest.mark.parametrize("label, lang, shown", [
    (stored_form(THIS_LESSON), "en", "this lesson (GPipe)"),
    (stored_form(THIS_LESSON), "zh", "本课（GPipe）"),
    (stored_form(COMPARISON), "en", "1F1B with a flush (synchronous)"),
    (stored_form(COMPARISON), "zh", "带流水线刷新的 1F1B（同步）"),
    # Stored before labels had keys, or the same in every language: as stored.
    ("本课（gpipe）", "en", "本课（gpipe）"),
    ("this lesson (gpipe)", "zh", "this lesson (gpipe)"),
    ("16", "zh", "16"),
    # Looks like a stored label but names no text (a comparison since removed): as stored.
    ('{"key": "lesson.gpipe.comparison.7", "values": {}}', "en", '{"key": "lesson.gpipe.comparison.7", "values": {}}'),
    ('{"key": "page.this_lesson"', "zh", '{"key": "page.this_lesson"'),
])
@pytest.mark.slow
def test_a_label_reads_back_in_the_readers_language_a_plain_one_as_stored(tmp_path, result, label, lang, shown):
    run_id = RunStore(tmp_path).save(result, owner="browser-a", lesson="gpipe", label=label)
    listed = RunStore(tmp_path).get(run_id)
    assert listed.label == label
    assert (listed.label_in(lang), listed.row(lang)["label"]) == (shown, shown)
    assert listed.row()["label"] == listed.label_in("en"), "rows are English unless asked"


@pytest.mark.slow
def test_a_run_stored_by_a_newer_pipelab_is_refused_in_one_line(tmp_path, result):
    store = RunStore(tmp_path)
    run_id = store.save(result, owner="browser-a", lesson="1f1b")
    assert store.flush()
    newer = {**normalized(result.to_dict()), "schema_version": SCHEMA_VERSION + 1}
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("UPDATE runs SET result = ? WHERE id = ?", (zlib.compress(json.dumps(newer).encode()), run_id))
    with pytest.raises(ResultSchemaError, match=f"^result schema_version {SCHEMA_VERSION + 1} is newer"):
        RunStore(tmp_path).load(run_id)


@pytest.mark.slow
def test_oldest_runs_are_pruned_past_the_budget(tmp_path, result):
    store = RunStore(tmp_path)
    one = store.save(result, "a", "x")
    size = store.stored_bytes()
    budget_mb = 3.5 * size / 2**20  # room for three runs
    store = RunStore(tmp_path, max_mb=budget_mb)
    ids = [one] + [store.save(result, "a", "x") for _ in range(5)]
    kept = [r.id for r in store.runs_of("a")]
    assert kept == ids[::-1][:3]
    assert store.stored_bytes() <= budget_mb * 2**20
    assert store.load(ids[0]) is None and store.load(ids[-1]) is not None


@pytest.mark.slow
def test_a_missing_database_or_folder_is_made_anew(tmp_path, result):
    store = RunStore(tmp_path / "data")
    store.save(result, "a", "x")
    (tmp_path / "data" / DB_NAME).unlink()
    assert store.runs_of("a") == []  # reads as empty, no error
    again = store.save(result, "a", "x")
    assert [r.id for r in store.runs_of("a")] == [again]


@pytest.mark.slow
@pytest.mark.parametrize("garbage", [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_corrupt_database_is_moved_aside_for_a_fresh_one(tmp_path, result, garbage):
    (tmp_path / DB_NAME).write_bytes(garbage)
    store = RunStore(tmp_path)
    assert store.notice and "fresh store" in store.notice and "\n" not in store.notice
    assert [p.name for p in tmp_path.glob(f"{DB_NAME}.corrupt-*")]
    run_id = store.save(result, "a", "x")
    assert store.load(run_id) is not None


@pytest.mark.slow
def test_a_database_that_goes_bad_under_a_running_server_is_replaced(tmp_path, result):
    store = RunStore(tmp_path)
    store.save(result, "a", "x")
    for leftover in tmp_path.glob(f"{DB_NAME}-*"):  # as a bad restore from a backup would leave it
        leftover.unlink()
    (tmp_path / DB_NAME).write_bytes(b"garbage" * 1000)
    run_id = store.save(result, "a", "x")  # no exception: moved aside, written to a fresh file
    assert [r.id for r in RunStore(tmp_path).runs_of("a")] == [run_id]
    assert store.notice


@pytest.mark.slow
def test_a_run_finished_while_the_database_is_locked_is_written_later(tmp_path, result):
    store = RunStore(tmp_path)
    blocker = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        run_id = store.save(result, "a", "x")  # returns after SQLite's busy timeout, does not raise
        assert store.waiting() == 1
        assert [r.id for r in store.runs_of("a")] == [run_id]  # listed and readable meanwhile
        assert store.load(run_id) is not None
    finally:
        threading.Timer(0.5, blocker.rollback).start()
    assert store.flush(timeout=20)
    blocker.close()
    assert [r.id for r in RunStore(tmp_path).runs_of("a")] == [run_id]


@pytest.mark.parametrize("text, ok", [
    pytest.param(new_run_id(), True, id="a fresh id"),  # named: a random value would name the test anew each run
    ("abcDEF012_-x", True),
    ("../../etc/pw", False),
    ("abc/def/ghij", False),
    ("' OR 1=1 --x", False),
    ("short", False),
    ("abcDEF012_-xy", False),
    ("", False),
    (None, False),
])
def test_run_ids_are_checked_before_any_lookup(tmp_path, text, ok):
    assert valid_run_id(text) is ok
    if not ok:
        store = RunStore(tmp_path)
        assert store.load(text) is None and store.get(text) is None


def test_the_data_folder_and_budget_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_DATA_DIR", str(tmp_path / "class"))
    monkeypatch.setenv("PIPELAB_MAX_STORED_MB", "2")
    store = RunStore.from_env()
    assert store.path == tmp_path / "class" / DB_NAME and store.path.exists()
    assert store.max_bytes == 2 * 2**20


@pytest.mark.slow
def test_a_headline_key_older_servers_stored_is_not_listed(tmp_path, result):
    store = RunStore(tmp_path)
    run_id = store.save(result, owner="browser", lesson="1f1b")
    assert store.flush()
    with sqlite3.connect(store.path) as db:  # as a server that still marked cached answers stored it
        headline = json.loads(db.execute("SELECT headline FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
        db.execute("UPDATE runs SET headline = ? WHERE id = ?", (json.dumps({**headline, "reused from": None}), run_id))
    assert store.get(run_id).headline == headline


@pytest.mark.slow
def test_my_runs_lists_headline_numbers_first_and_every_measurement(tmp_path, result, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from pipelab.app.runner import runs
    from tests.test_app import MAIN
    monkeypatch.setenv("PIPELAB_DATA_DIR", str(tmp_path))
    monkeypatch.setattr("pipelab.app.browser.browser_id", lambda: "browser")
    runs.get_store.clear()
    try:
        store = runs.get_store()
        for _ in range(2):
            store.save(result, owner="browser", lesson="1f1b", label="mine")
        at = AppTest.from_file(MAIN, default_timeout=60)
        at.run()
        at.switch_page("page_scripts/my_runs.py")
        at.run()
        assert not at.exception, at.exception
        table = at.dataframe[0].value
        assert list(table.columns)[:4] == ["label", "link", "bubble (device)", "step ms (device)"]
        assert list(table["label"]) == ["mine", "mine"]
    finally:
        runs.get_store.clear()


@pytest.mark.slow
def test_a_runs_context_and_its_batch_read_back_in_the_order_they_ran(tmp_path, result):
    """What a page knew at Run (the verdict's kind, the batch, the predictions) is kept, so any
    page that shows the run later can say its verdict; a batch reads back in its own order."""
    store = RunStore(tmp_path)
    predicted = {"knobs": {"schedule": "1f1b", "stages": 2}, "values": {"1f1b.bubble": 0.2}}
    ids = [new_run_id() for _ in range(3)]
    for index in (2, 0, 1):  # finished out of order
        store.save(result, owner="b", lesson="1f1b", run_id=ids[index],
                   context=run_context("comparison", ids[0], index, predicted))
    alone = store.save(result, owner="b", lesson="1f1b")
    first = RunStore(tmp_path).get(ids[0])  # a restarted server reads it back
    assert first.context == {"kind": "comparison", "batch": ids[0], "index": 0, "predictions": predicted}
    assert [r.id for r in store.batch(store.get(ids[2]))] == ids
    assert [r.id for r in store.batch(store.get(alone))] == [alone]


@pytest.mark.slow
def test_a_file_an_older_server_made_gets_the_context_column(tmp_path, result):
    store = RunStore(tmp_path)
    old = store.save(result, owner="b", lesson="1f1b")
    with sqlite3.connect(store.path) as db:  # as the first servers' files were: no context column
        db.execute("ALTER TABLE runs DROP COLUMN context")
    reopened = RunStore(tmp_path)
    assert reopened.get(old).context == {}
    new = reopened.save(result, owner="b", lesson="1f1b", context=run_context("run", "x", 0))
    assert reopened.get(new).context["kind"] == "run"


# ---- course progress: a row per browser and lesson, beside the runs --------------------------

def test_progress_survives_a_restart_under_its_browser_only(tmp_path):
    store = RunStore(tmp_path)
    assert store.checked_lessons("browser-a") == set()
    assert store.set_checked("browser-a", "gpipe", True)
    assert store.set_checked("browser-a", "naive", True)
    assert store.set_checked("browser-b", "1f1b", True)
    restarted = RunStore(tmp_path)
    assert restarted.checked_lessons("browser-a") == {"gpipe", "naive"}
    assert restarted.checked_lessons("browser-b") == {"1f1b"}
    assert restarted.checked_lessons("browser-c") == set()


def test_a_lesson_answered_wrong_later_is_no_longer_checked(tmp_path):
    store = RunStore(tmp_path)
    store.set_checked("a", "gpipe", True)
    store.set_checked("a", "gpipe", False)
    assert RunStore(tmp_path).checked_lessons("a") == set()


def test_a_file_an_older_server_made_gets_the_progress_table(tmp_path):
    store = RunStore(tmp_path)
    with sqlite3.connect(store.path) as db:  # as the servers before progress was kept made it
        db.execute("DROP TABLE progress")
    assert store.checked_lessons("a") == set()  # read before any write: no table, no progress
    assert RunStore(tmp_path).set_checked("a", "gpipe", True)
    assert store.checked_lessons("a") == {"gpipe"}


def test_progress_written_while_the_database_is_locked_says_so_and_raises_nothing(tmp_path):
    store = RunStore(tmp_path)
    blocker = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        assert store.set_checked("a", "gpipe", True) is False
    finally:
        blocker.rollback()
        blocker.close()
    assert store.set_checked("a", "gpipe", True) and store.checked_lessons("a") == {"gpipe"}
