"""Chinese that reads as Chinese (issue 26, item 5): no English words inside Chinese text
except formulas, schedule names from the registry, model names, units, code spans and the
proper names of papers, systems and people; Chinese commas inside Chinese sentences; and
distinct words for a lesson's claim (论断) and a run's verdict (结论)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelab.engine.config import MODELS
from pipelab.engine.schedules import REGISTRY
from pipelab.lessons import LESSONS, i18n

ROOT = Path(__file__).resolve().parent.parent / "lessons"
ZH = i18n.catalog("zh")
CJK = re.compile(r"[\u4e00-\u9fff]")

PROPER_NAMES = {
    # papers' systems and their parts, as the papers spell them
    "2BW", "PipeDream-Flush", "PipeDream-2BW", "DualPipe", "Megatron", "Megatron-LM", "DeepSpeed", "Colossal-AI",
    "DeepSeek-V3", "deepseek-ai", "README", "PP", "DP", "DDP", "NOAM", "Zero", "Bubble", "PipeLab", "picotron",
    "nanotron",
    # the papers' authors
    "Huang", "Harlap", "Narayanan", "Qi",
    # hardware, software and formats every Chinese text on the subject writes in Latin letters
    "CPU", "GPU", "GPT", "PyTorch", "Transformer", "BatchNorm", "LayerNorm", "VGG16", "NaN", "INF", "inf", "gloo", "ID",
    "CSV",
    "JSON", "arXiv", "torch", "torchtitan", "NCCL", "CUDA",
    # the controllable-memory paper's schedules (arXiv 2405.15362), as it names them
    "V-ZB", "V-Min", "V-Half",
}
UNITS = {"ms", "MiB", "KiB", "GiB", "GB"}  # GB: the Zero Bubble paper's Table 4 unit, quoted
ALLOWED = PROPER_NAMES | UNITS | set(MODELS)
SYMBOL = re.compile(r"^[A-Za-z]_[A-Za-z0-9]+$")
"""T_F, T_W: a formula's symbol."""
VARIABLES = re.compile(r"^[pmvrKM]{1,3}$")
"""The lessons' variables and their products (vp, vm), as in 2(vp-1)."""

MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
WORDS_IN_MATH = re.compile(r"\\text\{([^{}]*)\}")
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
NOT_PROSE = re.compile(r"\{\w+\}|https?://\S+|\]\([^)]*\)|\b(?:min|max)\(|[\w/]+\?\w+=\S*|<[^>]+>|&#?\w+;")
"""Placeholders, addresses (a link's target, a page's query such as runs?run=ID), min( / max(,
and HTML tags and entities (the charts' colour key)."""
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z]")
CJK_PUNCT = "，。：；、（）“”？！"


def prose(text: str) -> str:
    """The text a student reads as words: formulas, code and placeholders left out, but the
    words inside a formula (\\text{...}) kept, since they are words too ("bubble =")."""
    words_in_math = " ".join(WORDS_IN_MATH.findall(" ".join(MATH.findall(text))))
    text = MATH.sub(" ", CODE.sub(" ", text))
    return NOT_PROSE.sub(" ", f"{text} {words_in_math}")


def is_schedule(token: str) -> bool:
    return token.lower() in REGISTRY


def latin_words(text: str) -> list[str]:
    """English words in a Chinese text that are not a schedule's name, a formula's symbol, a
    unit or a proper name."""
    words = []
    for token in TOKEN.findall(prose(text)):
        token = token.rstrip(".")
        if not re.search(r"[A-Za-z]{2}", token):  # a variable (p, r), an action (0F3), a number
            continue
        if token in ALLOWED or is_schedule(token) or SYMBOL.match(token):
            continue
        if all(VARIABLES.match(run) for run in re.findall(r"[A-Za-z]+", token)):  # vp-1, p-r
            continue
        words.append(token)
    return words


def ascii_commas(text: str) -> list[str]:
    """", " inside a Chinese sentence: an ASCII comma with a Chinese character or Chinese
    punctuation next to it (spaces skipped)."""
    text = prose(text)
    found = []
    for m in re.finditer(r",", text):
        before = text[:m.start()].rstrip()[-1:]
        after = text[m.end():].lstrip()[:1]
        if any(c and (CJK.match(c) or c in CJK_PUNCT) for c in (before, after)):
            found.append(text[max(0, m.start() - 12):m.end() + 12])
    return found


CHINESE_KEYS = sorted(key for key, value in ZH.items() if CJK.search(value))
MARKDOWN = [path for lesson in LESSONS for path in (lesson.folder / "zh.md", lesson.folder / "extra" / "zh.md")]
"""Every catalogued lesson folder's Chinese text and extra reading (a copied folder's too)."""


def test_every_lesson_s_chinese_texts_are_read():
    assert all(path.is_file() for path in MARKDOWN), MARKDOWN
    assert {*ROOT.glob("*/zh.md"), *ROOT.glob("*/extra/zh.md")} <= set(MARKDOWN)


def test_a_chinese_catalog_text_has_no_english_words_or_ascii_commas():
    wrong = {key: latin_words(ZH[key]) + ascii_commas(ZH[key]) for key in CHINESE_KEYS}
    assert {key: found for key, found in wrong.items() if found} == {}


