"""The simulator, on uniform costs, must reproduce every closed-form formula exactly."""

import re
from dataclasses import replace

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules import REGISTRY, build_schedule, chunks_for
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.simulate import UNIT_COSTS, CostModel, simulate


def grid(name):
    for p in range(2, 9):
        for m in range(p, 4 * p + 1):
            for v in ((1, 2) if name == "interleaved" else (None,)):
                if name in ("interleaved", "pipedream-2bw") and m % p:
                    continue
                yield p, m, v


def built_settings(name):
    """(p, m, v, schedule) for every p in 2..8, m in p..4p and each chunk count the schedule
    takes (its default, and 1 and 3 where v is a knob) that it builds; refusals (m % p, m >= 2p)
    are its constraints, tested in tests/test_schedules.py."""
    rule = REGISTRY[name].chunks
    for p in range(2, 9):
        for m in range(p, 4 * p + 1):
            for v in sorted({rule.default, rule.resolve(1), rule.resolve(3)}):
                try:
                    yield p, m, v, build_schedule(name, p, m, v)
                except ScheduleError:
                    continue


WITH_A_FORMULA = [name for name, info in REGISTRY.items() if info.theory.bubble_fraction is not None]


@pytest.mark.parametrize("name", WITH_A_FORMULA)
def test_every_bubble_formula_is_the_simulators_on_every_device(name):
    """Every schedule that registers a bubble formula, a new file's included: on unit costs the
    simulator's synchronous step shows that bubble on every device, exactly, wherever the
    schedule builds and its theory says the formula holds (``bubble_exact``); a formula
    registered as a bound (``bubble_is_bound``) is never below the simulator."""
    forms = REGISTRY[name].theory
    checked = 0
    for p, m, v, schedule in built_settings(name):
        if forms.bubble_exact is not None and not forms.bubble_exact(p, m):
            continue
        expected = theory.formula_bubble_fraction(name, p, m, v)
        bubbles = simulate(schedule).bubble_fractions()
        if forms.bubble_is_bound:
            assert max(bubbles) <= expected + 1e-12, (p, m, v)
        else:
            assert bubbles == pytest.approx([expected] * p, abs=1e-12), (p, m, v)
        checked += 1
    assert checked >= 20, f"{name}: its formula was checked at {checked} settings only"


def test_gpipe_formula_is_p_minus_1_over_m_plus_p_minus_1():
    assert theory.gpipe_bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert theory.gpipe_bubble_fraction(4, 16) < theory.gpipe_bubble_fraction(4, 8)


@pytest.mark.parametrize("name, p, m, expected", [
    ("zb-h2", 4, 8, 3 / (3 + 3 * 8)),  # (p-1) T_F of the step's ends over m x (T_F + T_I + T_W)
    ("zb-v",  4, 8, 3 / (3 + 6 * 8)),  # two chunks per device: twice the work per micro-batch
    ("zb-h2", 2, 2, 1 / (1 + 3 * 2)),
])
def test_a_synchronous_step_keeps_the_parallelograms_ends(name, p, m, expected):
    v = 2 if name == "zb-v" else 1
    assert theory.formula_bubble_fraction(name, p, m, v) == pytest.approx(expected)
    assert theory.synchronous_step_ends(p, 1.0) == p - 1


def test_zb_h2_has_no_bubble_in_steady_state():
    for p, m, _ in grid("zb-h2"):
        if m >= 2 * p - 1:  # enough warm-up forwards to fill the pipeline (arXiv 2401.10241, 2.2)
            assert simulate(build_schedule("zb-h2", p, m)).steady_bubble_fraction() == pytest.approx(0, abs=1e-12)


def test_zb_v_has_no_bubble_in_steady_state_once_m_reaches_2p():
    for p, m, _ in grid("zb-v"):
        if m >= 2 * p:
            assert simulate(build_schedule("zb-v", p, m)).steady_bubble_fraction() == pytest.approx(0, abs=1e-12)


def test_zb_h1_bubble_is_a_third_of_1f1b():
    for p, m, _ in grid("zb-h1"):
        h1 = simulate(build_schedule("zb-h1", p, m)).idle_within_own_span()[0]
        base = simulate(build_schedule("1f1b", p, m)).idle_within_own_span()[0]
        assert h1 == pytest.approx(base / 3), (p, m)


