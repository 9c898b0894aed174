"""The lesson catalog: every lesson has its text, its claim, and runnable defaults."""

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from pipelab.engine.config import Limits
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.theory.validate import validate
from pipelab.lessons import KNOB_NAMES, LESSONS, Comparison, Knobs, Lesson, get_lesson, host, i18n

# The lessons may name only registered schedules (the built-in set itself is pinned once,
# in tests/test_schedule_contract.py).
KNOWN_SCHEDULES = set(REGISTRY)
ARXIV = re.compile(r"\b\d{4}\.\d{4,5}\b")

# The built-in lessons, in course order. Literal on purpose, the one list of them in the tests
# (as tests/test_schedule_contract.py pins the built-in schedules; docs/design.md names both):
# every other test reads the catalog, so a lesson folder removed or renumbered by mistake would
# otherwise go unnoticed. A new folder needs no row here: the catalog may hold more lessons.
EXPECTED = [  # number  slug           folder          schedule
    (1, "naive", "naive", "naive"),
    (2, "gpipe", "gpipe", "gpipe"),
    (3, "pipedream", "pipedream", "pipedream"),
    (4, "1f1b", "one_f_one_b", "1f1b"),
    (5, "interleaved", "interleaved", "interleaved"),
    (6, "zero-bubble", "zero_bubble", "zb-h1"),
    (7, "pp-dp", "pp_dp", "1f1b"),
    (8, "playground", "playground", "gpipe"),
]

ids = [lesson.slug for lesson in LESSONS]


def test_catalog_reads_like_the_table():
    got = [(lesson.number, lesson.slug, lesson.folder.name, lesson.defaults.schedule) for lesson in LESSONS]
    built_in = {row[1] for row in EXPECTED}
    assert [row for row in got if row[1] in built_in] == EXPECTED


def test_slugs_unique_and_numbers_in_order():
    slugs = [lesson.slug for lesson in LESSONS]
    assert len(slugs) == len(set(slugs))
    assert [lesson.number for lesson in LESSONS] == list(range(1, len(LESSONS) + 1))


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_markdown_exists_cites_a_paper_and_has_the_sections(lesson: Lesson):
    text = lesson.text()
    assert ARXIV.search(text), f"{lesson.folder.name} cites no arXiv ID"
    assert "## The claim" in text
    assert "## What to try" in text
    assert text.index("## The claim") < text.index("## What to try")


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_markdown_is_short_and_honest_about_shared_cores(lesson: Lesson):
    text = lesson.text()
    assert 200 <= len(text.split()) <= 450, f"{lesson.folder.name}: {len(text.split())} words"
    flat = " ".join(text.split())  # phrases may wrap across lines
    assert "device clock" in flat and "wall clock" in flat
    tries = text.split("## What to try", 1)[1]
    assert 2 <= len(re.findall(r"^\d+\. ", tries, flags=re.M)) <= 4


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_defaults_use_known_schedules_and_knobs(lesson: Lesson):
    assert lesson.defaults.schedule in KNOWN_SCHEDULES
    assert set(lesson.schedules) <= KNOWN_SCHEDULES
    assert lesson.defaults.schedule in lesson.schedules
    knob_names = {f.name for f in dataclasses.fields(Knobs)}
    assert set(lesson.editable) <= knob_names
    for label, knobs in lesson.comparison_knobs():
        assert label and knobs.schedule in KNOWN_SCHEDULES
        assert knobs.schedule in lesson.schedules, f"{label}: schedule not offered on the page"
    if lesson.sweep is not None:
        assert lesson.sweep["knob"] in lesson.editable
        assert len(lesson.sweep_knobs()) == len(lesson.sweep["values"])
    assert lesson.claim.strip() and "\n" not in lesson.claim


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_every_offered_run_builds_a_valid_schedule(lesson: Lesson):
    runs = [lesson.defaults, *(k for _, k in lesson.comparison_knobs()), *(k for _, k in lesson.sweep_knobs())]
    for knobs in runs:
        schedule = build_schedule(knobs.schedule, knobs.stages, knobs.microbatches, knobs.chunks)
        assert validate(schedule) is None  # InvalidSchedule names the broken rule otherwise
        assert (schedule.name, schedule.num_ranks, schedule.num_microbatches) == \
            (knobs.schedule, knobs.stages, knobs.microbatches)


