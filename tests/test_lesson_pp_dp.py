"""Lesson 7, pipelines side by side (lessons/pp_dp): its check judges each layout's step, bubble
and exposed all-reduce against theory at the runs' own costs, and its real comparison shows
the claim with a margin this host's noise cannot reach (the tight figures are bench/clicks.py's)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from pipelab.engine.results.data_parallel import DataParallelFigures
from pipelab.engine.results.metrics import StageCosts
from pipelab.lessons import claims, get_lesson
from pipelab.lessons.verdict import COMPARISON, FAILS, HOLDS, NOISE, UNTESTED
from tests.fake_results import fake_memory, fake_metrics

LESSON = get_lesson("pp-dp")


def fake(stages, replicas, reduce_at="backward", step=0.060, simulated_step=0.060, exposed=(0.004, 0.0),
         simulated_exposed=(0.004, 0.0), bubble=0.27, simulated_bubble=0.27, breakdown=None, reduce_cost=0.004):
    """A finished run of one layout, all its figures given (``reduce_cost``: each stage's all-reduce
    as its set-up timed it)."""
    metrics = fake_metrics(stages, breakdown, device_bubble_fraction=bubble, simulated_bubble_fraction=simulated_bubble,
                           formula_bubble_fraction=(stages - 1) / (8 // replicas + stages - 1),
                           device_step_time_s=step, simulated_step_time_s=simulated_step,
                           costs_s=StageCosts(*((0.004,) * stages,) * 4))
    memory = {r: fake_memory(parameter_bytes=(16 << 20) // stages) for r in range(stages)}
    data_parallel = None if replicas == 1 else DataParallelFigures(
        replicas, reduce_at, (), (reduce_cost,) * stages, exposed[:stages], exposed[:stages],
        simulated_exposed[:stages], step, ())
    return NS(schedule=NS(name="1f1b", num_ranks=stages, num_microbatches=8 // replicas, chunks=1, is_async=False),
              config=NS(stages=stages, data_parallel=replicas, reduce_at=reduce_at, microbatch_size=64, steps=5),
              metrics=metrics, memory=memory, data_parallel=data_parallel)


def entries(**changed):
    """The page's four layouts; ``changed`` replaces one of them by name."""
    runs = {"pipeline": fake(4, 1), "backward": fake(2, 2, step=0.057, simulated_step=0.057),
            "flush": fake(2, 2, "flush", step=0.058, simulated_step=0.058, exposed=(0.004, 0.004),
                          simulated_exposed=(0.004, 0.004)),
            "replicas": fake(1, 4, step=0.055, simulated_step=0.055, exposed=(0.012,), simulated_exposed=(0.012,))}
    runs.update(changed)
    return [(name, result) for name, result in runs.items()]


def judged(runs, lang="en"):
    return claims.verdict("pp-dp", LESSON.claim, COMPARISON, runs, lang=lang)


@pytest.mark.parametrize("changed, status", [
    # what one layout measured instead                                              the verdict
    ({},                                                                             HOLDS),
    # a stage's exposed all-reduce 0.05 of the step from the simulator's: past 0.02 and its noise
    ({"backward": fake(2, 2, step=0.057, simulated_step=0.057, exposed=(0.004 + 0.05 * 0.057, 0.0))}, FAILS),
    # 0.025 of the step off: past the limit, within its noise band
    ({"backward": fake(2, 2, step=0.057, simulated_step=0.057, exposed=(0.004 + 0.025 * 0.057, 0.0))}, NOISE),
    # plain data parallelism's step 0.2 from theory's ratio
    ({"replicas": fake(1, 4, step=0.067, simulated_step=0.055, exposed=(0.012,), simulated_exposed=(0.012,))}, FAILS),
    # one bubble 0.2 from the simulator's
    ({"pipeline": fake(4, 1, bubble=0.47)},                                          FAILS),
])
def test_the_check_judges_steps_bubbles_and_each_stages_exposed_reduce(changed, status):
    verdict = judged(entries(**changed))
    assert verdict.status == status, verdict.reason
    assert "The claim allows 0.02 of the step" in verdict.reason
    if status == NOISE:
        assert "within the noise band of 0.010" in verdict.reason