# ---- every registered schedule held to its theory -----------------------------------------------
#
# Each figure a ScheduleTheory may state, against the simulator on unit costs: what the theory
# says at (p, m, v), None where it states nothing, and what the simulated timeline shows.
FIGURES = {
    "peak_inflight":    (lambda t, p, m, v: t.peak_inflight and [t.peak_inflight(p, m, r, v) for r in range(p)],
                         lambda timeline: timeline.peak_inflight()),
    "peak_activations": (lambda t, p, m, v: t.peak_activations and [t.peak_activations(p, m)],
                         lambda timeline: [max(timeline.peak_activations())]),
    "weight_versions":  (lambda t, p, m, v: [t.weight_versions(p, r) for r in range(p)],
                         lambda timeline: timeline.weight_versions()),
}

# A figure a paper states as the limit its schedule is built under, not the value it reaches:
# held as a bound only. ScheduleTheory has no flag for it yet (bubble_is_bound is the bubble's),
# so the row names the paper the schedule cites: a copied file (new names, the same paper) is
# held the same as its original.
BOUNDS = {
    # (the schedule's paper,                              figure):           why a bound
    ("Zero Bubble, arXiv 2401.10241, section 3 (ZB-2p)", "peak_activations"): "the memory limit 2p; at unit costs "
                                                                               "it keeps ZB-H2's order, 2p - 1",
}


def pipeline_full(p: int, m: int) -> bool:
    """The papers' closed forms describe a pipeline that fills: warm-up, steady state and
    cool-down all there, m >= 2p. With fewer micro-batches a schedule may hold less than they
    say (ZB-V's V not yet full, PipeDream's stash not yet p deep), never more."""
    return m >= 2 * p


def check_theory(name: str) -> int:
    """Hold schedule ``name``'s registered theory (FIGURES) to the simulator wherever it builds
    (built_settings): each figure equals the simulator's, rank by rank, where the pipeline fills,
    and is never below it anywhere. Fails naming the figure, the schedule and the setting;
    returns how many settings it checked."""
    info, checked = REGISTRY[name], 0
    for p, m, v, schedule in built_settings(name):
        timeline = simulate(schedule)
        for figure, (stated, measured) in FIGURES.items():
            said = stated(info.theory, p, m, v)
            if not said:
                continue
            got = measured(timeline)
            where = f"{name}'s theory.{figure} at p={p}, m={m}, v={v} says {said}, the simulator {got}"
            assert all(g <= s for g, s in zip(got, said, strict=True)), where + ": below what the schedule holds"
            if pipeline_full(p, m) and (info.paper, figure) not in BOUNDS:
                assert got == said, where
        checked += 1
    return checked


@pytest.mark.parametrize("name", list(REGISTRY))
def test_its_peaks_and_weight_versions_are_the_simulators(name):
    """Every schedule in the registry, a new file's included: a wrong ``peak_inflight`` fails
    here, naming it (tests/test_schedule_contract.py registers one to prove it)."""
    assert check_theory(name) >= 20, f"{name}: its theory was checked at too few settings"


def test_a_bound_is_kept_only_for_a_paper_and_figure_that_exist():
    assert all(paper in {info.paper for info in REGISTRY.values()} and figure in FIGURES for paper, figure in BOUNDS)


MEMORY_CLAIMS = [
    # schedule,  p, m,  peak on device 0 (micro-batches of one stage's activations)
    ("gpipe",    4, 16, 16),   # grows with m
    ("1f1b",     4, 16, 4),    # p - r: flat in m
    ("zb-h1",    4, 16, 4),    # 1F1B's memory
    ("zb-h2",    4, 16, 7),    # 2p - 1
]


@pytest.mark.parametrize("name,p,m,peak", MEMORY_CLAIMS)
def test_memory_claims(name, p, m, peak):
    assert simulate(build_schedule(name, p, m)).peak_inflight()[0] == peak


def test_link_cost_and_unbalanced_stages_slow_the_step():
    s = build_schedule("1f1b", 4, 8)
    base = simulate(s, UNIT_COSTS).step_time()
    assert simulate(s, CostModel(forward=1, backward_input=1, backward_weight=1, link=0.5)).step_time() > base
    slow_last = CostModel(forward=(1, 1, 1, 2), backward=(2, 2, 2, 4))
    assert simulate(s, slow_last).step_time() > base  # the slowest stage sets the pace


