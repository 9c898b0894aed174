"""The course's texts in English and Simplified Chinese: catalogs and lesson files.

Plain data, no Streamlit: ``app/i18n.py`` picks the language for a browser session, this
module only looks texts up. A language's catalog is flat JSON, key -> text, where ``{name}``
is filled from keyword arguments: the course's shared texts next to this module (``en.json``,
``zh.json``), and each lesson's own in its folder (lessons/<name>/en.json, zh.json: its
questions, its claim check's sentences, its extras' titles), merged. A folder writes its keys
without the lesson's name (``q.bubble.prompt``) and the merge puts its slug in
(``q.naive.bubble.prompt``, pipelab.lessons.own_keys), so a copied folder cannot collide with
the original; a key defined twice is an error. Lesson titles and claims in English are the
catalog entry itself (``Lesson``); their Chinese lives in the lesson's zh.json under
``lesson.title`` / ``lesson.claim`` (``lesson.<slug>.title`` once merged). A lesson's prose
is ``<folder>/<lang>.md``, its short extra reading ``<folder>/extra/<lang>.md``.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from pipelab.engine.schedules import get_schedule_info
from pipelab.lessons import host, registry
from pipelab.lessons.lesson import Lesson
from pipelab.lessons.own_keys import own_key

LANGUAGES = ("en", "zh")
DEFAULT = "en"
_HERE = Path(__file__).resolve().parent
_FIELD = re.compile(r"\{(\w+)\}")


def catalog(lang: str) -> dict[str, str]:
    """The catalog of one language: the shared texts and every registered lesson's (read once
    per process, and again when a lesson is registered)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; valid languages: {', '.join(LANGUAGES)}")
    return _merged(lang, registry.version())


@functools.lru_cache(maxsize=8)
def _merged(lang: str, version: int) -> dict[str, str]:
    shared = _read(_HERE / f"{lang}.json")
    merged = dict(shared)
    for lesson in registry.LESSONS:
        path = lesson.folder / f"{lang}.json"
        written = _read(path) if path.exists() else {}
        own = {own_key(lesson.slug, key): value for key, value in written.items()}
        # A folder key spelled like a shared one would read as replacing the shared text on
        # this lesson's page, which it does not: refused, like one already in the catalog.
        twice = sorted({key for key in written if key in shared} | {key for key in own if key in merged})
        if twice:
            raise ValueError(f"{path}: keys already in the catalog: {', '.join(twice)}")
        merged.update(own)
    return merged


def _read(path: Path) -> dict[str, str]:
    return json.loads(path.read_text(encoding="utf-8"))


def fill(template: str, values: dict) -> str:
    """Replace ``{name}`` by its value; other braces (LaTeX, code) are left alone."""
    return _FIELD.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def text(lang: str, key: str, **values) -> str:
    """The text under ``key`` in ``lang``, filled; English if that language lacks it, else the key.
    ``{cores}`` is the host's core count unless a value for it is given."""
    template = catalog(lang).get(key)
    if template is None:
        template = catalog(DEFAULT).get(key, key)
    if "{cores}" in template and "cores" not in values:
        values = {**values, "cores": host.host_cores()}
    filled = fill(template, values)
    return _LATIN_CJK.sub(" ", _CJK_GAP.sub("", filled)) if lang == "zh" else filled


_CJK_GAP = re.compile(r"(?<=[\u4e00-\u9fff）]) (?=[\u4e00-\u9fff（])")
"""A space between two Chinese characters: a template spaces its values apart for Latin names
("比 {b} 短" around "GPipe"), and a value said in Chinese ("朴素方式") leaves the spaces as gaps
that Chinese text does not have ("比 朴素方式 短")."""


_LATIN_CJK = re.compile(r"(?<=[A-Za-z0-9])(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9])")
"""Where a Latin letter or a digit touches a Chinese character, Chinese text puts a space: a value
ending in a Latin name or symbol ("微批次数 m") filled before a character ("的变化") read "m的", and
"每一对步中的{figure}" read "中的1F1B"."""


def join_sentences(lang: str, sentences) -> str:
    """Whole sentences as one text: Chinese runs them on ("。" ends one, and a space after it
    reads as a gap), other languages put a space between."""
    return ("" if lang == "zh" else " ").join(sentences)


_HOST_PHRASE = re.compile(r"\{host_p(\d+)\}")


