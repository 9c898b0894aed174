"""The recap's "Which split?" verdict: its status from the pairs of steps the two splits took in
turn (pipelab.app.screens.recap.split_status)."""

from __future__ import annotations

import pytest

from pipelab.app.screens.recap import split_status
from pipelab.lessons import claims


@pytest.mark.parametrize("low, high, status", [
    (0.90, 0.97, claims.HOLDS),   # every pair put the ranked first ahead
    (0.95, 1.02, claims.NOISE),   # some pair reversed it: a tie within the noise measured in that launch
    (1.00, 1.00, claims.NOISE),   # the same step: no ranking shown either way
    (1.01, 1.08, claims.FAILS),   # every pair put the second ahead: the ranking does not hold here
])
def test_the_split_verdict_has_a_status(low, high, status):
    assert split_status(low, high) == status