def test_defaults_are_small_enough_for_two_cores():
    for lesson in LESSONS:
        d = lesson.defaults
        assert d.stages <= 4 and d.steps <= 6 and d.model == "mlp"
        # Floating-point work of one step (a multiply-add is 2, backward twice forward): at
        # most 16 GFLOP. The default size (16 layers of width 512, 64 rows, m = 8) does 12.9,
        # enough per action for the claims to show (test_lesson_claims.py) and within the
        # click-to-result budget (bench/app_latency.py). Zero bubble alone doubles the rows
        # (25.8): with steps overlapping, its claim needs actions twice as long against their
        # fixed costs (bench/overlap.py).
        flops = 2 * 3 * d.layers * d.hidden ** 2 * d.microbatches * d.microbatch_size
        assert flops <= (26e9 if lesson.slug == "zero-bubble" else 16e9), (lesson.slug, flops)


def test_lesson_specific_choices():
    naive = get_lesson("naive")  # the same micro-batches, one at a time and then pipelined
    assert [(k.schedule, k.microbatches, k.microbatch_size) for _, k in naive.comparison_knobs()] == [
        ("gpipe", naive.defaults.microbatches, naive.defaults.microbatch_size)]
    # GPipe's busy share moves from step to step, naive's hardly: GPipe's run measures more steps
    # (the same steps on a student's form: the override applies on top of it).
    (_, gpipe), = naive.comparison_knobs(naive.defaults.with_overrides({"stages": 2}))
    assert (gpipe.steps, gpipe.stages, naive.defaults.steps) == (10, 2, 5)
    assert get_lesson("gpipe").sweep == {"knob": "microbatches", "values": [4, 8, 16]}
    assert {k.recompute for _, k in get_lesson("gpipe").comparison_knobs()} == {True}
    assert {k.schedule for _, k in get_lesson("pipedream").comparison_knobs()} == {"pipedream-2bw", "1f1b"}
    interleaved = get_lesson("interleaved")
    assert (interleaved.defaults.chunks, interleaved.defaults.layers) == (2, 16)
    assert [(k.schedule, k.chunks) for _, k in interleaved.comparison_knobs()] == [("1f1b", 1)]
    zb = {k.schedule: k.chunks for _, k in get_lesson("zero-bubble").comparison_knobs()}
    assert zb == {"1f1b": 1, "zb-h2": 1, "zb-v": 2}
    playground = get_lesson("playground")
    assert set(playground.editable) >= {"schedule", "chunks", "recompute", "microbatch_size", "steps"}
    assert "rank 0:" in playground.example_schedule


def test_get_lesson_unknown_slug_lists_valid_ones():
    assert get_lesson("gpipe").number == 2
    with pytest.raises(KeyError) as err:
        get_lesson("nope")
    message = str(err.value)
    assert "nope" in message
    for lesson in LESSONS:
        assert lesson.slug in message


def test_knobs_check_and_overrides():
    assert Knobs().check() == Knobs()
    assert Knobs().with_overrides({"microbatches": 16}).microbatches == 16
    with pytest.raises(KeyError, match="valid knobs"):
        Knobs().with_overrides({"micro_batches": 16})
    with pytest.raises(ValueError, match="schedule"):
        Knobs(schedule="gpipe2").check()
    with pytest.raises(ValueError, match="stages is at most 8"):
        Knobs(stages=9).check()
    with pytest.raises(ValueError, match="stages is at most 2"):
        Knobs(stages=4).check(Limits(max_stages=2))
    with pytest.raises(ValueError, match="need at least as many layers"):
        Knobs(schedule="interleaved", stages=4, chunks=4, layers=8).check()
    with pytest.raises(TypeError):
        Knobs(4)  # keyword-only


