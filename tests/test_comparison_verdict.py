"""Every comparison ends in a verdict (issue 26, item 2): lesson 6's "Run all four" and the
recap's chooser name the winner, by how much, against theory, and why when they differ; on
fixed fake results, in both languages."""

from __future__ import annotations

import re

import pytest

from pipelab.lessons import i18n
from pipelab.lessons.comparison_verdict import chooser_verdict, four_way_verdict, worst_idle_ms
from pipelab.lessons.verdict import FAILS, HOLDS
from pipelab.lessons.verdict import NOISE as WITHIN_NOISE
from tests.fake_results import fake_metrics

LATENCY = (("simulator: every stage at the run's mean costs", 0.10), ("+ message latency", 0.25))
"""A breakdown whose largest measured effect is the link's latency (+0.15)."""


def run(idle_ms: float, step_ms: float = 100.0, p: int = 4, breakdown=LATENCY):
    """A run whose most idle device idles ``idle_ms`` of a ``step_ms`` step (device clock)."""
    share = idle_ms / step_ms
    return fake_metrics(p, breakdown=breakdown, device_bubble_fraction=share, formula_bubble_fraction=0.10,
                        device_bubble_fraction_per_device=(share,) + (share / 2,) * (p - 1),
                        device_step_time_s=step_ms / 1e3)


THEORY = {"1f1b": 30.0, "zb-h1": 10.0, "zb-v": 5.0, "dualpipev": 10.0}
"""Idle ms per step from the formulas at the runs' costs: ZB-V first."""


def test_worst_idle_is_the_most_idle_device_on_the_device_clock():
    assert worst_idle_ms(run(20.0, 80.0)) == pytest.approx(20.0)


def test_four_way_names_the_winner_by_how_much_and_agrees_with_theory():
    measured = {"1f1b": run(33.0), "zb-h1": run(22.6), "zb-v": run(8.0), "dualpipev": run(32.0)}
    verdict = four_way_verdict(measured, THEORY)
    assert verdict.winner == "zb-v" and verdict.status == HOLDS
    assert verdict.sentences[0] == ("ZB-V idles least, 8.0 ms per step on its most idle device "
                                    "(device clock), 14.6 ms (65%) less than ZB-H1 (22.6 ms).")
    assert verdict.sentences[1] == ("Theory at these runs' own costs ranks ZB-V first too (5.0 ms), so its ranking "
                                    "holds.")
    # 3.0 ms over theory's 5.0 is 0.030 of a 100 ms step: within the lesson's 0.05, said so.
    assert verdict.sentences[2] == "ZB-V idles 8.0 ms, within 0.05 of its step of theory's 5.0 ms at these costs."


def test_dualpipev_worse_than_zb_h1_says_why():
    """The issue's own numbers: DualPipeV 32.0 ms against ZB-H1's 22.6 ms, theory equal."""
    measured = {"1f1b": run(33.0), "zb-h1": run(22.6), "zb-v": run(8.0), "dualpipev": run(32.0)}
    text = four_way_verdict(measured, THEORY).text
    assert "DualPipeV idles 32.0 ms per step against ZB-H1's 22.6 ms (theory at these costs: 10.0 against 10.0 ms)" \
        in text
    assert "(PP/2-1)(F&B+B-3W)" in text and "back to back (F&B = F + B)" in text
    # The breakdown names the largest measured effect for DualPipeV.
    assert "Why DualPipeV's bubble is not the formula's: " in text and "message latency (+0.150)" in text


def test_four_way_when_the_run_reverses_theory_names_the_favourites_largest_effect():
    measured = {"1f1b": run(33.0), "zb-h1": run(12.0), "zb-v": run(20.0), "dualpipev": run(12.1)}
    verdict = four_way_verdict(measured, THEORY)
    assert verdict.winner is None, "12.0 and 12.1 ms are within the noise"
    assert verdict.status == FAILS
    assert verdict.sentences[0].startswith("No winner: ZB-H1 (12.0 ms) and DualPipeV (12.1 ms)")
    assert verdict.sentences[1] == ("Theory at these runs' own costs expected ZB-V first (5.0 ms, against 10.0 ms "
                                    "for ZB-H1); measured, ZB-V idles 20.0 ms, so its ranking does not hold.")
    assert verdict.sentences[2].startswith("Why ZB-V's bubble is not the formula's: ")
    assert "message latency" in verdict.sentences[2]
    assert verdict.sentences[3].startswith("The amount is not theory's: ZB-V idles 20.0 ms against 5.0 ms")
    assert sum("Why ZB-V's" in sentence for sentence in verdict.sentences) == 1, "its why once"
    assert "DualPipeV idles about as much as ZB-H1" in verdict.text


