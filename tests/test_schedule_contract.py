"""What every registered schedule owes the course, checked for each one in the registry: a
new file in engine/schedules/ is held to it with no edit here. It builds a sound schedule
where it should, plays on unit costs, says its summary and constraint in every course
language, and states its closed forms or that it has none (tests/test_theory.py holds it to
them: a copy with a wrong peak fails, below). A golden grid (tests/test_golden.py) comes when
it ships, for the built-in set only. Then a schedule registered from a module outside the
package (tests/toy_schedule.py) shows up on every list and page that offers "every schedule"."""

from __future__ import annotations

import re

import pytest

from pipelab.engine.schedules import REGISTRY, build_schedule, get_schedule_info, register
from pipelab.engine.schedules.base import Schedule, linear_placement
from pipelab.engine.theory.schedule_theory import NO_THEORY, ScheduleTheory
from pipelab.engine.theory.simulate import simulate
from pipelab.engine.theory.validate import validate
from pipelab.lessons import i18n
from tests.test_chinese_text import ascii_commas, latin_words
from tests.test_golden import GOLDEN
from tests.test_i18n import formula_tokens
from tests.toy_schedule import CONSTRAINT, SUMMARY

# The built-in schedules, in list order. Literal on purpose, the one list of them in the
# tests: every other test reads the registry, so a schedule removed or renamed by mistake
# would otherwise go unnoticed. Edit it when a schedule is added or removed on purpose.
BUILT_IN = ["naive", "gpipe", "1f1b", "interleaved", "pipedream", "pipedream-2bw", "zb-h1", "zb-h2", "zb-1p",
            "zb-2p", "zb-v", "dualpipev", "v-half", "v-min"]

NAMES = list(REGISTRY)
SETTINGS = [(2, 4), (3, 6), (4, 8), (4, 16)]
"""(p, m) every schedule must take: m a multiple of p (interleaved, 2BW) and m >= 2p (DualPipeV)."""
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_the_built_in_schedules_are_registered_in_list_order():
    assert [name for name in REGISTRY if name in BUILT_IN] == BUILT_IN


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("p, m", SETTINGS)
def test_it_builds_a_sound_schedule(name, p, m):
    schedule = build_schedule(name, p, m)
    validate(schedule)  # raises InvalidSchedule naming the broken rule
    assert (schedule.name, schedule.num_ranks, schedule.num_microbatches) == (name, p, m)
    assert schedule.chunks == get_schedule_info(name).chunks.default


@pytest.mark.parametrize("name", NAMES)
def test_it_plays_every_action_once_on_unit_costs(name):
    schedule = build_schedule(name, 4, 8)
    timeline = simulate(schedule)
    played = sorted((e.rank, e.stage, e.kind, e.microbatch) for e in timeline.compute_events())
    asked = sorted((r, a.stage, a.kind, a.microbatch) for r, program in enumerate(schedule.actions)
                   for a in program)
    assert played == asked
    assert 0.0 <= timeline.bubble_fraction() < 1.0


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_built_in_schedule_has_a_golden_grid_or_a_reason(name):
    # The shipped set's grids are pinned (docs/design.md: a schedule joins BUILT_IN and GOLDEN
    # together when it ships); a new file passes the fast tier before either, the session's
    # copied schedule (tests/copied_schedule.py) proving it.
    assert name in GOLDEN, f"add {name}'s grid at p=4, m=8 to tests/test_golden.py's GOLDEN, or why it has none"


def test_a_copied_schedule_file_passes_the_fast_tier_with_no_other_edit():
    """The fast tier registers engine/schedules/interleaved.py copied with only its names
    changed (tests/conftest.py): here it is, built as the original, and every test that loops
    over the registry has met it."""
    from tests.copied_schedule import COPY, ORIGINAL, SOURCE, copied_source
    if COPY not in REGISTRY:
        pytest.skip("the copy joins the fast tier only (-m 'not slow')")
    original_lines = SOURCE.read_text(encoding="utf-8").splitlines()
    changed = [(a, b) for a, b in zip(original_lines, copied_source().splitlines(), strict=True) if a != b]
    assert changed and all(a.replace(f'"{ORIGINAL}"', f'"{COPY}"') == b for a, b in changed)
    for p, m, v in ((4, 8, 2), (2, 4, 3)):
        copy, original = build_schedule(COPY, p, m, v), build_schedule(ORIGINAL, p, m, v)
        assert (copy.name, copy.actions, copy.stage_to_rank) == (COPY, original.actions, original.stage_to_rank)
    assert COPY in NAMES  # so each test above parametrized over the registry ran on it


MEGATRON_PEAK = "return min((p - r - 1) * 2 + (v - 1) * p + 1, m * v)"
"""The interleaved file's peak_inflight for v >= 2 (Megatron's warm-up forwards, plus one)."""
WRONG = "interleaved-wrong-peak's theory.peak_inflight at p=2, m=4, v=2 says"