def test_catalog_rejects_a_bad_comparison():
    with pytest.raises(KeyError):
        Lesson(slug="x", number=9, title="x", claim="x", defaults=Knobs(),
               schedules=("gpipe",), comparisons=(Comparison(label="bad", overrides={"stagez": 2}),))


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_defaults_split_the_model_evenly(lesson: Lesson):
    # An uneven split puts a bubble into every schedule that no formula of the lesson has;
    # lesson 2 makes one on purpose, as something to try, not as its default.
    d = lesson.defaults
    config = d.to_run_config()
    virtual_stages = d.stages * (config.chunks or 1)
    assert config.model_layer_count() % virtual_stages == 0, (
        f"{config.model_layer_count()} layers over {virtual_stages} stages")


@pytest.mark.parametrize("overlap", [False, True])
def test_the_overlap_steps_knob_reaches_the_engine(overlap):
    # The app can offer the toggle: the knob is the engine's RunConfig.overlap_steps.
    knobs = Knobs(schedule="zb-h2", overlap_steps=overlap).check()
    assert knobs.to_run_config().overlap_steps is overlap
    assert "overlap_steps" in KNOB_NAMES


# ---- the host's real core count, never a number typed into a lesson ---------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_a_lesson_says_the_hosts_core_count(lesson: Lesson, lang: str):
    for cores in (3, 7):
        text = i18n.lesson_markdown(lesson, lang, cores=cores)
        assert "{host_" not in text and "{cores}" not in text
        assert f"{cores} cores" in text or f"{cores} 个核" in text, (lesson.slug, cores)
    assert not re.search(r"\b2-core\b|\b2 cores\b|2 核", i18n.lesson_markdown(lesson, lang, cores=7))


@pytest.mark.parametrize("lang, cores, shared, own", [
    ("en", 2, "4 processes take turns on 2 cores", "each of the 2 processes has a core of its own (2 cores)"),
    ("en", 1, "4 processes take turns on a single core", "2 processes take turns on a single core"),
    ("en", 8, "each of the 4 processes has a core of its own (8 cores)", "each of the 2 processes has a core"),
    ("zh", 2, "4 个进程轮流使用 2 个核", "2 个进程各有自己的核（共 2 个核）"),
    ("zh", 8, "4 个进程各有自己的核（共 8 个核）", "2 个进程各有自己的核"),
])
def test_the_gpipe_lesson_says_whether_ranks_share_cores(lang, cores, shared, own):
    # Lesson 2 talks of 2 and of 4 ranks: each sentence says how that many sit on this host.
    text = " ".join(i18n.lesson_markdown(get_lesson("gpipe"), lang, cores=cores).split())
    assert shared in text and own in text


