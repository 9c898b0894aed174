"""engine/schedules/stream.py and overlapped steps in the simulator: the steady bubble, as in the papers."""

import json
import statistics

import pytest

from pipelab.engine.actions import UPDATE
from pipelab.engine.cli.main import main
from pipelab.engine.results.timeline import steady_steps
from pipelab.engine.schedules import build_schedule
from pipelab.engine.schedules.stream import make_stream
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.simulate import UNIT_COSTS, CostModel, simulate_run
from pipelab.engine.theory.validate import validate


def steady_bubble(name, p=4, m=8, v=None, steps=4, overlap=True, cost=UNIT_COSTS):
    timeline = simulate_run(build_schedule(name, p, m, v), cost, steps, overlap)
    return statistics.fmean(timeline.steady_bubble_fractions(steady_steps(steps)))


#   schedule,        v,    with barriers (unit costs, p=4, m=8)   overlapping: at most
UNIT_COST_TABLE = [
    ("zb-h2",         None, 3 / 27,                                0.02),   # 0.111: the parallelogram's ends
    ("zb-v",          2,    3 / 51,                                0.02),   # 0.059
    ("pipedream",     None, 0.0,                                   0.02),   # always overlapping
    ("pipedream-2bw", None, 0.0,                                   0.02),
]


@pytest.mark.parametrize("name, v, barrier, overlapped", UNIT_COST_TABLE)
def test_overlapping_steps_remove_the_step_ends(name, v, barrier, overlapped):
    if barrier:
        assert steady_bubble(name, v=v, overlap=False) == pytest.approx(barrier, abs=1e-12)
    assert steady_bubble(name, v=v) <= overlapped


@pytest.mark.parametrize("name, v", [("1f1b", None), ("gpipe", None), ("zb-h1", None), ("interleaved", 2)])
def test_shapes_that_do_not_tile_keep_their_formula(name, v):
    # 1F1B's first device ends a step last: the last device waits for the next step's first
    # forward at every step start, so the bubble stays (p-1)/(m+p-1).
    formula = theory.formula_bubble_fraction(name, 4, 8, v or 1)
    assert steady_bubble(name, v=v) == pytest.approx(formula, abs=0.01)
    assert steady_bubble(name, v=v, overlap=False) == pytest.approx(formula, abs=1e-12)


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-v", "pipedream", "pipedream-2bw"])
def test_the_overlapped_formula_is_the_simulators_on_every_device(name):
    v = 2 if name == "zb-v" else 1
    for p in range(2, 7):
        for m in (p, 2 * p - 1, 2 * p, 3 * p):
            if name in ("zb-h2", "zb-v") and m < 2 * p - 1:
                continue  # the extra warm-up forwards need 2p-1 micro-batches (arXiv 2401.10241, sec. 2.2)
            if name == "zb-v" and m < 2 * p:
                continue  # below 2p, zb-v's held cap (1F1B's memory) leaves a gap that does not tile
            if name == "pipedream-2bw" and m % p:
                continue  # it updates every p micro-batches
            timeline = simulate_run(build_schedule(name, p, m, v), UNIT_COSTS, 4, overlap=True)
            expected = theory.formula_bubble_fraction(name, p, m, v, overlapped=True)
            assert timeline.steady_bubble_fractions([1, 2]) == pytest.approx([expected] * p, abs=1e-9), (p, m)


def test_unequal_costs_leave_zb_h2_a_bubble_the_overlap_does_not_hide():
    # T_W much smaller than T_I: the deferred W cannot fill what the I's wait for (the
    # paper's (p-1)(T_F + T_B - 2T_W) > 0), overlapping or not.
    cost = CostModel(forward=1.0, backward_input=1.5, backward_weight=0.3)
    assert steady_bubble("zb-h2", cost=cost) > 0.05


