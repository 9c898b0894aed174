"""A lesson from outside lessons/: one folder, written to a temporary package and discovered
from there, as a new lesson folder would be (tests/test_lesson_folders.py). The ``toy_lesson``
fixture registers it for a test and unregisters it afterwards."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
import uuid

from pipelab.lessons import registry

SLUG = "toy-lesson"
NUMBER = 99
"""After every built-in lesson: the course's order is the catalog's numbers."""
TITLE = {"en": "Toy: a lesson in one folder", "zh": "玩具：一个文件夹就是一课"}
CLAIM = {"en": "A toy lesson's claim holds whenever it is asked.", "zh": "玩具课的论断每次都成立。"}
TEXT = {"en": "# 99. Toy\n\nThe toy lesson's own English text (arXiv 1811.06965).\n",
        "zh": "# 99. 玩具\n\n玩具课自己的中文正文（arXiv 1811.06965）。\n"}
EXTRA_READING = {"en": "The toy lesson's extra reading.\n", "zh": "玩具课的延伸阅读。\n"}
CATALOG = {
    "en": {"q.bubble.prompt": "Toy prediction: the bubble of {schedule} at p = {p}, m = {m}?",
           "q.bubble.why": "The toy's why.",
           "check.two.prompt": "Toy check: how many devices is p = {p}?",
           "check.two.right": "Right: {answer}.", "check.two.wrong": "It is {answer}.",
           "claims.tests.run": "the toy's part of the claim.",
           "claims.said": "The toy's verdict, said in English.",
           "toy.stash": "Toy switch", "toy.stash_help": "The toy's own switch."},
    "zh": {"q.bubble.prompt": "玩具预测：{schedule} 在 p = {p}、m = {m} 时的气泡是多少？",
           "q.bubble.why": "玩具的原因。",
           "check.two.prompt": "玩具检查：p = {p} 是几个设备？",
           "check.two.right": "对：{answer}。", "check.two.wrong": "是 {answer}。",
           "claims.tests.run": "玩具论断的这一部分。",
           "claims.said": "玩具的结论，用中文说。",
           "lesson.title": TITLE["zh"], "lesson.claim": CLAIM["zh"],
           "toy.stash": "玩具开关", "toy.stash_help": "玩具自己的开关。"},
}
INIT = f'''
"""A toy lesson: its catalog entry, beside its texts, questions and claim check."""
from pipelab.lessons.extra_kinds import Extra
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Lesson

from . import claim, questions

LESSON = Lesson(
    slug={SLUG!r}, number={NUMBER}, title={TITLE["en"]!r}, claim={CLAIM["en"]!r},
    defaults=Knobs(schedule="gpipe", stages=2), schedules=("gpipe", "naive"),
    claim_check=claim.check, predictions=questions.PREDICTIONS, checks=questions.CHECKS,
    extras=(Extra(kind="stash_toggle", texts={{"label": "toy.stash", "help": "toy.stash_help"}},
                  schedules=("gpipe",)),),
)
'''
QUESTIONS = '''
from pipelab.lessons.answer_kinds import NUMBER
from pipelab.lessons.predictions import bubble_question
from pipelab.lessons.self_checks import Check

PREDICTIONS = (bubble_question("bubble"),)
CHECKS = (Check(id="two", kind=NUMBER, settings={"p": 2}, answer_fn=lambda: 2),)
'''
CLAIM_CHECK = '''
from pipelab.lessons.verdict import HOLDS, Verdict, say_own


def check(claim, kind, entries):
    return Verdict(claim, (), HOLDS, say_own("said"))
'''


def registered_toy_lesson(tmp_path, monkeypatch):
    """Generator for the fixture: the toy's folder in a package on sys.path, discovered;
    yields its slug, then unregisters it and forgets the package."""
    package = f"pipelab_toy_lessons_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / package / "toy"
    (folder / "extra").mkdir(parents=True)
    (tmp_path / package / "__init__.py").write_text("")
    (folder / "__init__.py").write_text(textwrap.dedent(INIT))
    (folder / "questions.py").write_text(textwrap.dedent(QUESTIONS))
    (folder / "claim.py").write_text(textwrap.dedent(CLAIM_CHECK))
    for lang in ("en", "zh"):
        (folder / f"{lang}.md").write_text(TEXT[lang], encoding="utf-8")
        (folder / "extra" / f"{lang}.md").write_text(EXTRA_READING[lang], encoding="utf-8")
        (folder / f"{lang}.json").write_text(json.dumps(CATALOG[lang], ensure_ascii=False), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        assert registry.discover(package) == (f"{package}.toy",)
        yield SLUG
    finally:
        if any(lesson.slug == SLUG for lesson in registry.LESSONS):
            registry.unregister(SLUG)
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