def test_chooser_names_the_winner_and_the_ratio_against_theory():
    verdict = chooser_verdict([("zb-h1", run(10.0, 90.0)), ("1f1b", run(20.0, 100.0))],
                              {"zb-h1": 20.0, "1f1b": 22.0})
    assert verdict.winner == "zb-h1"
    assert verdict.status == HOLDS, "the chooser's first ran the shorter step: its ranking holds"
    assert verdict.sentences == (
        "zb-h1's step is shortest, 90.0 ms on the device clock, 10.0 ms (10%) shorter than 1f1b's 100.0 ms.",
        "The chooser ranked it first too: the step time ratio 1f1b ÷ zb-h1 is 1.10 in theory (unit costs) and "
        "1.11 measured.")


def test_chooser_reversed_says_why():
    verdict = chooser_verdict([("zb-h1", run(40.0, 120.0)), ("1f1b", run(20.0, 100.0))],
                              {"zb-h1": 20.0, "1f1b": 22.0})
    assert verdict.winner == "1f1b"
    assert verdict.status == FAILS, "the run reversed the chooser's ranking"
    assert verdict.sentences[1] == ("The chooser ranked zb-h1 first: the step time ratio 1f1b ÷ zb-h1 is 1.10 in "
                                    "theory (unit costs) but 0.83 measured.")
    assert verdict.sentences[2].startswith("Why ZB-H1's bubble is not the formula's: ")


def test_chooser_tie_holds_within_noise_said_once_as_its_status():
    verdict = chooser_verdict([("zb-h1", run(10.0, 100.0)), ("1f1b", run(10.0, 100.5))],
                              {"zb-h1": 20.0, "1f1b": 22.0})
    assert verdict.winner is None and verdict.status == WITHIN_NOISE
    assert "Verdict" not in verdict.text, "the page's status line says 'Verdict: holds within noise.' once"
    assert verdict.sentences[1].startswith("The chooser ranked zb-h1 first")


def test_verdicts_in_chinese():
    measured = {"1f1b": run(33.0), "zb-h1": run(22.6), "zb-v": run(8.0), "dualpipev": run(32.0)}
    text = four_way_verdict(measured, THEORY, lang="zh").text
    assert text.startswith("ZB-V 空闲最少")
    assert "的气泡为何不同于公式：" in text, "the breakdown's why, in Chinese too"
    assert "。 " not in text, "Chinese sentences run on, no space after 。"
    chooser = chooser_verdict([("zb-h1", run(10.0, 90.0)), ("1f1b", run(20.0, 100.0))],
                              {"zb-h1": 20.0, "1f1b": 22.0}, lang="zh").text
    assert chooser.startswith("zb-h1 的一步最短")
    assert not re.search(r"[A-Za-z]{3,} [A-Za-z]{3,}", chooser), "no English sentence left"


def test_every_comparison_text_is_in_both_catalogs():
    keys = [k for k in i18n.catalog("en") if k.startswith("compare.")]
    assert len(keys) >= 10 and all(i18n.has("zh", k) for k in keys)


# ---- on the pages: the verdict stands above the runs' tables ---------------------------------

def fake_result(schedule: str, idle_ms: float, step_ms: float, p: int = 4, m: int = 8, chunks: int = 1):
    """What the recap's and lesson 6's views read of a finished RunResult (engine/results/result.py)."""
    from types import SimpleNamespace

    from pipelab.engine.results.metrics import StageCosts
    from tests.fake_results import fake_memory
    metrics = run(idle_ms, step_ms, p)
    costs = tuple(0.001 / chunks for _ in range(p * chunks))
    metrics = type(metrics)(**{**vars(metrics), "costs_s": StageCosts(costs, costs, costs, costs),
                               "peak_held_microbatches_per_device": (1.0,) * p})
    return SimpleNamespace(schedule=SimpleNamespace(name=schedule, num_ranks=p, num_microbatches=m, chunks=chunks),
                           config=SimpleNamespace(stages=p, microbatches=m, schedule=schedule, runtime="engine"),
                           metrics=metrics,
                           memory={r: fake_memory(parameter_bytes=1000, peak_activation_bytes=1000) for r in range(p)})