def fill_host(markdown: str, lang: str, cores: int | None = None) -> str:
    """A lesson's ``{host_pN}`` (how N ranks sit on this host's cores: taking turns, or each
    on its own) and ``{cores}``, said in ``lang`` for ``cores`` (default: this host's)."""
    cores = host.host_cores() if cores is None else cores

    def phrase(found: re.Match) -> str:
        ranks = int(found.group(1))
        return text(lang, host.phrase_key(ranks, cores), ranks=ranks, cores=cores)
    return _HOST_PHRASE.sub(phrase, markdown).replace("{cores}", str(cores))


def has(lang: str, key: str) -> bool:
    return key in catalog(lang)


def model_said(lang: str, model: str) -> str:
    """A built-in model as a page names it (``model.said.<name>``: the Chinese says 多层感知机,
    not "mlp"); a name the catalog lacks (a user's model) as it is."""
    key = f"model.said.{model}"
    return text(lang, key) if has(lang, key) else model


def schedule_said(lang: str, name: str) -> str:
    """A schedule as a sentence names it in ``lang`` (``schedule.said.<name>``: the registry's
    label, GPipe, or the page's own words, 朴素方式), else its id."""
    key = f"schedule.said.{name}"
    return text(lang, key) if has(lang, key) else name


def schedule_option(lang: str, name: str) -> str:
    """A schedule as a picker shows it: the id in English; in another language the page's name
    for it with the id beside it (交错式 1F1B（interleaved）), the name alone where the two differ
    only in case (GPipe, not the id gpipe, on a Chinese page)."""
    key = f"schedule.said.{name}"
    said = text(lang, key) if lang != DEFAULT and has(lang, key) else name
    return said if said.lower() == name.lower() else f"{said}（{name}）"


# A schedule's summary and constraint live in its own file (engine/schedules/, the
# ``register`` call), not in the catalogs: a new schedule is one file, and the pages still
# ask here, like for any other text.
def schedule_summary(lang: str, name: str) -> str:
    """Registered schedule ``name``'s one-line summary in ``lang`` (English if it lacks ``lang``)."""
    return _schedule_text(get_schedule_info(name).summary, lang)


def schedule_constraint(lang: str, name: str) -> str:
    """What registered schedule ``name`` refuses or gives up, in ``lang`` (English if it lacks ``lang``)."""
    return _schedule_text(get_schedule_info(name).constraint, lang)


