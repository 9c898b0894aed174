"""Peak held activations per device (engine/theory/held_activations.py), read off each rank's order."""

import pytest

from pipelab.engine.schedules import build_schedule
from pipelab.engine.theory.held_activations import peak_activations, schedule_peak_activations
from pipelab.engine.theory.simulate import simulate
from pipelab.engine.theory.validate import parse_schedule


def table(p_values=(2, 4, 6, 8)):
    for p in p_values:
        for m in (p, 2 * p, 4 * p):
            yield p, m


BOUNDS = [
    # schedule, what each device's peak must satisfy (full stages x micro-batches, F until B or W)
    ("zb-v",  lambda p, m, peaks: max(peaks) <= p),                    # 1F1B's rank 0 (arXiv 2401.10241, sec. 6)
    ("zb-h1", lambda p, m, peaks: max(peaks) <= p),                    # W r micro-batches late on rank r
    ("zb-h2", lambda p, m, peaks: max(peaks) <= 2 * p),                # 2p - 1 from F to W
    ("1f1b",  lambda p, m, peaks: peaks == [p - r for r in range(p)]),  # warm-up depth + 1
    ("gpipe", lambda p, m, peaks: peaks == [m] * p),                   # every forward before any backward
]


@pytest.mark.parametrize("name,holds", BOUNDS, ids=[b[0] for b in BOUNDS])
def test_peak_held_microbatches_per_device(name, holds):
    for p, m in table():
        peaks = schedule_peak_activations(build_schedule(name, p, m))
        assert holds(p, m, peaks), (p, m, peaks)


def test_dualpipev_holds_half_a_stage_more_than_zb_v():
    # The DualPipe README's PP + 1 with PP = 2p chunks of half a stage (arXiv 2412.19437).
    for p, m in table():
        if m >= 2 * p:
            assert schedule_peak_activations(build_schedule("dualpipev", p, m)) == [p + 0.5] * p


def test_zb_v_no_longer_holds_every_microbatch_until_its_w():
    # Before, p=4, m=16 ran every W after the last I: all 16 micro-batches held per device.
    assert max(schedule_peak_activations(build_schedule("zb-v", 4, 16))) == 4


@pytest.mark.parametrize("text, peak", [
    ("0F0 0F1 0I0 0I1 0W0 0W1", [2.0]),  # W keeps the inputs: both held until the W's
    ("0F0 0I0 0W0 0F1 0I1 0W1", [1.0]),  # each W right after its I: one at a time
    ("0F0 0F1 0B0 0B1",         [2.0]),  # a full backward frees at B
])
def test_held_from_forward_until_the_backward_is_complete(text, peak):
    assert schedule_peak_activations(parse_schedule(text)) == peak


def test_a_chunk_counts_one_over_v():
    interleaved = build_schedule("interleaved", 4, 8, 3)
    assert schedule_peak_activations(interleaved)[3] == pytest.approx(3.0)  # 9 chunks of a third
    assert peak_activations([[a for a in interleaved.actions[3]]], 3) == [3.0]  # exact thirds


@pytest.mark.parametrize("name, v", [("1f1b", None), ("zb-h1", None), ("zb-h2", None), ("zb-v", 2),
                                     ("interleaved", 2), ("dualpipev", 2)])
def test_the_timeline_s_order_gives_the_schedule_s_peaks(name, v):
    schedule = build_schedule(name, 4, 8, v)
    assert simulate(schedule).peak_activations() == schedule_peak_activations(schedule)


@pytest.mark.parametrize("text, share, peak", [
    # arXiv 2401.10241, Table 1: after I, only what W reads (a share of the micro-batch) stays.
    ("0F0 0F1 0I0 0I1 0W0 0W1", 1.0, [2.0]),
    ("0F0 0F1 0I0 0I1 0W0 0W1", 0.25, [2.0]),   # the peak is before the I's
    ("0F0 0I0 0F1 0F2 0I1 0I2", 0.25, [2.25]),  # two whole and one waiting for W
    ("0F0 0I0 0F1 0I1 0F2 0I2", 0.5, [2.0]),    # three W's owed at half each, the last F whole
])
def test_a_micro_batch_waiting_for_w_counts_w_s_share(text, share, peak):
    schedule = parse_schedule(text)
    assert peak_activations(schedule.actions, 1, share) == peak