BREAKDOWN = [("simulator: every stage at the run's mean costs", 0.28), ("+ each stage's own costs", 0.30),
             ("+ message latency", 0.38), ("+ the engine's own time between actions", 0.40)]


@pytest.mark.parametrize("lang, says", [
    ("en", "Why the bubble of p = 4, d = 1 is not the formula's: from the formula's 0.273"),
    ("zh", "p = 4，d = 1 的气泡为何不同于公式：从公式的 0.273"),
])
def test_a_bubble_past_the_tolerance_from_its_formula_is_named_though_the_claim_holds(lang, says):
    # 0.40 measured and simulated (the claim holds), the formula's 3/11 = 0.273: 0.127 apart.
    far = fake(4, 1, bubble=0.40, simulated_bubble=0.40, breakdown=BREAKDOWN)
    verdict = judged(entries(pipeline=far), lang)
    assert verdict.status == HOLDS
    assert says in verdict.reason
    assert judged(entries(), lang).reason.count(says) == 0  # no breakdown, no gap past it: nothing named


def flush_at(step, reduce_cost=0.004):
    """The flush's run at ``step`` (after the backward: 0.057), its all-reduce timed ``reduce_cost`` at set-up."""
    return fake(2, 2, "flush", step=step, simulated_step=step, exposed=(0.004, 0.004), simulated_exposed=(0.004, 0.004),
                reduce_cost=reduce_cost)


def test_a_flush_that_alone_fails_names_its_own_gap_not_a_bubble_breakdown():
    # The breakdown's "Why:" explains a bubble or a step off its simulator; the flush's sentence names its own gap.
    runs = entries(flush=flush_at(0.0520, reduce_cost=0.003), pipeline=fake(4, 1, breakdown=BREAKDOWN))
    verdict = judged(runs)
    assert verdict.status == FAILS
    assert "The gap is the two runs' own costs" in verdict.reason and "Why: " not in verdict.reason


@pytest.mark.parametrize("flush, status, band, gap", [
    # the flush's step (after the backward: 0.057)  the verdict  its miss within the band      the gap named
    (flush_at(0.058),                               HOLDS,       None,                         False),
    (flush_at(0.057),                               HOLDS,       None,                         False),
    # 0.991x: a tie within the 3 % two runs of one setting move, not a shorter step
    (flush_at(0.0565),                              HOLDS,       None,                         False),
    # 0.958x, as a student walk read it: 0.012 below 0.970, within the 0.05 allowed as noise
    (flush_at(0.0546, reduce_cost=0.003),           NOISE,       "limit of 0.970 by 0.012",    True),
    # 0.912x: past the band
    (flush_at(0.0520, reduce_cost=0.003),           FAILS,       None,                         True),
    # 1.132x where theory at one set of costs says 1.000x: 0.13 from it, within the 0.05 beyond 0.10
    (flush_at(0.0645),                              NOISE,       "limit of 0.10 by 0.03",      True),
])
def test_the_flush_is_judged_never_shorter_than_after_the_backward(flush, status, band, gap):
    verdict = judged(entries(flush=flush))
    row = next(r for r in verdict.rows if r.quantity == "step time, at the flush ÷ after its last backward")
    assert row.simulated >= 1  # theory at one set of costs: the flush is never shorter
    assert verdict.status == status, verdict.reason
    assert ("where the claim needs at least 0.970 (1.000 less the 3% within which two runs of one setting tie) "
            "and within 0.10 of theory at one set of costs") in verdict.reason
    assert (band is not None) == ("within the noise band of 0.05" in verdict.reason)
    if band:
        assert band in verdict.reason
    # Past either limit, the gap is named: each run's own set-up timing of its all-reduce, and theory at those.
    assert gap == ("The gap is the two runs' own costs" in verdict.reason)
    if gap:
        timed = f"stage 0: {flush.data_parallel.reduce_cost_s[0] * 1e3:.1f} ms at the flush, 4.0 ms after the backward"
        assert timed in verdict.reason