#   p, m,  T_F, T_I, T_W,  T_U   (T_W < T_I as measured on CPU: W is a bare matmul, I also runs GELU's backward)
ZB_H2_COSTS = [
    (4, 8,  1.0, 1.0, 0.8,  0.0),
    (4, 8,  1.0, 1.1, 0.85, 0.35),
    (4, 8,  1.0, 1.5, 0.3,  0.0),
    (4, 12, 1.8, 1.8, 1.45, 1.0),
    (3, 6,  2.6, 2.6, 2.3,  0.9),
    (5, 10, 1.0, 1.0, 1.2,  0.3),   # T_W > (T_F + T_I)/2: the W's fill everything
]


@pytest.mark.parametrize("p, m, t_f, t_i, t_w, t_u", ZB_H2_COSTS)
def test_overlapped_zb_h2_idles_exactly_the_papers_term_and_no_more(p, m, t_f, t_i, t_w, t_u):
    # Overlapping steps, every device's steady window idles (p-1)(T_F + T_I - 2T_W) per step
    # and nothing else (arXiv 2401.10241, section 2.2): rank r holds 2r+1 W's and its U back
    # past its last I, and they must cover r I's and r F's of the ranks before it plus rank
    # 0's last W and U. Rank 0's U is on that path, but each rank's own U covers as much, so
    # the optimizer step adds no idle: what T_W < T_I leaves is the paper's term alone.
    cost = CostModel(forward=t_f, backward_input=t_i, backward_weight=t_w, update=t_u)
    timeline = simulate_run(build_schedule("zb-h2", p, m), cost, 4, overlap=True)
    gap = theory.zb_h2_bubble_time(p, t_f, t_i, t_w)
    expected = gap / (m * (t_f + t_i + t_w) + t_u + gap)
    assert timeline.steady_bubble_fractions(steady_steps(4)) == pytest.approx([expected] * p, abs=1e-9)


#   steps  steady steps: after the first (fill), before the last (drain)
STEADY = [(1, [0]), (2, [1]), (3, [1]), (6, [1, 2, 3, 4])]


@pytest.mark.parametrize("steps, expected", STEADY)
def test_steady_steps(steps, expected):
    assert steady_steps(steps) == expected


def test_a_synchronous_stream_updates_each_stage_between_its_steps():
    schedule = build_schedule("zb-v", 4, 8, 2)
    stream = make_stream(schedule, 3)
    validate(stream.program)
    for r, program in enumerate(stream.program.actions):
        for s in schedule.stages_of(r):
            mine = [a for a in program if a.stage == s]
            for k in range(3):
                updates = [i for i, a in enumerate(mine) if a.kind == UPDATE and stream.step_of(a.microbatch) == k]
                step_work = [i for i, a in enumerate(mine) if a.kind != UPDATE and stream.step_of(a.microbatch) == k]
                later = [i for i, a in enumerate(mine) if stream.step_of(a.microbatch) > k]
                assert len(updates) == 1 and max(step_work) < updates[0] < min(later, default=len(mine))


def test_pipedreams_stream_fills_one_steps_cool_down_with_the_next_steps_forwards():
    stream = make_stream(build_schedule("pipedream", 4, 8), 2)
    program = stream.program.actions[0]
    last_of_step0 = max(i for i, a in enumerate(program) if stream.step_of(a.microbatch) == 0)
    first_of_step1 = min(i for i, a in enumerate(program) if stream.step_of(a.microbatch) == 1)
    assert first_of_step1 < last_of_step0
    assert (stream.local(9), stream.step_of(9)) == (1, 1)


def test_simulate_cli_plays_overlapped_steps(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["simulate", "--schedule", "zb-h2", "--stages", "4", "--microbatches", "8", "--steps", "4",
                 "--overlap-steps", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["metrics"]["bubble_fraction"] <= 0.02 and data["metrics"]["overlapped_steps"]
    assert {e["step"] for e in data["events"]} == {0, 1, 2, 3}
    assert main(["simulate", "--schedule", "zb-h2", "--stages", "4", "--microbatches", "8", "--steps", "4",
                 "--out", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["bubble_fraction"] == pytest.approx(3 / 27)
    assert "steady steps" in capsys.readouterr().out
