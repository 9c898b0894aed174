"""The papers at their scale (engine/theory/papers.py, bench/papers.py): our simulator beside the
published figures, and the published figures' definitions checked against the closed forms."""

import pytest

from bench import papers as bench_papers
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.papers import TABLE5_SCHEDULES, TABLE_5, PublishedRow, compare, formula_rates, megatron_rows, paper_bubble_rate, table5_rates
from pipelab.engine.schedules.costs import PassCosts

COSTS = [PassCosts(), PassCosts(forward=1, backward_input=1, backward_weight=0.5),
         PassCosts(forward=2, backward_input=1, backward_weight=1),
         PassCosts(forward=1, backward_input=2, backward_weight=1)]


@pytest.mark.parametrize("row", TABLE_5, ids=[f"{r.model} p={r.p} m={r.m}" for r in TABLE_5])
def test_the_simulator_reproduces_table_5(row):
    # arXiv 2401.10241, Table 5 from Table 9's costs: every column within 0.005.
    assert set(row.rates) <= set(TABLE5_SCHEDULES)
    for column, difference in compare(row).differences().items():
        assert abs(difference) <= 0.005, (column, difference)


@pytest.mark.parametrize("costs", COSTS)
@pytest.mark.parametrize("p, m", [(4, 12), (8, 24), (8, 32)])
def test_the_paper_s_rate_is_its_closed_form_where_it_has_one(p, m, costs):
    ours, formula = table5_rates(p, m, costs), formula_rates(p, m, costs)
    for column in ("1F1B", "ZB-H1", "ZB-H2"):
        assert ours[column] == pytest.approx(formula[column], abs=1e-9), column
    assert ours["ZB-1p"] <= ours["ZB-H1"] + 1e-9 and ours["ZB-2p"] <= ours["ZB-H2"] + 1e-9
    assert {c for c, f in formula.items() if f is None} == {"1F1B-I", "ZB-1p", "ZB-2p"}


@pytest.mark.parametrize("p, m", [(4, 8), (4, 16), (8, 24)])
def test_1f1b_i_at_equal_costs_is_megatron_s_interleaved_bubble(p, m):
    rate = paper_bubble_rate("interleaved", p, m, PassCosts(), chunks=2)
    assert rate == pytest.approx(theory.interleaved_bubble_fraction(p, m, 2))


def test_megatron_s_formula_is_the_simulator_s_where_m_is_a_multiple_of_p():
    rows = megatron_rows(((4, 8, 2), (8, 16, 2), (8, 32, 4)))
    assert [r.formula for r in rows] == pytest.approx([r.simulated for r in rows])
    assert rows[0].formula == pytest.approx(1.5 / 9.5)


def test_a_published_row_is_compared_column_by_column():
    # A row whose "published" rates are the closed forms at its costs: the comparison finds
    # ours within the table's rounding for every column the paper would give.
    costs = PassCosts(forward=1, backward_input=1, backward_weight=0.5)
    published = {c: f for c, f in formula_rates(8, 24, costs).items() if f is not None}
    compared = compare(PublishedRow(model="test", p=8, m=24, costs=costs, rates=published))
    assert set(compared.differences()) == {"1F1B", "ZB-H1", "ZB-H2"}
    assert max(map(abs, compared.differences().values())) < 1e-9
    assert set(compared.ours) == set(TABLE5_SCHEDULES)


def test_the_bench_report_puts_every_section_and_says_what_is_missing(tmp_path, monkeypatch):
    out = tmp_path / "PAPERS.md"
    monkeypatch.setattr(bench_papers, "OUT", str(out))
    assert bench_papers.main() == 0
    text = out.read_text()
    for heading in ("## 1. Zero Bubble, Table 5", "## 2. Megatron's interleaved 1F1B", "## 3. The DualPipe README"):
        assert heading in text
    assert all(column in text for column in TABLE5_SCHEDULES)
    assert ("not in this repository yet" in text) == (not TABLE_5)
    assert "(PP/2-1)(F&B+B-3W)" in text