def test_a_bubble_off_its_formula_within_the_tolerance_is_listed_with_it():
    # 0.304 against 3/11 = 0.273, as a student walk read p = 4, d = 1: within 0.05, so not broken down.
    verdict = judged(entries(pipeline=fake(4, 1, bubble=0.304, simulated_bubble=0.30)))
    assert verdict.status == HOLDS
    assert ("Bubbles within the 0.05 this lesson allows from their formula, not broken down here: "
            "p = 4, d = 1 measured 0.304 against the formula's 0.273.") in verdict.reason
    zh = judged(entries(pipeline=fake(4, 1, bubble=0.304, simulated_bubble=0.30)), "zh").reason
    assert "p = 4，d = 1 实测 0.304，公式 0.273" in zh
    assert "not broken down" not in judged(entries(pipeline=fake(4, 1, bubble=3 / 11))).reason


def test_the_flushs_bubble_is_named_in_a_sentence_that_reads():
    far = fake(2, 2, "flush", step=0.058, simulated_step=0.058, exposed=(0.004, 0.004),
               simulated_exposed=(0.004, 0.004), bubble=0.40, simulated_bubble=0.40, breakdown=BREAKDOWN)
    reason = judged(entries(flush=far)).reason
    assert "Why the bubble of p = 2, d = 2, all-reduce at the flush is not the formula's" in reason
    assert "flush's bubble" not in reason


def test_every_run_label_starts_with_the_layout_the_rows_name():
    from pipelab.lessons.i18n.run_label import RunLabel
    verdict = judged(entries())
    for lang, this, sep in (("en", "p = 4, d = 1: 1 pipeline of 4 stages", ": "),
                            ("zh", "p = 4，d = 1：1 条 4 阶段流水线", "：")):
        assert RunLabel.this_lesson("pp-dp", "1f1b").text(lang) == this
        for index, layout in enumerate(("p = 2, d = 2", "p = 2, d = 2", "p = 1, d = 4")):
            said = layout if lang == "en" else layout.replace(", ", "，")
            assert RunLabel.comparison("pp-dp", index).text(lang).startswith(said + sep)
    assert "bubble, p = 4, d = 1" in [r.quantity for r in verdict.rows]
    assert RunLabel.own_run("gpipe") is None  # a lesson without its own name for its run
    assert RunLabel.this_lesson("gpipe", "gpipe").text("en") == "this lesson (GPipe)"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_self_check_names_the_global_batch_b_as_the_claim_does(lang):
    from pipelab.lessons.i18n import lesson_claim, text
    check = next(c for c in LESSON.checks if c.id == "pp-dp.bubble")
    prompt = text(lang, "check.pp-dp.bubble.prompt", **check.settings)
    assert "B = 16" in prompt and "b = " not in prompt
    for said in ("right", "wrong"):
        assert "m = B/d" in text(lang, f"check.pp-dp.bubble.{said}", answer="0.273")
    assert "m = B/d" in lesson_claim(LESSON, lang)


def test_every_row_names_its_layout_and_the_table_reads_one_figure_per_quantity():
    verdict = judged(entries())
    quantities = [row.quantity for row in verdict.rows]
    assert len(quantities) == len(set(quantities))  # no two rows for one quantity
    assert "bubble, p = 2, d = 2, all-reduce at the flush" in quantities
    assert "exposed all-reduce, stage 1, after its last backward (share of the step)" in quantities
    exposed = next(r for r in verdict.rows if r.quantity.startswith("exposed all-reduce, stage 0, after"))
    assert exposed.measured == pytest.approx(0.004 / 0.057) and exposed.simulated == pytest.approx(0.004 / 0.057)
    # The reason quotes the rows' figures with the table's three decimals: at two, a table's 0.165
    # and 0.165 (measured, simulator) read 0.16 against 0.17 in the sentence.
    assert f"{exposed.measured:.3f} / 0.000 of the step exposed" in verdict.reason
    model = {r.quantity: r.measured for r in verdict.rows if r.unit == "MiB"}
    assert model == {"parameters per device, p = 4, d = 1": 4.0, "parameters per device, p = 2, d = 2": 8.0,
                     "parameters per device, p = 1, d = 4": 16.0}


