"""V-Min and V-Half (arXiv 2405.15362): the sequel's memory, its bubble, one process's gradients."""

import pytest

from pipelab.engine.actions import BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, ScheduleError
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.schedules.building_block import PERIOD, lightest_block, v_block
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.formulas import v_half_peak_activations, v_min_peak_activations
from pipelab.engine.theory.held_activations import schedule_peak_activations
from pipelab.engine.theory.simulate import simulate
from pipelab.engine.theory.validate import validate
from tests.engine_runs import measured

V_SCHEDULES = ("v-min", "v-half")

# The authors' summary table (T_F = T_B = T_W): the worst device's activations, in stages x
# micro-batches, (p + extra) // share: about p/3 and p/2 of 1F1B's p.
#   schedule   extra  share
SEQUEL = [
    ("v-min",  4,     3),
    ("v-half", 2,     2),
]


def grid(p_values=(2, 3, 4, 6, 8)):
    for p in p_values:
        for m in (1, p, 2 * p, 4 * p):
            yield p, m


@pytest.mark.parametrize("name", V_SCHEDULES)
def test_validates_and_runs_every_pass_once(name):
    for p, m in grid():
        schedule = build_schedule(name, p, m)
        validate(schedule)
        assert schedule.stage_to_rank == tuple(range(p)) + tuple(reversed(range(p)))  # zb-v's V
        for program in schedule.actions:
            assert len(program) == 6 * m  # F, I, W of two chunks per micro-batch
            assert {a.kind for a in program} == {FORWARD, BACKWARD_INPUT, BACKWARD_WEIGHT}


@pytest.mark.parametrize("name, extra, share", SEQUEL, ids=[s[0] for s in SEQUEL])
def test_holds_at_most_the_sequels_share_of_1f1bs_activations(name, extra, share):
    for p, m in grid((2, 3, 4, 5, 6, 8, 12)):
        peaks = schedule_peak_activations(build_schedule(name, p, m))
        assert max(peaks) <= min((p + extra) // share, m), (p, m, peaks)
        assert max(peaks) == theory.peak_activations(name, p, m)  # the registered closed form
        if m >= p:  # 1F1B then holds p on rank 0: the sequel's share of it, up to the rounding
            one_f_one_b = max(schedule_peak_activations(build_schedule("1f1b", p, m)))
            assert share * max(peaks) <= one_f_one_b + extra, (p, m, peaks, one_f_one_b)
    # At p = 12 the shares show: 1F1B holds 12, V-Half 7, V-Min 5.
    assert max(schedule_peak_activations(build_schedule(name, 12, 48))) <= 12 / share + 1


def test_less_memory_costs_bubble_and_v_min_holds_least():
    # Memory traded for bubble on unit costs, device 0 over one synchronous step: V-Min holds
    # least and idles most of the two, both idle less than 1F1B (two chunks halve each pass).
    for p, m in grid((4, 6, 8)):
        if m < 2 * p:
            continue
        bubble = {n: simulate(build_schedule(n, p, m)).bubble_fractions()[0] for n in ("1f1b", *V_SCHEDULES)}
        peak = {n: max(schedule_peak_activations(build_schedule(n, p, m))) for n in ("1f1b", *V_SCHEDULES)}
        assert peak["v-min"] < peak["v-half"] < peak["1f1b"], (p, m, peak)
        assert bubble["1f1b"] > bubble["v-min"] >= bubble["v-half"], (p, m, bubble)


def test_bubble_on_unit_costs_is_the_sequels():
    # The authors' bubble rates are approximations: about p/2m of the work for V-Half and
    # 2p/3m for V-Min, i.e. fractions p/(2m+p) and 2p/(3m+2p) of the step. V-Half lands
    # within 0.015 of its rate from p = 4 on (below, the block's constant slots weigh more);
    # V-Min stays under its rate: its blocks, repeated and squeezed, idle less than the
    # estimate, which rounds its warm-up up.
    for p, m in grid((4, 5, 6, 8)):
        if m < 2 * p:
            continue
        half = simulate(build_schedule("v-half", p, m)).bubble_fractions()[0]
        low = simulate(build_schedule("v-min", p, m)).bubble_fractions()[0]
        assert half == pytest.approx(p / (2 * m + p), abs=0.015), (p, m)
        assert low <= 2 * p / (3 * m + 2 * p), (p, m)


def test_zb_v_is_the_sequels_v_zb():
    # V-ZB: 1F1B's memory and no idle slot inside a device's span (arXiv 2405.15362, section 3);
    # our zb-v is that point, so it is not registered twice.
    for p, m in grid((2, 4, 6)):
        if m < 2 * p:
            continue
        timeline = simulate(build_schedule("zb-v", p, m))
        assert max(schedule_peak_activations(build_schedule("zb-v", p, m))) == p
        assert max(timeline.idle_within_own_span()) == 0


def test_blocks_never_collide_when_repeated():
    # Two passes of one device in one slot modulo T would make the repeated blocks overlap
    # (arXiv 2405.15362, section 2); and a collision is refused, not built.
    for p in range(1, 13):
        for offset in (1, 2):
            for slots in lightest_block(p, offset).slots:
                assert len({s % PERIOD for s in slots}) == PERIOD, (p, offset, slots)
    assert v_block(3, 1, (2, 4, 5)) is None  # F1 at slot 2 meets I1 on device 1


def test_a_closer_offset_means_shorter_lifespans():
    for p in (4, 8, 12):
        assert lightest_block(p, 1).peak_activations() < lightest_block(p, 2).peak_activations() < p


@pytest.mark.parametrize("name", V_SCHEDULES)
def test_exactly_two_chunks(name):
    with pytest.raises(ScheduleError, match="takes chunks 2, got 3"):  # the registry's FixedChunks(2)
        build_schedule(name, 4, 8, 3)
    with pytest.raises(ScheduleError, match="exactly 2 chunks"):  # the builder called directly
        REGISTRY[name].build(4, 8, 3)


@pytest.mark.slow
@pytest.mark.parametrize("name", V_SCHEDULES)
def test_gradients_equal_one_process(name):
    result = measured(name, 4, 8, 2, check=True)
    assert result.check.grad_max_rel_diff <= 1e-5
    assert result.check.loss == pytest.approx(result.check.reference_loss, rel=1e-5)
    assert result.check.weight_max_rel_diff <= 1e-5
    # Measured held activations are the order's (engine/theory/held_activations.py): the sequel's share.
    assert max(result.metrics.peak_held_microbatches_per_device) == theory.peak_activations(name, 4, 8)


@pytest.mark.parametrize("name, share, form", [("v-min", 1 / 3, v_min_peak_activations),
                                               ("v-half", 1 / 2, v_half_peak_activations)])
def test_the_summary_gives_the_papers_share_as_a_limit_the_table_reaches_only_at_large_p(name, share, form):
    """The recap's words said "about a third" beside its table's 2 of 1F1B's 4 at p = 4: the
    paper's share is where the count tends as p grows, and the summary says so."""
    shares = [form(p, 4 * p) / p for p in (4, 16, 256)]  # 1F1B holds p on its busiest device
    assert shares[0] - share > 0.1 and abs(shares[-1] - share) < 0.01 and shares == sorted(shares, reverse=True)
    summary = REGISTRY[name].summary
    assert "as p grows" in summary["en"] and "p 越大" in summary["zh"]
