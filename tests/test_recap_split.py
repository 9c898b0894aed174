"""The recap's "Which split?" verdict: its status from the first split's median step over the
second's, judged by the chooser's stated band (pipelab.app.screens.recap.split_status)."""

from __future__ import annotations

import pytest

from pipelab.app.screens.recap import split_status
from pipelab.lessons import claims


@pytest.mark.parametrize("ratio, status", [
    (0.93, claims.HOLDS),   # the ranked first's step 7 % shorter: past the 3 % band
    (0.98, claims.NOISE),   # within 3 % of the longer step: a tie
    (1.00, claims.NOISE),   # the same step: no ranking shown either way
    (1.03, claims.NOISE),   # 3 % of the longer step, at the band's edge
    (1.05, claims.FAILS),   # the second's step 5 % shorter: the ranking does not hold here
])
def test_the_split_verdict_has_a_status_by_the_stated_band(ratio, status):
    assert split_status(ratio) == status