def _schedule_text(texts, lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; valid languages: {', '.join(LANGUAGES)}")
    return texts.get(lang) or texts[DEFAULT]


def glossary_terms() -> list[str]:
    """Ids of the glossary's terms, in the English catalog's order (``glossary.<id>.term``)."""
    return [key.split(".")[1] for key in catalog(DEFAULT) if key.startswith("glossary.") and key.endswith(".term")]


def lesson_title(lesson: Lesson, lang: str) -> str:
    return lesson.title if lang == DEFAULT else text(lang, own_key(lesson.slug, "lesson.title"))


def lesson_claim(lesson: Lesson, lang: str) -> str:
    return lesson.claim if lang == DEFAULT else text(lang, own_key(lesson.slug, "lesson.claim"))


def comparison_label(lesson: Lesson, index: int, lang: str) -> str:
    """The label of the lesson's ``index``-th comparison run (English: ``Comparison.label``)."""
    label = lesson.comparisons[index].label
    return label if lang == DEFAULT else text(lang, own_key(lesson.slug, f"lesson.comparison.{index}"))


# The engine's errors are English one-liners that carry their code and values (a Message,
# engine/errors.py): a page in another language says them from its catalog, ``error.<code>``,
# filled with the same values (Chinese only: the English is the engine's own sentence, as a
# lesson's English title is lessons.LESSONS itself). A line with no code (a Python or torch
# error inside a rank) keeps its English words behind a translated prefix, so nothing the
# engine says is lost or made up.
# The knob an error names (its CLI spelling) -> its field, whose label is catalog ``knob.<field>``.
KNOB_NAMES = {"stages": "stages", "microbatches": "microbatches", "micro-batches": "microbatches",
              "chunks": "chunks", "layers": "layers", "hidden": "hidden", "microbatch-size": "microbatch_size",
              "microbatch_size": "microbatch_size", "steps": "steps", "replicas": "replicas"}


def error_key(code: str) -> str:
    return f"error.{code}"


def error_text(lang: str, message: str) -> str:
    """An engine's one-line error in ``lang``: a coded Message from the catalog, anything else
    (plain text, an uncoded line) as it is behind a translated prefix; English as the engine
    says it."""
    code = getattr(message, "code", "")
    if lang == DEFAULT and not (code and has(lang, error_key(code))):
        # The engine's sentence; a page's own words where the catalog has them (a constraint
        # said in words, not the command line's notation such as m % p == 0).
        return str(message)
    if code and has(lang, error_key(code)):
        return text(lang, error_key(code), **{name: _error_value(lang, name, value)
                                              for name, value in message.values})
    return text(lang, "error.prefix", message=message)


def _error_value(lang: str, name: str, value: object) -> str:
    if isinstance(value, tuple):
        return text(lang, "results.list_sep").join(_error_value(lang, name, each) for each in value)
    if getattr(value, "code", ""):
        return error_text(lang, value)
    if name == "model":
        return model_said(lang, str(value))
    if name == "schedule" and lang != DEFAULT:  # "pipedream-2bw 每 p 个…" read as an id in Chinese
        return schedule_said(lang, str(value))
    if name == "knob" and value in KNOB_NAMES:
        return text(lang, f"knob.{KNOB_NAMES[value]}")
    return str(value)


# The runner's progress lines (app/runner/jobs.py, engine/runtime/rank_processes.py), matched whole.
_PROGRESS = (
    ("progress.queued", re.compile(r"^queued: position (?P<position>\d+)$")),
    ("progress.queued_eta_s", re.compile(r"^queued: position (?P<position>\d+), about (?P<wait>\d+) s to start "
                                         r"\(\d+ x (?P<median>[\d.]+) s, the median of the latest runs\)$")),
    ("progress.queued_eta_min", re.compile(r"^queued: position (?P<position>\d+), about (?P<wait>\d+) min to start "
                                           r"\(\d+ x (?P<median>[\d.]+) s, the median of the latest runs\)$")),
    ("progress.starting", re.compile(r"^running: starting processes$")),
    ("progress.step", re.compile(r"^running: step (?P<step>\d+) of (?P<total>\d+)$")),
    ("progress.step_in_turn", re.compile(r"^running: step (?P<step>\d+) of (?P<total>\d+) of each schedule, in turn$")),
    ("progress.round", re.compile(r"^running: round (?P<round>\d+) of (?P<rounds>\d+), "
                                  r"run (?P<run>\d+) of (?P<runs>\d+)$")),
    # A planned request's own phases (engine/runtime/planned_runs.py), before its runs.
    ("progress.plan_profile", re.compile(r"^running: profiling each layer$")),
    ("progress.plan_calibrate", re.compile(r"^running: timing each stage in a short run$")),
    ("progress.plan_link", re.compile(r"^running: measuring the link$")),
    ("progress.done", re.compile(r"^done$")),
    ("progress.cancelled", re.compile(r"^cancelled$|^run cancelled$")),
    ("progress.expired", re.compile(r"^this run has expired; run it again$|^run expired$")),
)


def progress_text(lang: str, line: str) -> str:
    """A runner's progress or status line in ``lang``; one it does not know stays as it is."""
    if lang != DEFAULT:
        for key, pattern in _PROGRESS:
            found = pattern.match(line)
            if found:
                return text(lang, key, **found.groupdict())
    return line


def example_schedule(lesson: Lesson, lang: str) -> str:
    """The playground's prefilled custom schedule: a comment in ``lang`` saying what it is,
    then the lesson's own lines (actions read the same in every language)."""
    if not lesson.example_schedule:
        return ""
    return f"# {text(lang, 'playground.example_comment')}\n{lesson.example_schedule}"


def lesson_path(lesson: Lesson, lang: str) -> Path:
    return lesson.folder / f"{lang}.md"


def lesson_markdown(lesson: Lesson, lang: str, cores: int | None = None) -> str:
    """The lesson's prose in ``lang`` (English when no translation exists), with the host's
    core count filled in (fill_host; ``cores`` fakes it, for tests)."""
    path = lesson_path(lesson, lang)
    if not path.exists():
        path, lang = lesson_path(lesson, DEFAULT), DEFAULT
    return fill_host(path.read_text(encoding="utf-8"), lang, cores)


def extra_path(lesson: Lesson, lang: str) -> Path:
    return lesson.folder / "extra" / f"{lang}.md"


def extra_markdown(lesson: Lesson, lang: str) -> str | None:
    """The lesson's extra reading from the papers in ``lang``, or None if it has none."""
    path = extra_path(lesson, lang)
    if not path.exists():
        path = extra_path(lesson, DEFAULT)
    return path.read_text(encoding="utf-8") if path.exists() else None


__all__ = ["DEFAULT", "KNOB_NAMES", "LANGUAGES", "catalog", "comparison_label", "error_key", "error_text",
           "example_schedule",
           "extra_markdown", "fill", "fill_host",
           "glossary_terms", "has", "lesson_claim", "lesson_markdown", "lesson_title", "model_said", "progress_text",
           "schedule_option", "schedule_said",
           "schedule_constraint", "schedule_summary", "text"]
