"""The "at the papers' scale" page, driven headless in both languages."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pipelab.engine.schedules.costs import PassCosts
from pipelab.engine.theory.papers import TABLE5_SCHEDULES, TABLE_5, paper_bubble_rate
from pipelab.engine.theory.papers_memory import TABLE_4_GB
from pipelab.lessons import i18n

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")


def open_papers(lang: str) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.query_params["lang"] = lang
    at.run()
    at.switch_page("page_scripts/papers.py")
    at.run()
    assert not at.exception, at.exception
    return at


def column(at: AppTest, lang: str, name: str) -> list[str]:
    table = at.table[0].value
    return [str(x) for x in table[i18n.text(lang, f"papers.col.{name}")]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_lists_every_table_5_schedule_and_moves_with_the_costs(lang):
    at = open_papers(lang)
    assert at.title[0].value == i18n.text(lang, "papers.title")
    assert column(at, lang, "schedule") == list(TABLE5_SCHEDULES)
    at.selectbox[0].set_value(0).run()  # the student's own costs: all equal, no link
    before = column(at, lang, "ours")
    at.text_input[4].set_value("0.5").run()  # T_W: ZB-H1 and ZB-H2 lose what W filled
    assert not at.exception
    after = column(at, lang, "ours")
    h1 = list(TABLE5_SCHEDULES).index("ZB-H1")
    assert float(after[h1]) == pytest.approx(paper_bubble_rate(
        "zb-h1", 8, 24, PassCosts(forward=1, backward_input=1, backward_weight=0.5)), abs=1e-4)
    assert after != before


def test_a_setup_interleaved_cannot_build_says_why_in_one_line():
    at = open_papers("en")
    at.selectbox[0].set_value(0).run()
    at.text_input[1].set_value("23").run()  # m % p != 0
    assert not at.exception
    cell = column(at, "en", "ours")[list(TABLE5_SCHEDULES).index("1F1B-I")]
    assert "m = 23 is not a multiple of p = 8" in cell and "%" not in cell and "\n" not in cell


def test_the_page_shows_the_paper_s_rows():
    at = open_papers("en")
    published = at.dataframe[0].value
    assert [(r.model, r.p, r.m) for r in TABLE_5] == list(zip(published["model"], published["p"], published["m"]))
    assert list(published["ZB-2p"]) == [f"{r.rates['ZB-2p']:.4f}" for r in TABLE_5]


def test_the_page_opens_on_a_paper_row_beside_its_published_rate_until_a_student_changes_it():
    at = open_papers("en")
    row = TABLE_5[0]  # 1.5B, p = 8, m = 24: the quickest to build, and what the page opens on
    assert not at.exception, at.exception
    assert [x.value for x in at.text_input[:2]] == [str(row.p), str(row.m)]
    ours, paper = column(at, "en", "ours"), column(at, "en", "paper")
    assert paper == [f"{row.rates[c]:.4f}" for c in TABLE5_SCHEDULES]
    assert all(abs(float(a) - float(b)) <= 0.005 for a, b in zip(ours, paper))
    assert column(at, "en", "measured")[0] == "30"  # Table 4: 1F1B, 1.5B
    at.text_input[1].set_value("32").run()  # m: no longer the row's setup, so no paper figure
    assert not at.exception
    assert set(column(at, "en", "paper")) == {"—"} and column(at, "en", "ours") != ours


def shown(costs: PassCosts, **changed) -> PassCosts:
    """``costs`` as the page's boxes show and hand them back (typed_number: six significant digits)."""
    values = {f: float(f"{getattr(costs, f):g}") for f in ("forward", "backward_input", "backward_weight", "link",
                                                          "weight_memory")}
    return PassCosts(**{**values, **changed})


@pytest.mark.parametrize("row", TABLE_5, ids=lambda r: f"{r.model} p={r.p} m={r.m}")
def test_every_paper_row_as_its_boxes_show_it_is_that_row_s_setup(row):
    from pipelab.app.screens.papers_page import is_setup_of
    # Table 1's W share for the 6.2B-28.3B models, 16/37, shows as 0.432432: these nine rows were
    # never their own setup, so picking one showed no paper figure beside ours.
    assert is_setup_of(row, row.p, row.m, shown(row.costs), row.chunks)
    assert not is_setup_of(row, row.p, row.m, shown(row.costs, weight_memory=0.4324), row.chunks)
    assert not is_setup_of(row, row.p, row.m, shown(row.costs, link=row.costs.link + 0.001), row.chunks)
    assert not is_setup_of(row, row.p, row.m + 1, shown(row.costs), row.chunks)


def test_a_picked_row_with_a_share_its_box_rounds_shows_the_papers_rates_beside_ours():
    at = open_papers("en")
    row = next(r for r in TABLE_5 if r.model == "6.2B" and r.m == 24)
    at.selectbox[0].set_value(TABLE_5.index(row) + 1).run()  # 0 is the student's own costs
    assert not at.exception, at.exception
    assert at.text_input[7].value == "0.432432"
    assert column(at, "en", "paper") == [f"{row.rates[c]:.4f}" for c in TABLE5_SCHEDULES]
    # Played at the row's own costs, not the box's six digits: bench/PAPERS.md's figures.
    ours = [f"{paper_bubble_rate(name, row.p, row.m, row.costs, row.chunks):.4f}" for name in TABLE5_SCHEDULES.values()]
    assert column(at, "en", "ours") == ours
    assert column(at, "en", "measured")[0] == str(TABLE_4_GB["6.2B"]["1F1B"]) == "39"  # Table 4


def test_a_rate_that_cannot_be_played_says_its_rule_in_words_not_the_command_lines_notation():
    from pipelab.app.screens.papers_page import _ours
    said = _ours("interleaved", 4, 6, PassCosts(forward=1.0, backward_input=1.0, backward_weight=1.0, link=0.0), 2)
    assert said == i18n.text("en", "error.multiple", schedule="interleaved", m=6, p=4)
    assert "%" not in said


@pytest.mark.parametrize("box, typed, key, label", [
    (1, "-3", "papers.bad_whole", "papers.m"), (1, "0", "papers.bad_whole", "papers.m"),
    (1, "100000", "papers.bad_whole", "papers.m"), (1, "2.5", "papers.bad_whole", "papers.m"),
    (4, "-1", "papers.bad_number_min", "papers.t_w"),
    (7, "1.5", "papers.bad_number", "papers.weight_memory"),
])
def test_an_impossible_number_is_said_in_a_line_and_no_old_table_stays(box, typed, key, label):
    """The walk typed m = -3: the box turned red with its reason in a tooltip while the table
    kept the old m's rates."""
    at = open_papers("en")
    at.text_input[box].set_value(typed).run()
    assert not at.exception, at.exception
    said = [m.value for m in at.markdown if typed in m.value and i18n.text("en", label) in m.value]
    expected = i18n.text("en", key, label=i18n.text("en", label), range="x", low="0", got=typed).split(" must")[0]
    assert len(said) == 1 and expected in said[0], [m.value for m in at.markdown]
    assert "in ≥" not in said[0]  # "a number in ≥ 0" read badly: a lower bound is said as one
    assert not at.table, "no rates for settings the boxes no longer hold"


def test_the_chinese_table_names_our_schedules_as_the_pickers_do():
    at = open_papers("zh")
    assert "交错式 1F1B（interleaved）" in column(at, "zh", "registry")