@pytest.mark.parametrize("wrong_peak, caught", [
    # the copy's peak line, made wrong         the contract's first line: the simulator holds [5, 3]
    (MEGATRON_PEAK.replace("+ 1,", "+ 2,"), f"{WRONG} [6, 4], the simulator [5, 3]"),  # too high, m = 2p
    (MEGATRON_PEAK.replace(" + 1,", ","),   f"{WRONG} [4, 2], the simulator [5, 3]: below what the schedule holds"),
])
def test_a_copied_schedule_with_a_wrong_peak_fails_the_theory_contract(tmp_path, wrong_peak, caught):
    """The copy with its peak_inflight off by one, registered from a temporary module: the check
    tests/test_theory.py runs on every registered schedule fails on it, naming the peak. A peak
    too high is caught too (where the pipeline fills, m >= 2p), not only one too low."""
    from tests.copied_schedule import registered_variant
    from tests.test_theory import check_theory
    with registered_variant(tmp_path, "interleaved-wrong-peak", MEGATRON_PEAK, wrong_peak) as name:
        assert build_schedule(name, 4, 8).actions == build_schedule("interleaved", 4, 8).actions  # only the peak
        with pytest.raises(AssertionError) as failure:
            check_theory(name)
        assert str(failure.value).splitlines()[0] == caught
    assert name not in REGISTRY


def test_the_golden_table_has_no_row_for_a_schedule_that_is_gone():
    assert set(GOLDEN) <= set(REGISTRY)


@pytest.mark.parametrize("name", NAMES)
def test_its_texts_are_in_every_language(name):
    info = get_schedule_info(name)
    for texts in (info.summary, info.constraint):
        assert set(texts) == set(i18n.LANGUAGES), name
        assert all(text.strip() and "\n" not in text for text in texts.values()), name
    en, zh = info.summary["en"], info.summary["zh"]
    assert zh != en and CJK.search(zh), f"{name}'s Chinese summary is not translated"
    for text in (zh, info.constraint["zh"]):
        assert latin_words(text) == [] and ascii_commas(text) == [], text
    assert formula_tokens(en) <= formula_tokens(zh), name
    # The pages ask pipelab.lessons.i18n, which reads the registry.
    assert [i18n.schedule_summary(lang, name) for lang in i18n.LANGUAGES] == [info.summary[lang]
                                                                              for lang in i18n.LANGUAGES]


@pytest.mark.parametrize("name", NAMES)
def test_its_theory_is_stated_or_explicitly_none(name):
    theory = get_schedule_info(name).theory
    assert isinstance(theory, ScheduleTheory)
    if theory is not NO_THEORY and theory.bubble_fraction is not None:
        assert theory.bubble_text, f"{name}: a bubble formula needs its text for the tables"


def test_a_schedule_cannot_leave_out_its_texts_or_its_theory():
    def builder(ranks, microbatches, chunks=1):
        return Schedule("x", ranks, microbatches, linear_placement(ranks), ((),) * ranks)
    for missing in ("summary", "constraint", "theory"):
        fields = dict(summary={"en": "s", "zh": "s"}, constraint={"en": "c", "zh": "c"}, paper="p", theory=NO_THEORY)
        del fields[missing]
        with pytest.raises(TypeError, match=missing):
            register("x-incomplete", **fields)(builder)
    assert "x-incomplete" not in REGISTRY


# ---- a new schedule, found everywhere with no other edit --------------------------------------

def test_engine_list_names_it_with_its_summary(toy_schedule, capsys):
    from pipelab.engine.cli.main import main
    assert main(["list"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(toy_schedule + " ")]
    assert len(lines) == 1 and SUMMARY["en"] in lines[0]


def test_the_playground_offers_it(toy_schedule):
    from pipelab import lessons
    assert lessons.SCHEDULES[-1] == toy_schedule
    assert toy_schedule in lessons.get_lesson("playground").schedules


def test_the_catalogs_say_its_texts(toy_schedule):
    for lang in i18n.LANGUAGES:
        assert i18n.schedule_summary(lang, toy_schedule) == SUMMARY[lang]
        assert i18n.schedule_constraint(lang, toy_schedule) == CONSTRAINT[lang]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_recap_table_has_its_row_in_the_page_language(toy_schedule, lang):
    from tests.test_course_pages import open_page
    at = open_page("page_scripts/recap.py", lang)
    table = at.dataframe[0].value
    row = table.set_index(i18n.text(lang, "recap.col.schedule")).loc[toy_schedule]
    assert row[i18n.text(lang, "recap.col.formula_value")] == f"{3 / 11:.3f}"  # its registered (p-1)/(m+p-1)
    words = at.table[0].value.loc[toy_schedule]
    assert words[i18n.text(lang, "recap.col.summary")] == SUMMARY[lang]
    assert words[i18n.text(lang, "recap.col.constraints")] == CONSTRAINT[lang]