def open_page(page: str, lang: str | None = None):
    from test_course_pages import open_page as course_open_page
    return course_open_page(page, lang)


@pytest.fixture
def finished(monkeypatch):
    """Batches that finished with the results a test puts in ``finished[name]``; the views
    of every run's timelines are left out (their fakes would need events)."""
    done: dict = {}
    monkeypatch.setattr("pipelab.app.runner.runs.panel", lambda name: done.get(name))
    monkeypatch.setattr("pipelab.app.runner.runs.settings", lambda name: None)
    monkeypatch.setattr("pipelab.app.views.results.comparison_view", lambda *args, **kwargs: None)
    return done


def test_the_recap_chooser_ends_with_a_verdict(finished):
    from pipelab.lessons.overview import rank_schedules
    first, second = [c.row.name for c in rank_schedules(4, 8, 4.0, 2, False) if c.fits][:2]
    finished["recap:chooser"] = [(first, fake_result(first, 10.0, 90.0)), (second, fake_result(second, 20.0, 100.0))]
    at = open_page("page_scripts/recap.py")
    verdicts = [s.value for s in at.success if s.value.startswith("**Verdict:")]
    assert len(verdicts) == 1
    assert verdicts[0].startswith(f"**Verdict: holds.** {first}'s step is shortest, 90.0 ms on the device clock, "
                                  f"10.0 ms (10%) shorter than {second}'s 100.0 ms. The chooser ranked it first too")


def test_lesson_6_run_all_four_ends_with_a_verdict(finished):
    finished["zero-bubble:dualpipe"] = [
        (label, fake_result(name, idle, 100.0, chunks=2 if name in ("zb-v", "dualpipev") else 1))
        for label, name, idle in (("1F1B", "1f1b", 33.0), ("ZB-H1", "zb-h1", 22.6), ("ZB-V", "zb-v", 8.0),
                                  ("DualPipeV", "dualpipev", 32.0))]
    at = open_page("zero-bubble", "zh")
    assert not at.exception, at.exception
    # The full stop after the bold status, no space: "成立。** ZB-V" read as a space in Chinese, and
    # markdown does not close ** after a full-width 。 followed by a character.
    verdict = [s.value for s in at.success if s.value.startswith("**结论：成立**。ZB-V 空闲最少")]
    assert len(verdict) == 1 and "DualPipeV 每步空闲 32.0 ms，ZB-H1 为 22.6 ms" in verdict[0]


def test_run_them_all_ends_in_the_measured_frontier_and_whether_theory_names_it():
    from pipelab.engine.theory.memory_tradeoff import TradeoffPoint
    from pipelab.lessons.comparison_verdict import tradeoff_verdict
    theory = [TradeoffPoint("v-min", 1, 2.0, 0.30), TradeoffPoint("zb-v", 2, 4.0, 0.10),
              TradeoffPoint("1f1b", 1, 4.0, 0.27), TradeoffPoint("gpipe", 1, 8.0, 0.27)]
    measured = [TradeoffPoint("v-min", 1, 2.0, 0.31), TradeoffPoint("zb-v", 2, 4.0, 0.14),
                TradeoffPoint("1f1b", 1, 4.0, 0.30), TradeoffPoint("gpipe", 1, 8.0, 0.30)]
    verdict = tradeoff_verdict(measured, theory)
    assert verdict.winner is None
    assert verdict.text == ("Measured, no schedule beats these on both memory and bubble: V-Min (2 held, bubble "
                            "0.310), ZB-V (4 held, bubble 0.140). Down that list each step buys less bubble with "
                            "more held activations. Theory's dashed curve names the same schedules.")
    reversed_costs = [TradeoffPoint("v-min", 1, 2.0, 0.31), TradeoffPoint("zb-v", 2, 4.0, 0.35),
                      TradeoffPoint("1f1b", 1, 4.0, 0.30), TradeoffPoint("gpipe", 1, 8.0, 0.30)]
    assert "names V-Min, ZB-V instead" in tradeoff_verdict(reversed_costs, theory).text
    assert "保留" in tradeoff_verdict(measured, theory, lang="zh").text
    with_naive = [TradeoffPoint("naive", 1, 1.0, 0.75), *measured]
    chinese = tradeoff_verdict(with_naive, [TradeoffPoint("naive", 1, 1.0, 0.75), *theory], lang="zh").text
    assert "朴素方式（保留 1" in chinese and "Naive" not in chinese, "the Chinese list names naive in Chinese"