def test_the_real_core_count_is_the_cpu_affinity(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert host.host_cores() == 3
    assert "3 cores" in " ".join(i18n.lesson_markdown(get_lesson("naive"), "en").split())
    assert "3-core host" in i18n.text("en", "results.wall_caption")
    assert "3 核主机" in i18n.text("zh", "results.wall_caption")


def test_lesson_6_s_reading_gives_v_min_and_v_half_the_bubble_theory_gives_at_its_settings():
    """Issue 47: the reading said V-Min pays more bubble than V-Half while the trade-off chart's
    theory points gave both 0.186 at the lesson's p = 4, m = 8. It now states the points' own
    figures, and which of the two pays more where (p = 8, m = 16)."""
    from pipelab.engine.theory.memory_tradeoff import theory_points
    d = get_lesson("zero-bubble").defaults

    def bubbles(p, m):
        return {pt.schedule: pt.bubble_fraction for pt in theory_points(p, m).points}

    at_lesson, at_eight = bubbles(d.stages, d.microbatches), bubbles(8, 16)
    assert (d.stages, d.microbatches) == (4, 8) and at_lesson["v-min"] == pytest.approx(at_lesson["v-half"])
    assert at_eight["v-min"] > at_eight["v-half"]
    for lang in i18n.LANGUAGES:
        reading = i18n.extra_markdown(get_lesson("zero-bubble"), lang)
        for figure in (at_lesson["v-min"], at_lesson["1f1b"], at_eight["v-min"], at_eight["v-half"]):
            assert f"{figure:.3f}" in reading, (lang, figure)


# ---- words for a web student (issue 47, item 12) ---------------------------------------------

FLAG_OR_PATH = re.compile(r"(?<![\w-])--[a-z][a-z-]+|\b(?:docs|bench|engine|lessons|app|tests)/[\w./-]+"
                          r"|\b[\w-]+\.(?:py|md)\b")
"""A command-line flag (``--overlap-steps``) or a repository path (``docs/torch.md``)."""


def lesson_texts() -> dict[str, str]:
    """Every text a lesson page shows from the lessons' folders (markdown, extra reading,
    catalogs) and the shared catalog, but the engine's errors (error.*), which the command line
    says too."""
    root = Path(__file__).resolve().parent.parent / "lessons"
    texts = {}
    for path in [*root.glob("*/*.md"), *root.glob("*/extra/*.md")]:
        texts[str(path.relative_to(root))] = path.read_text(encoding="utf-8")
    for path in [*root.glob("*/*.json")]:
        for key, value in json.loads(path.read_text(encoding="utf-8")).items():
            if not key.startswith("error."):
                texts[f"{path.relative_to(root)}:{key}"] = value
    return texts


def test_no_lesson_text_names_a_command_line_flag_or_a_repository_path():
    """A web student cannot pass ``--partition time`` or open docs/torch.md: the text says what
    the run does instead."""
    texts = lesson_texts()
    assert len(texts) > 500
    found = {where: FLAG_OR_PATH.findall(text) for where, text in texts.items() if FLAG_OR_PATH.search(text)}
    assert found == {}
    assert FLAG_OR_PATH.findall("see docs/torch.md; pass `--overlap-steps`") == ["docs/torch.md", "--overlap-steps"]


def sentences(text: str) -> list[str]:
    """A claim's sentences, in English or Chinese (a full stop inside $...$ math is none)."""
    text = re.sub(r"\$[^$]*\$", "x", text)
    return [s for s in re.split(r"(?<=[.。!?！？])\s*", text) if s.strip()]


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_a_claim_is_at_most_two_sentences(lesson: Lesson):
    en, zh = lesson.claim, i18n.lesson_claim(lesson, "zh")
    assert len(sentences(en)) <= 2, en
    assert len(sentences(zh)) <= 2, zh


CHINESE_CHARACTER = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_every_sentence_of_a_claim_is_short(lesson: Lesson):
    """Issue 47: a claim is at most two short sentences (lesson 5's first was 42 words): at most
    30 words in English, 50 Chinese characters in Chinese (a formula counts as none)."""
    en, zh = sentences(lesson.claim), sentences(i18n.lesson_claim(lesson, "zh"))
    assert all(len(s.split()) <= 30 for s in en), [len(s.split()) for s in en]
    assert all(len(CHINESE_CHARACTER.findall(s)) <= 50 for s in zh), [len(CHINESE_CHARACTER.findall(s)) for s in zh]


def test_lesson_6_s_claim_is_two_short_sentences():
    """Issue 47: lesson 6's claim was one sentence of 70 words."""
    lesson = get_lesson("zero-bubble")
    en, zh = sentences(lesson.claim), sentences(i18n.lesson_claim(lesson, "zh"))
    assert len(en) == len(zh) == 2
    assert all(len(s.split()) <= 30 for s in en), en
    assert all(len(s) <= 70 for s in zh), zh
    assert sentences("A to a third when $T_F = T_I$. B. C。D。") == ["A to a third when x.", "B.", "C。", "D。"]
