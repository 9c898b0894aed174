"""Lesson 3's section "split or replicate" (lessons/split_or_replicate.py, app/views/extras/split_or_replicate.py,
engine/runtime/planned_runs.py): its verdict, rows and answers on small fakes, its texts in both languages, and
the request it queues. Nothing here starts a process (tests/test_planned_runs.py runs the request for real)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from types import SimpleNamespace

import pytest

from pipelab.engine.config import Limits, RunConfig, settings_error
from pipelab.engine.runtime.planned_runs import (
    CHOSEN,
    REPLICATED,
    STRAIGHT,
    PlannedOutcome,
    PlannedRequest,
    distinct_runs,
    run_planned,
)
from pipelab.engine.runtime.rank_processes import Cancelled
from pipelab.engine.theory.planner import LayerProfile, Link, plan, replicated_plan, straight_pipeline
from pipelab.lessons import get_lesson, i18n
from pipelab.lessons import split_or_replicate as split
from pipelab.lessons.verdict import FAILS, HOLDS, NOISE
from tests.test_chinese_text import latin_words


@dataclass(frozen=True)
class FakePlan:
    config: str
    stage_layers: tuple[int, ...]
    step_s: float
    microbatches: int = 8

    @property
    def throughput(self) -> float:
        return self.microbatches / self.step_s


def fake_run(step_s: float, microbatches: int = 8):
    """A run of one launch of its own: its step, median over its steps, on the device clock."""
    return SimpleNamespace(config=SimpleNamespace(microbatches=microbatches),
                           metrics=SimpleNamespace(device_step_time_s=step_s, launch_id=None))


STRAIGHT_PLAN = FakePlan("1-1-1-1", (1, 3, 3, 2), 0.072)
REPLICATED_PLAN = FakePlan("2-1-1", (3, 3, 3), 0.054)   # the planner: 1.33x the straight pipeline's throughput
EVEN_PLAN = FakePlan("2-1-1", (3, 3, 3), 0.071)         # within 5 %: about even
SLOW_PLAN = FakePlan("2-1-1", (3, 3, 3), 0.090)         # the straight pipeline faster

# planned 2-1-1    straight step  replicated step  status  (the measured ratio: straight step / replicated step)
VERDICTS = [
    (REPLICATED_PLAN, 0.072,        0.060,           HOLDS),  # 1.20 > 1
    (REPLICATED_PLAN, 0.072,        0.0717,          NOISE),  # 1.004 prints 1.00: never "holds" beside it
    (REPLICATED_PLAN, 0.072,        0.075,           NOISE),  # 0.96: within the 0.10 band
    (REPLICATED_PLAN, 0.072,        0.090,           FAILS),  # 0.80
    (SLOW_PLAN,       0.072,        0.090,           HOLDS),  # the straight one faster, as predicted
    (SLOW_PLAN,       0.072,        0.060,           FAILS),
    (EVEN_PLAN,       0.072,        0.070,           HOLDS),  # 1.03: within RATIO_TOLERANCE
    (EVEN_PLAN,       0.072,        0.055,           FAILS),  # 1.31
]


@pytest.mark.parametrize("planned, straight_step, replicated_step, status", VERDICTS)
def test_the_verdict_judges_the_planners_ranking_by_the_measured_throughputs(planned, straight_step,
                                                                             replicated_step, status):
    verdict = split.verdict((STRAIGHT_PLAN, planned), (fake_run(straight_step), fake_run(replicated_step)))
    assert verdict.status == status
    assert verdict.ratio[0] == pytest.approx(straight_step / replicated_step)
    assert verdict.predicted == pytest.approx(planned.throughput / STRAIGHT_PLAN.throughput)
    assert f"{verdict.ratio[0]:.2f}x" in verdict.text and "device clock" in verdict.text
    assert ("noise band of 0.10 " in verdict.text) == (status == NOISE)  # the band it allowed, where it used it


def test_the_verdict_says_both_throughputs_and_the_planners_ratio_in_one_sentence():
    text = split.verdict((STRAIGHT_PLAN, REPLICATED_PLAN), (fake_run(0.072), fake_run(0.060))).text
    assert text == ("Replicating the heavy stage wins, as the planner predicted: 2-1-1 ran 1.20x the "
                    "throughput of the straight pipeline 1-1-1-1 (133 against 111 micro-batches per second, device "
                    "clock; the planner said 1.33x)")


def test_runs_that_took_turns_give_the_median_over_pairs_of_steps_and_its_spread():
    def took_turns(steps):
        run = SimpleNamespace(config=SimpleNamespace(microbatches=8),
                              metrics=SimpleNamespace(device_step_time_s=sorted(steps)[1], launch_id="one",
                                                      device_step_times_s=tuple(steps)))
        run.at_step = lambda k: fake_run(steps[k])
        return run
    ratio = split.throughput_ratio(took_turns([0.072, 0.070, 0.074]), took_turns([0.060, 0.064, 0.061]))
    pairs = sorted([0.072 / 0.060, 0.070 / 0.064, 0.074 / 0.061])
    assert ratio == pytest.approx((pairs[1], pairs[0], pairs[2]))


@pytest.mark.parametrize("ratio, faster", [(1.2, split.FASTER_REPLICATED), (0.8, split.FASTER_STRAIGHT),
                                           (1.004, None), (0.996, None), (1.006, split.FASTER_REPLICATED)])
def test_the_cards_answer_is_the_faster_one_as_printed(ratio, faster):
    assert split.faster(ratio) == faster


@pytest.mark.parametrize("predicted, ratio, right", [("replicated", 1.2, True), ("straight", 1.2, False),
                                                     ("straight", 0.9, True), ("replicated", 1.001, None)])
def test_the_prediction_card_says_right_wrong_or_a_tie(predicted, ratio, right):
    got, said = split.prediction_feedback(predicted, ratio, "en")
    assert got is right
    assert f"{ratio:.2f}x" in said


def test_the_table_has_a_row_per_run_and_names_every_plan_it_plays():
    chosen = REPLICATED_PLAN  # the planner chose 2-1-1: one run plays two plans
    rows = split.table_rows((STRAIGHT_PLAN, REPLICATED_PLAN, chosen), (0, 1, 1), (fake_run(0.072), fake_run(0.064)))
    assert [(r["configuration"], r["workers per stage"], r["layers per stage"]) for r in rows] == [
        ("straight pipeline", "1-1-1-1", "1-3-3-2"),
        ("replicated, the planner's choice", "2-1-1", "3-3-3")]
    assert rows[1]["micro-batches/s (planner)"] == pytest.approx(148.1, abs=0.1)
    assert rows[1]["micro-batches/s (device)"] == 125.0 and rows[1]["measured against planner"] == "-16%"


def test_the_planner_line_names_its_choice_the_link_and_the_clock():
    line = split.planner_line((STRAIGHT_PLAN, REPLICATED_PLAN, FakePlan("4", (9,), 0.05)), (fake_run(0.07),
                              fake_run(0.06), fake_run(0.065)), (0, 1, 2), Link(3.4e9, 97e-6))
    assert "chose 4, the whole model on every worker (plain data parallelism), layers per stage 9" in line
    assert "predicted 160" in line and "it ran 123, -23% off its prediction (its row in the table above)" in line
    assert "3.40 GB/s and 97 µs per hop" in line and "device clock" in line
    # 2-1-1 ran 133 micro-batches per second against the choice's 123: said (the walk found it unsaid).
    assert "On this host 2-1-1 ran faster than the planner's choice (133 against 123 micro-batches per second)" in line
    fastest = split.planner_line((STRAIGHT_PLAN, REPLICATED_PLAN, FakePlan("4", (9,), 0.05)), (fake_run(0.07),
                                 fake_run(0.06), fake_run(0.059)), (0, 1, 2), Link(3.4e9, 97e-6))
    assert "ran faster than the planner's choice" not in fastest


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_text_of_the_section_is_in_both_languages(lang):
    catalog = i18n.catalog(lang)
    wanted = [f"extras.split_{name}" for name in ("button", "button_help", "setup", "predict", "change", "end",
                                                  "planner", "timelines", "question", "ratio")]
    wanted += [f"extras.split_said.{e}.{h}" for e in ("replicated", "straight", "even") for h in ("holds", "not")]
    wanted += [f"extras.split_{kind}.{option}" for kind in ("option", "short") for option in ("straight",
                                                                                               "replicated")]
    wanted += [f"extras.split_role.{role}" for role in split.ROLES]
    wanted += [f"extras.split_question_option.{o}" for o in split.QUESTION_OPTIONS]
    wanted += ["extras.split_question.right", "extras.split_question.wrong", "extras.split_feedback.tie"]
    wanted += ["extras.pipedream.split_header", "extras.pipedream.split_intro"]
    assert [key for key in wanted if key not in catalog] == []


def test_the_chinese_verdict_and_table_read_as_chinese():
    verdict = split.verdict((STRAIGHT_PLAN, REPLICATED_PLAN), (fake_run(0.072), fake_run(0.075)), "zh")
    assert verdict.status == NOISE and "设备时钟" in verdict.text and "噪声带" in verdict.text
    assert latin_words(verdict.text) == []
    rows = split.table_rows((STRAIGHT_PLAN, REPLICATED_PLAN, STRAIGHT_PLAN), (0, 1, 0),
                            (fake_run(0.072), fake_run(0.064)), "zh")
    assert list(rows[0])[:3] == ["配置", "每阶段工作进程数", "每阶段层数"]
    assert rows[0]["配置"] == "直通流水线，规划器的选择"


@pytest.mark.parametrize("line, zh", [("running: profiling each layer", "运行中：逐层测量耗时"),
                                      ("running: measuring the link", "运行中：测量链路")])
def test_the_planning_progress_is_said_in_chinese(line, zh):
    assert i18n.progress_text("zh", line) == zh


LAYERS = (LayerProfile(8e-3, 4096, 8_000_000),) + (LayerProfile(1e-3, 4096, 1_000_000),) * 8
LINK = Link(3e9, 1e-4)


def test_plans_run_once_each_where_the_planner_chose_one_of_the_other_two():
    model = RunConfig(schedule="1f1b", stages=1, microbatches=1, model="wide-first", layers=9)
    straight, replicated = straight_pipeline(LAYERS, 4, 8, LINK), replicated_plan(LAYERS, (2, 1, 1), 8, LINK)
    configs, ran = distinct_runs((straight, replicated, replicated), model)
    assert ran == (0, 1, 1) and len(configs) == 2
    assert configs[1].replicas == (2, 1, 1) and configs[1].stage_layers == replicated.stage_layers
    assert configs[0].replicas is None and configs[0].stages == 4 and configs[0].microbatches == 8
    configs, ran = distinct_runs((straight, replicated, plan(LAYERS, 4, 8, LINK)), model)
    assert ran[CHOSEN] in (STRAIGHT, REPLICATED, 2) and len(configs) == max(ran) + 1


def test_the_sections_request_is_checked_as_a_run_before_it_is_queued():
    from pipelab.app.views.extras.split_or_replicate import check_items, planned_request
    request = planned_request()
    items = check_items(request)
    assert [label for label, _ in items] == ["1-1-1-1", "2-1-1"]
    assert all(settings_error(config) is None for _, config in items)
    assert all(config.layout.world == 4 for _, config in items)  # one launch: the same four workers
    from pipelab.app.runner.cluster import ranks_of
    assert ranks_of(request) == 4  # on a Ray cluster, a node with four cores
    small = replace(Limits(), max_stages=3)  # a server that allows fewer workers: one line, naming the limit
    errors = [settings_error(config, small) for _, config in items]
    assert errors[0] is not None and "\n" not in str(errors[0])


def test_a_cancelled_request_ends_before_anything_starts():
    cancel = threading.Event()
    cancel.set()
    request = PlannedRequest(RunConfig(schedule="1f1b", stages=1, microbatches=1, model="wide-first", layers=9), 4, 8,
                             (2, 1, 1))
    with pytest.raises(Cancelled):
        run_planned(request, cancel=cancel)


def test_the_pipedream_lesson_shows_the_section_and_clicks_presses_it():
    from bench.clicks import EXTRA_BUTTONS, SECONDS, buttons
    from pipelab.app.views.extras import PLACES, SECTION
    assert "split_or_replicate" in [extra.kind for extra in get_lesson("pipedream").extras]
    assert PLACES["split_or_replicate"][0] == SECTION
    assert EXTRA_BUTTONS["split_or_replicate"] in [b.button for b in buttons(["pipedream"])]
    assert SECONDS[EXTRA_BUTTONS["split_or_replicate"]] == 15.0


def test_an_outcome_finds_each_plans_run_and_counts_the_planning_in_its_time():
    straight, replicated = fake_run(0.07), fake_run(0.06)
    straight.metrics.run_seconds, replicated.metrics.run_seconds = 4.0, 4.0  # each run's share of the launch
    outcome = PlannedOutcome(((straight, replicated),), plans=("s", "r", "r"), ran=(0, 1, 1), planning_seconds=3.0)
    assert [outcome.run_of(i) for i in (STRAIGHT, REPLICATED, CHOSEN)] == [straight, replicated, replicated]
    assert outcome.run_seconds == 11.0  # what the queue's wait estimate counts
