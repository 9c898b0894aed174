"""The DualPipe README's table (engine/theory/dualpipe_table.py): formulas next to the simulator."""

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.theory.dualpipe_table import TABLE_SCHEDULES, dualpipe_table

P_M = [(2, 4), (4, 8), (4, 16), (6, 12), (8, 32)]


@pytest.mark.parametrize("p, m", P_M)
def test_formula_and_simulator_side_by_side(p, m):
    rows = {row.schedule: row for row in dualpipe_table(p, m)}
    assert tuple(rows) == TABLE_SCHEDULES
    for name in ("1f1b", "zb-h1", "zb-v"):  # the closed forms hold exactly on unit costs
        assert rows[name].simulated_bubble == pytest.approx(rows[name].formula_bubble), name
    # DualPipeV's pair runs back to back here (F&B = F + B): the README's form is an upper
    # bound, and the simulator idles (p-1) chunk forwards, as ZB-V's synchronous ends.
    assert rows["dualpipev"].simulated_bubble <= rows["dualpipev"].formula_bubble
    assert rows["dualpipev"].simulated_bubble == pytest.approx(rows["zb-v"].simulated_bubble)
    for row in rows.values():
        assert row.simulated_parameters == row.formula_parameters == 1.0  # one copy of the weights
        assert row.simulated_activations == row.formula_activations, row.schedule
    assert rows["dualpipev"].formula_activations == rows["zb-v"].formula_activations + 0.5


def test_bubble_ranks_as_the_papers_say():
    rows = {row.schedule: row for row in dualpipe_table(4, 16)}
    assert rows["1f1b"].formula_bubble == pytest.approx(3 * rows["zb-h1"].formula_bubble)  # a third
    assert rows["zb-v"].formula_bubble == pytest.approx(rows["zb-h1"].formula_bubble / 2)  # half-stage ends


def test_readme_columns_name_the_readme_s_own_units():
    rows = {row.schedule: row for row in dualpipe_table(4, 8)}
    assert rows["dualpipev"].readme == ("(PP/2-1)(F&B+B-3W)", "2x", "PP+1")
    assert rows["zb-v"].readme is None


def test_too_few_microbatches_is_one_line():
    with pytest.raises(ScheduleError) as err:
        dualpipe_table(4, 7)
    assert "m >= 2p" in str(err.value) and "\n" not in str(err.value)


def test_the_table_says_why_dualpipev_s_two_figures_differ_before_any_run():
    """Walk finding 15: "3 / 1.5" under the table with no word why; after a run the verdict says it."""
    from pipelab.app.views.extras.dualpipe_table import bound_note
    note = bound_note(dualpipe_table(4, 8))
    assert note is not None and "3 by the formula and 1.5 by the simulator, 2.0x apart" in note
    assert "upper bound" in note
    same = tuple(row for row in dualpipe_table(4, 8) if row.schedule != "dualpipev")
    assert bound_note(same) is None