def test_simulated_memory_follows_the_activation_bytes():
    t = simulate(build_schedule("gpipe", 2, 4), CostModel(activation_bytes=100))
    assert max(b for _, b in t.memory[0]) == 400


def test_a_split_backward_leaves_the_weight_gradients_inputs_until_w():
    # zb-h1, p=2, m=2, last rank: F0 I0 F1 I1 W0 W1. F keeps 100 bytes; I frees all but the
    # 40 that W still needs; W frees those.
    t = simulate(build_schedule("zb-h1", 2, 2), CostModel(activation_bytes=100, weight_grad_bytes=40))
    assert [b for _, b in t.memory[1]] == [0, 100, 40, 140, 80, 40, 0]
    b_only = simulate(build_schedule("1f1b", 2, 2), CostModel(activation_bytes=100, weight_grad_bytes=40))
    assert [b for _, b in b_only.memory[1]] == [0, 100, 0, 100, 0]  # B frees everything at once


def test_a_cost_for_one_action_overrides_its_stage_cost():
    schedule = build_schedule("gpipe", 2, 2)
    base = simulate(schedule)
    slow = simulate(schedule, CostModel(per_action={("F", 0, 0): 3.0}))
    first = next(e for e in slow.events if (e.kind, e.stage, e.microbatch) == ("F", 0, 0))
    assert (first.start, first.end) == (0.0, 3.0)
    # every other action depends on it, so the whole step moves by the 2 extra units
    assert slow.step_time() == base.step_time() + 2.0
    others = [e.end - e.start for e in slow.events if (e.kind, e.stage, e.microbatch) != ("F", 0, 0)]
    assert others == [e.end - e.start for e in base.events if (e.kind, e.stage, e.microbatch) != ("F", 0, 0)]


def test_host_time_after_an_action_takes_the_rank_but_is_not_busy():
    # gpipe, p=2, m=2, unit costs: rank 0 runs F0 F1 . . B0 B1 around rank 1's F0 F1 B0 B1.
    # Half a unit of the executor's own time after each of rank 0's actions delays its next
    # action by that much and adds to nobody's busy time.
    schedule = build_schedule("gpipe", 2, 2)
    base = simulate(schedule, UNIT_COSTS)
    host = simulate(schedule, replace(UNIT_COSTS, host_after=(0.5, 0.0)))
    starts = {(e.rank, e.kind, e.microbatch): e.start for e in host.events}
    assert starts[(0, "F", 1)] == 1.5            # F0 ends at 1, then 0.5 of host time
    assert starts[(1, "F", 1)] == 2.5            # F1 on rank 0 ends at 2.5
    assert host.busy_time() == base.busy_time()  # host time is not compute
    assert host.step_time() > base.step_time()
    # One action's own host time overrides its stage's.
    one = simulate(schedule, replace(UNIT_COSTS, per_action_host_after={("F", 0, 0): 2.0}))
    assert next(e.start for e in one.events if (e.rank, e.kind, e.microbatch) == (0, "F", 1)) == 3.0


def test_zb_v_holds_what_1f1b_s_rank_0_holds_and_keeps_no_gap_inside_each_span():
    # arXiv 2401.10241, section 6: zero bubble at 1F1B's peak memory, W counted as held.
    for p, m, _ in grid("zb-v"):
        if m >= 2 * p:
            timeline = simulate(build_schedule("zb-v", p, m))
            assert max(timeline.peak_activations()) == p
            assert timeline.steady_bubble_fraction() == pytest.approx(0, abs=1e-12)


def test_dualpipev_alive_until_i_is_the_readme_s_pp_plus_1():
    for p, m, _ in grid("dualpipev"):
        if m >= 2 * p:
            peaks = simulate(build_schedule("dualpipev", p, m)).peak_inflight()
            assert peaks == [theory.peak_inflight("dualpipev", p, m, r, 2) for r in range(p)] == [2 * p + 1] * p