def test_the_chinese_verdict_says_the_same_figures():
    en, zh = judged(entries()), judged(entries(), "zh")
    assert en.status == zh.status == HOLDS
    assert [r.measured for r in en.rows] == [r.measured for r in zh.rows]
    assert f"{en.rows[0].measured:.3f} 倍" in zh.reason and f"{en.rows[0].measured:.3f}x" in en.reason


def test_one_layout_missing_is_not_a_verdict():
    runs = [pair for pair in entries() if pair[0] != "flush"]
    assert judged(runs).status == UNTESTED


@pytest.mark.slow
def test_the_lessons_comparison_shows_the_trade_off_and_the_hidden_reduce():
    """The page's Run, as its runner starts it: four layouts of 4 processes in one launch."""
    from pipelab.app.runner.runs import knobs_to_config
    from pipelab.engine.runtime.paired import SideBySideRequest, run_request
    items = [("this", knobs_to_config(LESSON.defaults))]
    items += [(label, knobs_to_config(k)) for label, k in LESSON.comparison_knobs()]
    shown = run_request(SideBySideRequest(tuple(c for _, c in items))).shown(LESSON.headline)
    results = dict(zip(("pipeline", "backward", "flush", "replicas"), shown))
    for result in shown:  # every layout trains what one process trains on the global batch
        assert result.check.grad_max_rel_diff <= 1e-5
    # Wide margins: the all-reduce after the last backward hides on the last stage (theory: all of it)
    # and shows on stage 0 (theory: all of it); at the flush it shows on both.
    after = results["backward"].data_parallel
    assert after.exposed_reduce_s[1] <= 0.5 * after.reduce_cost_s[1]
    assert after.exposed_reduce_s[0] >= 0.5 * after.reduce_cost_s[0]
    flush = results["flush"].data_parallel
    assert min(e / c for e, c in zip(flush.exposed_reduce_s, flush.reduce_cost_s)) >= 0.5
    # Plain data parallelism has no pipeline bubble: its idle share is the all-reduce's (within 0.1).
    replicas = results["replicas"]
    assert replicas.metrics.device_bubble_fraction <= replicas.data_parallel.exposed_fraction()[0] + 0.10
    verdict = claims.verdict("pp-dp", LESSON.claim, COMPARISON, list(zip(("a", "b", "c", "d"), shown)))
    assert verdict.status != UNTESTED and len(verdict.rows) == 14


@pytest.mark.parametrize("exposed, said", [
    ((0.010, 0.0045), True),    # stage 1 left 0.079 of the step exposed: the claim's hiding did not happen
    ((0.004, 0.0), False),      # stage 1 hidden, as the claim says
])
def test_a_later_stage_s_exposed_all_reduce_is_said_though_it_matches_the_simulator(exposed, said):
    """The walk (issue 47): lesson 7 read "holds" beside stage 1's 0.077 exposed after its last
    backward (its simulator said 0.074), while the claim says only stage 0's is exposed."""
    backward = fake(2, 2, step=0.057, simulated_step=0.057, exposed=exposed, simulated_exposed=exposed,
                    reduce_cost=0.012)
    verdict = judged(entries(backward=backward))
    assert ("In this run stage 1's all-reduce was not hidden either (0.079 of the step exposed" in verdict.reason) \
        is said, verdict.reason
    zh = judged(entries(backward=backward), lang="zh").reason
    assert ("阶段 1 的全归约也没有藏住" in zh) is said
