"""English and Chinese say the same things: same keys, lessons, questions and formulas."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from lessons import LESSONS, i18n
from lessons.questions import CHECKS, PREDICTIONS

EN, ZH = i18n.catalog("en"), i18n.catalog("zh")
LESSON_KEYS = ({f"lesson.{lesson.slug}.{part}" for lesson in LESSONS for part in ("title", "claim")}
               | {f"lesson.{lesson.slug}.comparison.{i}" for lesson in LESSONS for i in range(len(lesson.comparisons))})
"""Chinese only: their English is lessons.LESSONS itself."""
ids = [lesson.slug for lesson in LESSONS]

DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE_MATH = re.compile(r"(?<!\$)\$(?!\$)(.+?)(?<!\$)\$(?!\$)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
FIELD = re.compile(r"\{(\w+)\}")


def headings(markdown: str) -> Counter:
    """Heading count per level, code blocks left out (a '#' there is a comment)."""
    return Counter(len(m.group(1)) for m in re.finditer(r"^(#+) ", FENCE.sub("", markdown), re.M))


def math(text: str) -> tuple[list[str], Counter]:
    """Display formulas in order, and inline formulas as a multiset (word order may differ)."""
    display = DISPLAY_MATH.findall(text)
    return display, Counter(INLINE_MATH.findall(DISPLAY_MATH.sub("", text)))


def test_both_catalogs_have_the_same_keys():
    assert set(EN) == set(ZH) - LESSON_KEYS
    assert LESSON_KEYS <= set(ZH), "every lesson's title, claim and comparison labels in Chinese"


@pytest.mark.parametrize("key", sorted(EN))
def test_same_placeholders_and_formulas_in_both(key):
    assert set(FIELD.findall(EN[key])) == set(FIELD.findall(ZH[key])), key
    assert math(EN[key]) == math(ZH[key]), key


@pytest.mark.parametrize("key", sorted(EN))
def test_chinese_text_is_translated(key):
    # Language names, option ids such as "2" and formula-only texts may stay as they are.
    if EN[key] == ZH[key]:
        assert key.startswith("lang.") or key.startswith("glossary.col.") or not re.search(r"[a-z]{4}", EN[key]), key


def formula_tokens(text: str) -> set[str]:
    """Expressions such as (K-1)/(M+K-1), 1/p or p-r (every letter run one letter long)."""
    tokens = re.findall(r"[\w()]+(?:[-+/][\w()]+)+", text)
    return {t for t in tokens if all(len(run) == 1 for run in re.findall(r"[A-Za-z]+", t))}


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_lesson_claims_keep_their_formulas(lesson):
    zh = i18n.lesson_claim(lesson, "zh")
    assert zh != lesson.claim and re.search(r"[\u4e00-\u9fff]", zh)
    assert formula_tokens(lesson.claim) <= formula_tokens(zh), lesson.slug
    assert i18n.lesson_claim(lesson, "en") == lesson.claim and i18n.lesson_title(lesson, "en") == lesson.title


def test_every_question_has_its_texts_in_both_languages():
    keys = []
    for q in PREDICTIONS:
        keys += [q.prompt, q.why] + [q.option_key(o) for o in q.options]
    for c in CHECKS:
        keys += [c.prompt, c.right, c.wrong] + [c.option_key(o) for o in c.options]
    missing = [k for k in keys if k not in EN or k not in ZH]
    assert not missing


def test_no_catalog_key_is_left_over_from_a_removed_question():
    expected = set()
    for q in PREDICTIONS:
        expected |= {q.prompt, q.why, *(q.option_key(o) for o in q.options)}
    for c in CHECKS:
        expected |= {c.prompt, c.right, c.wrong, *(c.option_key(o) for o in c.options)}
    # "check.header" and the like (one dot) are the page's own labels, not a question's.
    question_keys = {k for k in EN if k.startswith("q.") or (k.startswith("check.") and k.count(".") > 1)}
    assert question_keys == expected


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_chinese_lesson_has_the_english_structure_and_formulas(lesson):
    en = i18n.lesson_markdown(lesson, "en")
    zh_path = i18n.lesson_path(lesson, "zh")
    assert zh_path.exists(), f"lessons/zh/{lesson.markdown} is missing"
    zh = zh_path.read_text(encoding="utf-8")
    assert headings(zh) == headings(en)
    assert math(zh) == math(en)
    assert Counter(CODE_SPAN.findall(FENCE.sub("", zh))) == Counter(CODE_SPAN.findall(FENCE.sub("", en)))
    assert FENCE.findall(zh) == FENCE.findall(en), "code blocks are not translated"
    assert re.findall(r"arXiv \d{4}\.\d{4,5}", zh) == re.findall(r"arXiv \d{4}\.\d{4,5}", en)


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_every_lesson_has_an_extra_reading_in_both_languages(lesson):
    en, zh = i18n.extra_markdown(lesson, "en"), i18n.extra_markdown(lesson, "zh")
    assert en and zh and zh != en
    assert math(zh) == math(en)
    assert set(re.findall(r"arXiv \d{4}\.\d{4,5}", zh)) == set(re.findall(r"arXiv \d{4}\.\d{4,5}", en))
    assert re.search(r"arXiv \d{4}\.\d{4,5}", en), "cites its paper"


@pytest.mark.parametrize("lesson_slug, paper", [
    ("gpipe", "1811.06965"), ("pipedream", "1806.03377"), ("pipedream", "2006.09503"),
    ("interleaved", "2104.04473"), ("zero-bubble", "2401.10241"),
])
def test_extra_readings_cover_the_papers(lesson_slug, paper):
    lesson = next(lesson for lesson in LESSONS if lesson.slug == lesson_slug)
    assert paper in i18n.extra_markdown(lesson, "en")


def test_glossary_uses_the_course_terms():
    terms = {t: i18n.text("zh", f"glossary.{t}.term") for t in i18n.glossary_terms()}
    for expected in ("气泡", "微批次", "重计算", "流水线刷新", "权重暂存", "阶段", "设备", "梯度"):
        assert any(expected in term for term in terms.values()), expected
    assert "热身" in terms["phases"] and "稳定" in terms["phases"] and "冷却" in terms["phases"]
    assert "虚拟流水线" in terms["virtual"]


@pytest.mark.parametrize("template, values, filled", [
    ("{done}/{total} lessons", {"done": 3, "total": 7}, "3/7 lessons"),
    (r"$\frac{p-1}{m}$ at {p}", {"p": 4}, r"$\frac{p-1}{m}$ at 4"),   # braces without a value stay
])
def test_fill(template, values, filled):
    assert i18n.fill(template, values) == filled


def test_unknown_language_is_one_line_error():
    with pytest.raises(ValueError, match="valid languages: en, zh"):
        i18n.catalog("fr")


# ---- the app's own texts ---------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
KEY_CALLS = re.compile(r"""\b(?:t|text|tr|_t)\((?:lang, |code, )?["']([\w.-]+)["']""")


def used_keys() -> set[str]:
    """Literal catalog keys the app and the verdicts look up (f-string keys are left out)."""
    keys = set()
    for path in [*ROOT.glob("app/**/*.py"), ROOT / "lessons" / "claims.py"]:
        for key in KEY_CALLS.findall(path.read_text(encoding="utf-8")):
            if path.name == "claims.py":  # its _t() prefixes "claims."
                keys.add(key if key.startswith("claims.") else f"claims.{key}")
            elif "." in key:  # not a language code such as text("en", ...)
                keys.add(key)
    return keys


def test_every_key_the_app_looks_up_is_in_both_catalogs():
    keys = used_keys()
    assert len(keys) > 100  # the scan finds the app's keys at all
    assert sorted(k for k in keys if k not in EN or k not in ZH) == []


@pytest.mark.parametrize("message, chinese", [
    ("microbatches must be a whole number >= 1, got -3", "微批次数 m 必须是 ≥ 1 的整数，当前为 -3"),
    ("stages is at most 8 on this server, got 9", "本服务器上阶段数 p（设备）最多为 8，当前为 9"),
    ("interleaved needs micro-batches to be a multiple of stages (m % p == 0), got m=6, p=4",
     "interleaved 要求微批次数是阶段数的倍数（m % p == 0），当前 m=6，p=4"),
    ("dualpipev needs at least as many micro-batches as stages (m >= 2p = 8), got m=4",
     "dualpipev 要求微批次数不少于阶段数（m >= 2p = 8），当前 m=4"),
    ("64 stages (p=8 x v=8) need at least as many layers, but the mlp model has 16 (raise layers, at most 32)",
     "64 个阶段（p=8 × v=8）至少需要同样多的层，但 mlp 模型只有 16 层：请增加层数"),
    ("rank 0, step 0: 0B0 comes before its forward", "引擎报告（英文）：rank 0, step 0: 0B0 comes before its forward"),
])
def test_engine_errors_in_chinese(message, chinese):
    assert i18n.error_text("zh", message) == chinese
    assert i18n.error_text("en", message) == message  # English as the engine says it


@pytest.mark.parametrize("line, chinese", [
    ("queued: position 2", "排队中：第 2 位"), ("running: step 2 of 3", "运行中：第 2 步，共 3 步"),
    ("done (cached)", "完成（来自缓存）"), ("RuntimeError: boom", "RuntimeError: boom"),
])
def test_progress_lines_in_chinese(line, chinese):
    assert i18n.progress_text("zh", line) == chinese
    assert i18n.progress_text("en", line) == line


@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if lesson.comparisons], ids=lambda lesson: lesson.slug)
def test_comparison_labels_in_both_languages(lesson):
    english = [i18n.comparison_label(lesson, i, "en") for i in range(len(lesson.comparisons))]
    assert english == [c.label for c in lesson.comparisons]
    chinese = [i18n.comparison_label(lesson, i, "zh") for i in range(len(lesson.comparisons))]
    assert all(c in ZH.values() for c in chinese)
    # Schedule names stay as they are, so a student finds the run in the tables.
    for en, zh in zip(english, chinese):
        assert set(re.findall(r"ZB-\w+|1F1B|GPipe|2BW", en)) == set(re.findall(r"ZB-\w+|1F1B|GPipe|2BW", zh))