@pytest.mark.parametrize("pairs, winner", [
    ((0.80, 0.70, 0.95), "zb-v"),  # every pair of steps put ZB-V ahead: a winner, 2 ms apart or not
    ((0.90, 0.80, 1.05), None),    # some pair reversed the order: a tie within the noise measured
])
def test_a_winner_only_when_every_pair_of_steps_agrees(pairs, winner):
    measured = {"1f1b": run(33.0), "zb-h1": run(10.0), "zb-v": run(8.0), "dualpipev": run(32.0)}
    verdict = four_way_verdict(measured, THEORY, pairs=lambda a, b: pairs)
    assert verdict.winner == winner
    if winner is None:
        assert verdict.sentences[0].startswith("ZB-V and ZB-H1 tie within noise")
        assert verdict.status == WITHIN_NOISE and "so its ranking holds within noise" in verdict.text
    else:
        assert verdict.status == HOLDS
    # Runs made apart (no pairs): the fixed 3 % noise decides, and 8 against 10 ms is a win.
    assert four_way_verdict(measured, THEORY, pairs=lambda a, b: (0.8, 0.8, 0.8)).winner == "zb-v"


def test_a_tie_with_theory_s_favourite_agrees_with_theory_and_asks_no_why():
    measured = {"1f1b": run(33.0), "zb-h1": run(24.0), "zb-v": run(18.6), "dualpipev": run(17.5)}
    theory = {"1f1b": 30.0, "zb-h1": 11.0, "zb-v": 5.7, "dualpipev": 11.2}  # ZB-V first in theory
    verdict = four_way_verdict(measured, theory, pairs=lambda a, b: (0.95, 0.85, 1.05))
    assert verdict.winner is None and verdict.status == WITHIN_NOISE
    assert verdict.sentences[1] == ("Theory at these runs' own costs expected ZB-V first (5.7 ms): it ties the least "
                                    "idle within the noise, so its ranking holds within noise.")
    # Its 18.6 ms against theory's 5.7 is a gap of 0.129 of the step: named, with its largest effect.
    assert verdict.sentences[2] == ("The amount is not theory's: ZB-V idles 18.6 ms against 5.7 ms at these costs, "
                                    "12.9 ms more, 0.129 of its step, past the 0.05 of a step this lesson allows.")
    assert verdict.sentences[3].startswith("Why ZB-V's bubble is not the formula's: ")
    assert "agrees" not in verdict.text


def test_run_all_four_with_the_issues_numbers_names_the_gap_and_never_says_the_run_agrees():
    """Issue 47: ZB-V idled 21 ms against theory's 6.1 ms, and the page said "the run agrees"
    with no status. The ranking holds (ZB-V first, as theory says); the amount is named."""
    measured = {"1f1b": run(33.0), "zb-h1": run(24.0), "zb-v": run(21.0), "dualpipev": run(30.0)}
    theory = {"1f1b": 30.0, "zb-h1": 11.0, "zb-v": 6.1, "dualpipev": 11.2}
    verdict = four_way_verdict(measured, theory, pairs=lambda a, b: (0.88, 0.80, 0.95))
    assert verdict.status == HOLDS and verdict.winner == "zb-v"
    assert "The amount is not theory's: ZB-V idles 21.0 ms against 6.1 ms at these costs, 14.9 ms more, 0.149 " \
           "of its step, past the 0.05 of a step this lesson allows." in verdict.text
    assert "Why ZB-V's bubble is not the formula's: " in verdict.text and "message latency (+0.150)" in verdict.text
    assert "agrees" not in verdict.text
    zh = four_way_verdict(measured, theory, lang="zh", pairs=lambda a, b: (0.88, 0.80, 0.95)).text
    assert "空闲的多少与理论不符：ZB-V 空闲 21.0 ms，按这些开销的理论值为 6.1 ms，多出 14.9 ms" in zh