def test_dualpipev_readme_bubble():
    # (PP/2-1)(F&B+B-3W), PP = 2p stages; the pair back to back here: F&B = F + B.
    assert theory.dualpipev_bubble_time(4, 1, 1, 1) == 3 * (3 + 2 - 3)
    assert theory.dualpipev_bubble_time(4, 1, 1, 1, t_fb=2) == 3 * (2 + 2 - 3)  # overlapped pair
    assert theory.formula_bubble_fraction("dualpipev", 4, 8, 2) == pytest.approx(6 / (6 + 8 * 2 * 3))


COSTS = [(1, 1, 1), (2, 1, 1), (1, 2, 1), (1, 1, 2), (1, 1, 0.5), (1, 3, 1)]


@pytest.mark.parametrize("t_f, t_i, t_w", COSTS)
def test_dualpipev_stays_under_the_readme_bubble(t_f, t_i, t_w):
    cost = CostModel(forward=t_f, backward_input=t_i, backward_weight=t_w)
    for p, m, _ in grid("dualpipev"):
        if m >= 2 * p:
            timeline = simulate(build_schedule("dualpipev", p, m), cost)
            idle = max(timeline.step_time() - busy for busy in timeline.busy_time())
            assert idle <= theory.dualpipev_bubble_time(p, t_f, t_i, t_w) + 1e-9, (p, m)


def test_dualpipev_on_unit_costs_idles_the_synchronous_ends():
    # Every device idles (p-1) chunk forwards of the step, as ZB-V: half the README's bound.
    for p, m, _ in grid("dualpipev"):
        if m >= 2 * p:
            timeline = simulate(build_schedule("dualpipev", p, m))
            idle = [timeline.step_time() - busy for busy in timeline.busy_time()]
            assert idle == pytest.approx([theory.synchronous_step_ends(p, 1.0)] * p)
            assert theory.dualpipev_bubble_time(p, 1, 1, 1) == 2 * (p - 1)


@pytest.mark.parametrize("name", [name for name, info in REGISTRY.items() if info.theory.bubble_text])
def test_the_registered_formula_text_is_the_formula_at_unit_costs(name):
    # The plain text each schedule registers, evaluated, is its bubble function at T_F = T_I = T_W:
    # every schedule that registers one, so a new schedule's text is checked with no edit here.
    text = theory.schedule_theory(name).bubble_text
    for p, m in ((2, 4), (4, 8), (8, 16)):
        v = chunks_for(name, 2)
        expected = theory.formula_bubble_fraction(name, p, m, v)
        python = re.sub(r"(?<=[0-9a-z)])(?=[a-z(])", "*", text)  # 3m -> 3*m, vm -> v*m
        assert eval(python, {}, {"p": p, "m": m, "v": v}) == pytest.approx(expected), (p, m, python)


def latex_as_python(latex: str) -> str:
    r"""A lesson's one-line LaTeX as Python: \min(2(p - r) - 1,\ m) -> min(2*(p - r) - 1, m)."""
    text = latex.replace(r"\ ", " ").replace(r"\min", "MIN")
    return re.sub(r"(?<=[0-9a-z)])(?=[a-z(])", "*", text).replace("MIN", "min")


@pytest.mark.parametrize("name", [name for name, info in REGISTRY.items() if info.theory.peak_inflight_latex])
def test_the_peak_a_lesson_shows_is_the_registered_peak(name):
    """The peak's text a lesson shows (lessons/*/questions.py read it from the theory, never from
    the schedule's name), evaluated, is the registered ``peak_inflight`` on every rank."""
    forms = REGISTRY[name].theory
    python = latex_as_python(forms.peak_inflight_latex)
    for p in range(2, 7):
        for m in range(p, 3 * p + 1):
            v = chunks_for(name, 2)
            for r in range(p):
                said = eval(python, {}, {"p": p, "m": m, "r": r, "v": v})
                assert said == forms.peak_inflight(p, m, r, v), (name, p, m, r, python)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_the_weight_versions_a_lesson_shows_are_the_registered_ones(name):
    forms = REGISTRY[name].theory
    python = latex_as_python(forms.weight_versions_latex)
    for p in range(2, 9):
        for r in range(p):
            assert eval(python, {}, {"p": p, "r": r}) == forms.weight_versions(p, r), (name, p, r, python)
