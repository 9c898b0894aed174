"""English and Chinese say the same things: same keys, lessons, questions and formulas."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from pipelab.engine.config import Limits, RunConfig
from pipelab.engine.errors import MESSAGES, fields, message_of
from pipelab.engine.schedules import build_schedule, chunked_schedules
from pipelab.engine.theory.validate import parse_schedule, validate
from pipelab.lessons import LESSONS, Knobs, i18n
from pipelab.lessons.i18n.run_label import RunLabel
from pipelab.lessons.own_keys import own_key
from pipelab.lessons.questions import all_checks, all_predictions

EN, ZH = i18n.catalog("en"), i18n.catalog("zh")
ERROR_KEYS = {key for key in ZH if key.startswith("error.") and key != "error.prefix"}
"""Chinese, and English where a page says the constraint in its own words (else the engine's sentence)."""
FIELD_NAMES = fields
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


TEXT_IN_MATH = re.compile(r"\\text\{[^{}]*\}")


def math(text: str) -> tuple[list[str], Counter]:
    """Display formulas in order, and inline formulas as a multiset (word order may differ).
    Words inside a formula (``\\text{bubble}``) are translated, so they are left out."""
    text = TEXT_IN_MATH.sub(r"\\text{}", text)
    display = DISPLAY_MATH.findall(text)
    return display, Counter(INLINE_MATH.findall(DISPLAY_MATH.sub("", text)))


def test_both_catalogs_have_the_same_keys():
    assert set(EN) - ERROR_KEYS == set(ZH) - LESSON_KEYS - ERROR_KEYS
    assert ERROR_KEYS & set(EN) <= set(ZH), "an error a page says in English words is said in Chinese too"
    assert LESSON_KEYS <= set(ZH), "every lesson's title, claim and comparison labels in Chinese"


def test_every_engine_error_is_in_chinese_with_the_same_values():
    wrong = [code for code in sorted(MESSAGES)
             if FIELD_NAMES(ZH[i18n.error_key(code)]) != FIELD_NAMES(MESSAGES[code])
             or not re.search(r"[\u4e00-\u9fff]", ZH[i18n.error_key(code)])]
    assert wrong == [], f"error codes whose Chinese lacks a value or is not Chinese: {wrong}"


def test_no_chinese_error_is_left_over_from_a_removed_code():
    assert ERROR_KEYS == {i18n.error_key(code) for code in MESSAGES}


def test_same_placeholders_and_formulas_in_both():
    wrong = [key for key in sorted(EN)
             if set(FIELD.findall(EN[key])) != set(FIELD.findall(ZH[key])) or math(EN[key]) != math(ZH[key])]
    assert wrong == [], f"keys whose placeholders or formulas differ between English and Chinese: {wrong}"


def test_chinese_text_is_translated():
    # Language names, option ids such as "2", formula-only texts and a schedule's or model's
    # proper name (PipeDream, as the papers write it) may stay as they are.
    same = [key for key in sorted(EN) if EN[key] == ZH[key]
            and not key.startswith(("lang.", "glossary.col.", "schedule.said.", "model.said."))
            and re.search(r"[a-z]{4}", EN[key])]
    assert same == [], f"keys left in English in the Chinese catalog: {same}"


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
    for q in all_predictions():
        keys += [q.prompt, q.why] + [q.option_key(o) for o in q.options]
        keys += [q.note] if q.alternative_fn is not None else []
    for c in all_checks():
        keys += [c.prompt, c.right, c.wrong] + [c.option_key(o) for o in c.options]
    missing = [k for k in keys if k not in EN or k not in ZH]
    assert not missing


def test_no_catalog_key_is_left_over_from_a_removed_question():
    expected = set()
    for q in all_predictions():
        expected |= {q.prompt, q.why, *(q.option_key(o) for o in q.options)}
        if q.alternative_fn is not None:  # the note that states both forms of the quantity
            expected.add(q.note)
    for c in all_checks():
        expected |= {c.prompt, c.right, c.wrong, *(c.option_key(o) for o in c.options)}
    # "check.header" and the like (one dot) are the page's own labels, not a question's.
    question_keys = {k for k in EN if k.startswith("q.") or (k.startswith("check.") and k.count(".") > 1)}
    assert question_keys == expected


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_chinese_lesson_has_the_english_structure_and_formulas(lesson):
    en = i18n.lesson_markdown(lesson, "en")
    zh_path = i18n.lesson_path(lesson, "zh")
    assert zh_path.exists(), f"{zh_path} is missing"
    zh = zh_path.read_text(encoding="utf-8")
    assert headings(zh) == headings(en)
    assert math(zh) == math(en)
    assert Counter(CODE_SPAN.findall(FENCE.sub("", zh))) == Counter(CODE_SPAN.findall(FENCE.sub("", en)))
    assert FENCE.findall(zh) == FENCE.findall(en), "code blocks are not translated"
    assert re.findall(r"arXiv \d{4}\.\d{4,5}", zh) == re.findall(r"arXiv \d{4}\.\d{4,5}", en)


@pytest.mark.parametrize("lesson", LESSONS, ids=ids)
def test_both_languages_say_the_same_things_about_the_host(lesson):
    en = (i18n.lesson_path(lesson, "en")).read_text(encoding="utf-8")
    zh = i18n.lesson_path(lesson, "zh").read_text(encoding="utf-8")
    host = re.compile(r"\{host_p\d+\}|\{cores\}")
    assert Counter(host.findall(zh)) == Counter(host.findall(en)) and host.search(en)


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
KEY_CALLS = re.compile(r"""\b(?:t|text|tr|RunLabel\.of)\((?:lang, |code, )?["']([\w.-]+)["']""")
SAY_CALLS = re.compile(r"""\bsay\(["']([\w.-]+)["']""")
"""A verdict's ``say`` (pipelab.lessons.verdict) prefixes "claims."."""
SAY_OWN_CALLS = re.compile(r"""\bsay_own\(["']([\w.-]+)["']""")
"""A lesson's check's ``say_own`` reads "claims.<key>" of its own folder, qualified with its slug."""
VERDICT_FILES = ("claims.py", "judging.py", "why.py", "claim.py")
SLUG_OF_FOLDER = {lesson.folder: lesson.slug for lesson in LESSONS}


def used_keys() -> set[str]:
    """Literal catalog keys the app and the verdicts look up (f-string keys are left out)."""
    keys = set()
    verdicts = sorted({path for path in ROOT.glob("lessons/**/*.py") if path.name in VERDICT_FILES}
                      | {lesson.folder / "claim.py" for lesson in LESSONS if (lesson.folder / "claim.py").exists()})
    assert len(verdicts) >= 3 + 7, verdicts  # the shared three and every lesson's claim.py
    for path in [*ROOT.glob("app/**/*.py"), *verdicts]:
        source = path.read_text(encoding="utf-8")
        keys |= {key for key in KEY_CALLS.findall(source) if "." in key}  # not a language code: text("en", ...)
        keys |= {f"claims.{key}" for key in SAY_CALLS.findall(source)}
        slug = SLUG_OF_FOLDER.get(path.parent)
        keys |= {own_key(slug, f"claims.{key}") for key in SAY_OWN_CALLS.findall(source) if slug}
    return keys


def test_every_key_the_app_looks_up_is_in_both_catalogs():
    keys = used_keys()
    assert len(keys) > 100  # the scan finds the app's keys at all
    assert sorted(k for k in keys if k not in EN or k not in ZH) == []


def raised(fn) -> Exception:
    try:
        fn()
    except Exception as err:
        return err
    raise AssertionError("no error")


def english_words(text: str) -> list[str]:
    """Runs of two or more English words: a sentence left untranslated (schedule names,
    action names like 0B0 and formulas such as m % p are single tokens)."""
    return re.findall(r"[A-Za-z]{3,}[ ,;:]+[A-Za-z]{3,}", text)


ENGINE_ERRORS = [  # (what the student did, the error, its Chinese)
    ("a negative knob", lambda: RunConfig(microbatches=-3).check_values(),
     "微批次数 m 必须是 ≥ 1 的整数，当前为 -3"),
    ("over a cap", lambda: RunConfig(stages=9).check_values(Limits()), "本服务器上阶段数 p（设备）最多为 8，当前为 9"),
    ("m % p", lambda: build_schedule("interleaved", 4, 6, 2),
     "交错式 1F1B 要求微批次数 m 是阶段数 p 的倍数，当前 m = 6 不是 p = 4 的倍数"),
    ("m >= 2p", lambda: build_schedule("dualpipev", 4, 4, 2),
     "DualPipeV 要求微批次数 m 不少于阶段数的两倍（2p = 8），当前 m = 4"),
    ("chunks", lambda: build_schedule("zb-v", 2, 4, 3), "ZB-V 的模型块数 v 不能取 3（可取：2）"),
    ("chunks, any", lambda: build_schedule("interleaved", 2, 4, 0),
     "交错式 1F1B 的模型块数 v 不能取 0（可取：任意 v ≥ 1）"),
    ("chunks on a schedule without", lambda: Knobs(schedule="gpipe", chunks=3).check(),
     f"模型块数 v=3 只对 {'，'.join(chunked_schedules())} 有效"),  # the registry's, in list order
    ("layers", lambda: RunConfig(stages=4, chunks=2, schedule="interleaved", layers=4, model="mlp").check_values(),
     "8 个阶段（p=4 × v=2）至少需要同样多的层，但多层感知机模型（mlp）只有 4 层：请增加层数或减少阶段数"),
    ("order", lambda: validate(parse_schedule("rank 0: 0B0 0F0")),
     "设备 0 第 0 个动作：0B0 排在它的前向 0F0 之前"),
    ("deadlock", lambda: validate(parse_schedule("0F0 0B0 0F1 0B1\n1F0 1F1 1B0 1B1")),
     "设备 0 第 1 个动作：死锁：剩下的每个设备都在等另一个设备（设备 0 停在 0B0，设备 1 停在 1F1）"),
    ("a typo", lambda: parse_schedule("rank 0: 0F0 0X0"),
     "第 1 行：无法读出动作 '0X0'：应依次写阶段号、类型字母（FBIWUR 之一）、微批次号，如 1F3"),
    ("missing", lambda: validate(parse_schedule("rank 0: 0F0")),
     "设备 0 第 0 个动作：缺少 0B0：每个阶段都必须为每个微批次做一次前向 F 和一次反向"),
]


@pytest.mark.parametrize("what, fn, chinese", ENGINE_ERRORS, ids=[e[0] for e in ENGINE_ERRORS])
def test_engine_errors_in_chinese(what, fn, chinese):
    err = raised(fn)
    message = message_of(err)
    assert message.code, f"{what}: {message} has no code"
    assert i18n.error_text("zh", message) == chinese
    assert not english_words(chinese)
    english = i18n.error_text("en", message)
    if what in PAGE_WORDS:  # a page says the constraint in words; the command line keeps its notation
        assert english != str(err).splitlines()[0] and not re.search(r"%|>=|<stage>", english), english
    else:
        assert english == str(err).splitlines()[0]  # English as the engine says it


PAGE_WORDS = {"m % p", "m >= 2p", "a typo", "order", "deadlock", "missing"}
"""Errors a page says in its own English words (catalog error.<code>): "(m % p == 0), got m=6,
p=4" was code syntax shown to a student; a schedule's broken rule is placed at "device 0,
action 1" on a page, "rank 0, action 1" on the command line."""


def test_an_uncoded_error_keeps_its_english_behind_a_translated_prefix():
    assert i18n.error_text("zh", "RuntimeError: boom") == "引擎报告（英文）：RuntimeError: boom"
    assert i18n.error_text("en", "RuntimeError: boom") == "RuntimeError: boom"


@pytest.mark.parametrize("line, chinese", [
    ("queued: position 2", "排队中：第 2 位"), ("running: step 2 of 3", "运行中：第 2 步，共 3 步"),
    ("running: step 4 of 10 of each schedule, in turn", "运行中：各调度轮流执行，第 4 步，共 10 步"),
    ("RuntimeError: boom", "RuntimeError: boom"),
    ("queued: position 3, about 18 s to start (3 x 6.0 s, the median of the latest runs)",
     "排队中：第 3 位，约 18 秒后开始（3 × 6.0 秒，最近几次运行的中位数）"),
    ("queued: position 9, about 2 min to start (9 x 12.0 s, the median of the latest runs)",
     "排队中：第 9 位，约 2 分钟后开始（9 × 12.0 秒，最近几次运行的中位数）"),
])
def test_progress_lines_in_chinese(line, chinese):
    assert i18n.progress_text("zh", line) == chinese
    assert i18n.progress_text("en", line) == line


@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if lesson.comparisons], ids=lambda lesson: lesson.slug)
def test_comparison_labels_in_both_languages(lesson):
    english = [i18n.comparison_label(lesson, i, "en") for i in range(len(lesson.comparisons))]
    assert english == [c.label for c in lesson.comparisons]
    chinese = [i18n.comparison_label(lesson, i, "zh") for i in range(len(lesson.comparisons))]
    stored = [RunLabel.comparison(lesson.slug, i) for i in range(len(lesson.comparisons))]
    assert ([label.text("en") for label in stored], [label.text("zh") for label in stored]) == (english, chinese)
    assert all(c in ZH.values() for c in chinese)
    # Schedule names stay as they are, so a student finds the run in the tables.
    for en, zh in zip(english, chinese):
        assert set(re.findall(r"ZB-\w+|1F1B|GPipe|2BW", en)) == set(re.findall(r"ZB-\w+|1F1B|GPipe|2BW", zh))