@pytest.mark.parametrize("path", MARKDOWN, ids=[str(p.relative_to(p.parents[2 if p.parent.name == "extra" else 1]))
                                                 for p in MARKDOWN])
def test_a_chinese_lesson_has_no_english_words_or_ascii_commas(path):
    text = path.read_text(encoding="utf-8")
    assert latin_words(text) == []
    assert ascii_commas(text) == []


@pytest.mark.parametrize("text, words", [
    ("气泡 = bubble", ["bubble"]),                                   # a formula word left in English
    (r"$$\text{alive on rank } r \le p - r$$", ["alive", "on", "rank"]),
    ("把 microbatch_size 降到 8", ["microbatch_size"]),                # a field name
    ("用 `overlap_steps` 与 GPipe、ZB-H1 和 1F1B，单位 MiB", []),     # code, schedules and units stay
    ("T_F + T_I 与 2(vp - 1) 条消息，min(p, m) 个设备", []),           # formulas stay
])
def test_the_checker_finds_english_words(text, words):
    assert latin_words(text) == words


@pytest.mark.parametrize("text, bad", [("阶段数, 层数", True), ("p = 4, m = 8", False), ("（阶段, 微批次）", True),
                                       ("$M = 4, 8$ 的扫描", False)])
def test_the_checker_finds_ascii_commas_in_chinese(text, bad):
    assert bool(ascii_commas(text)) == bad


def test_claim_and_verdict_have_their_own_words():
    """The claim a lesson makes is a 论断; what a run concludes about it, a 结论."""
    assert ZH["page.claim"] == "论断。"
    assert ZH["verdict.line"].startswith("**结论：")
    assert "结论" not in ZH["page.claim"] and "论断" not in ZH["verdict.line"]
    # Every text that names the lesson's claim says 论断, never 结论 for it.
    for key, value in ZH.items():
        english = i18n.catalog("en").get(key, "")
        if re.search(r"\bclaim", english) and not re.search(r"\bverdict", english):
            assert "结论" not in value, key
    for path in MARKDOWN:
        assert "结论" not in path.read_text(encoding="utf-8"), path.name


# ---- what a Chinese page shows, texts filled in at the page's settings ----------------------

OTHER_PAGES = {"recap": "page_scripts/recap.py", "about": "page_scripts/about.py",
               "glossary": "page_scripts/glossary.py", "my runs": "page_scripts/my_runs.py"}


@pytest.mark.parametrize("slug", [*(lesson.slug for lesson in LESSONS), *OTHER_PAGES])
def test_a_chinese_page_reads_as_chinese(slug):
    from test_course_pages import on_screen_texts, open_page
    at = open_page(OTHER_PAGES.get(slug, slug), "zh")
    texts = [x for x in on_screen_texts(at) if CJK.search(x)]
    assert len(texts) > 2
    assert [(x, latin_words(x)) for x in texts if latin_words(x)] == []
    assert [x for x in texts if ascii_commas(x)] == []
    # A knob's label and its range in Chinese brackets: "微批次数 m（1–64）".
    assert [n.label for n in at.text_input if "1–" in n.label and not n.label.endswith("）")] == []


def test_the_workers_per_stage_errors_say_the_knobs_word():
    """Issue 47: under the box "每阶段的工作进程数" the errors said "副本数 2-1", another word for it, and
    the timeline's rows "副本" where the English ones say "worker"."""
    assert ZH["knob.replicas"].startswith("每阶段的工作进程数")
    replicas = {key: value for key, value in ZH.items() if key.startswith("error.replicas_")}
    assert replicas and not any("副本数" in value for value in replicas.values())
    assert "工作进程" in ZH["chart.stage_replica"]


@pytest.mark.parametrize("template, values, filled", [
    ("微批次数 {name}的变化", {"name": "m"}, "微批次数 m 的变化"),            # a Latin value before a character
    ("每一对步中的{figure}：{values}。", {"figure": "1F1B 的气泡比例", "values": "0.1"},
     "每一对步中的 1F1B 的气泡比例：0.1。"),                                 # a digit after a character
    ("{n}个微批次", {"n": 4}, "4 个微批次"),
    ("（{n}）", {"n": 4}, "（4）"),                                          # full-width punctuation: no space
])
def test_chinese_text_spaces_latin_and_digits_from_characters(monkeypatch, template, values, filled):
    monkeypatch.setitem(i18n.catalog("zh"), "test.key", template)
    assert i18n.text("zh", "test.key", **values) == filled


def test_an_engine_error_names_its_schedule_in_chinese_words():
    """The re-walk (issue 47): "pipedream-2bw 每 p 个微批次更新一次…" named a schedule by its id."""
    from pipelab.engine.errors import Message
    said = i18n.error_text("zh", Message.of("multiple_updates", schedule="pipedream-2bw", m=8, p=6))
    assert "PipeDream-2BW" in said and "pipedream-2bw" not in said
    assert "pipedream-2bw" in i18n.error_text("en", Message.of("multiple_updates", schedule="pipedream-2bw", m=8, p=6))