@pytest.mark.parametrize("make", [lambda: RunLabel.of("page.no_such_text"), lambda: RunLabel.comparison("gpipe", 7),
                                  lambda: RunLabel.comparison("no-such-lesson", 0)])
def test_a_run_label_no_text_says_is_refused_when_made(make):
    with pytest.raises(KeyError, match="no catalog text"):
        make()


@pytest.mark.parametrize("code, values", [
    ("replicas_length", dict(text="2-1", got=2, stages=3)),
    ("replicas_count", dict(got="0", text="0-1-1")),
    ("replicas_world", dict(text="4-4-4", world=12, cap=8)),
    ("replicas_microbatches", dict(text="4-1-1", most=4, m=2)),
    ("replicas_async_rounds", dict(schedule="pipedream", text="2-1-1", m=3, r=2)),
    ("replicas_custom", dict(text="2-1-1")),
])
def test_a_replicas_error_on_a_page_names_the_field_the_student_typed_into(code, values):
    from pipelab.engine.errors import Message
    message = Message.of(code, **values)
    page = i18n.error_text("en", message)
    assert "workers per stage" in page and "replicas " not in page, page
    assert "replica" in message  # the command line keeps its own word (--replicas)


@pytest.mark.parametrize("lang, schedule, says", [
    ("zh", "interleaved", "本课（交错式 1F1B）"),   # the chart's title in Chinese names the schedule in Chinese
    ("zh", "gpipe", "本课（GPipe）"),            # a name Chinese keeps as it is
    ("en", "interleaved", "this lesson (Interleaved 1F1B)"),
])
def test_a_run_label_names_its_schedule_in_the_pages_language(lang, schedule, says):
    from pipelab.lessons.i18n.run_label import RunLabel
    assert RunLabel.of("page.this_lesson", schedule=schedule).text(lang) == says
