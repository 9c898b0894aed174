"""One file registers a schedule, and it shows up everywhere: a toy schedule, written to a
temporary package and discovered from there (tests/toy_schedule.py), with no other edit."""

import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.config import RunConfig
from pipelab.engine.schedules import (
    REGISTRY,
    SCHEDULE_NAMES,
    AnyChunks,
    FixedChunks,
    build_schedule,
    chunked_schedules,
    chunks_for,
    register,
    unregister,
)
from pipelab.engine.schedules.base import Schedule, linear_placement
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.schedule_theory import NO_THEORY
from pipelab.engine.theory.simulate import simulate


@pytest.fixture
def toy(toy_schedule):
    """The toy schedule (tests/conftest.py), under this file's shorter name."""
    return toy_schedule


def test_the_cli_lists_and_simulates_it(toy, capsys):
    from pipelab.engine.cli.main import main
    assert main(["list"]) == 0
    assert any(line.startswith(toy + " ") and "newest first" in line for line in capsys.readouterr().out.splitlines())
    assert main(["simulate", "--schedule", toy, "--stages", "2", "--microbatches", "2"]) == 0
    assert "formula 0.3333" in capsys.readouterr().out  # its registered (p-1)/(m+p-1)


def test_the_simulator_and_its_registered_theory_agree(toy):
    timeline = simulate(build_schedule(toy, 4, 8))
    assert timeline.bubble_fraction() == pytest.approx(theory.formula_bubble_fraction(toy, 4, 8)) == 3 / 11
    assert theory.peak_inflight(toy, 4, 8, 0) is None  # it registered none
    assert theory.weight_versions(toy, 4, 0) == 1


def test_the_lessons_and_the_playground_offer_it(toy):
    from pipelab import lessons
    assert toy in lessons.SCHEDULES and SCHEDULE_NAMES[-1] == toy
    assert toy in lessons.get_lesson("playground").schedules
    assert toy not in lessons.get_lesson("gpipe").schedules  # a lesson names its own subset
    assert lessons.Knobs(schedule=toy, stages=2, microbatches=2).check().schedule == toy
    with pytest.raises(ValueError, match=f"only applies to {', '.join(chunked_schedules())}$"):
        lessons.Knobs(schedule=toy, chunks=2).check()


def test_the_overview_table_has_a_row_for_it(toy):
    from pipelab.lessons.overview import schedule_rows
    row = next(row for row in schedule_rows(4, 8) if row.name == toy)
    assert row.buildable and row.formula_value == pytest.approx(3 / 11)


def test_the_benchmarks_measure_it(toy):
    from bench.run import all_schedules, make_plan
    assert toy in all_schedules()
    assert toy in make_plan(quick=True, tiny=False).fid_schedules


def test_errors_name_it_among_the_valid_schedules(toy):
    from pipelab import lessons
    with pytest.raises(ScheduleError, match=f"valid schedules: .*{toy}"):
        RunConfig(schedule="nope").check_values()
    with pytest.raises(ValueError, match=f"is not one of .*{toy}"):
        lessons.Knobs(schedule="nope").check()


@pytest.mark.slow
def test_a_real_run_trains_with_it_as_one_process_would(toy):
    from pipelab.engine.runtime.launch import run
    result = run(RunConfig(schedule=toy, stages=2, microbatches=2, model="mlp", layers=2, hidden=16,
                           microbatch_size=2, steps=1, check=True))
    assert result.schedule.name == toy
    assert result.metrics.formula_bubble_fraction == pytest.approx(1 / 3)
    assert result.check.grad_max_rel_diff < 1e-5 and result.check.loss_rel_diff < 1e-5


def test_after_unregistering_it_is_gone_everywhere(toy):
    from pipelab import lessons
    unregister(toy)
    assert toy not in lessons.SCHEDULES
    with pytest.raises(ScheduleError, match="unknown schedule"):
        build_schedule(toy, 2, 2)
    assert theory.formula_bubble_fraction(toy, 2, 2) is None


# ---- the registry's own rules -------------------------------------------------------------

def _builder(ranks, microbatches, chunks=1):
    return Schedule("x", ranks, microbatches, linear_placement(ranks), ((),) * ranks)


def _register(name, **extra):
    """register() with the fields every schedule must give, filled with placeholders."""
    return register(name, summary={"en": "s", "zh": "s"}, constraint={"en": "c", "zh": "c"}, paper="p",
                    theory=NO_THEORY, **extra)


@pytest.mark.parametrize("name, words", [
    ("gpipe", "already registered (by pipelab.engine.schedules.classic)"),  # one name, one file
    ("custom", "not 'custom'"),                                     # the custom schedule's name
    ("two words", "without spaces"),
    ("", "non-empty"),
])
def test_a_name_it_cannot_take(name, words):
    with pytest.raises(ScheduleError, match=words.replace("(", r"\(").replace(")", r"\)")):
        _register(name)(_builder)


def test_list_order_comes_from_the_order_key_then_registration():
    built_in = list(REGISTRY)
    _register("z-first", order=0)(_builder)
    _register("a-last")(_builder)
    try:
        names = list(REGISTRY)
        assert names[0] == "z-first" and names[-1] == "a-last"
        assert names[1:-1] == built_in
    finally:
        unregister("z-first")
        unregister("a-last")


CHUNK_RULES = [
    # rule,            accepts,   refuses,        resolve(1), resolve(3), describe,     a knob
    (FixedChunks(1),   [1],       [0, 2, True],   1,          1,          "1",          False),
    (FixedChunks(2),   [2],       [1, 3, 2.0],    2,          2,          "2",          True),
    (AnyChunks(),      [1, 2, 5], [0, -1, 1.5],   1,          3,          "any v >= 1", True),
]


@pytest.mark.parametrize("rule, accepts, refuses, one, three, text, knob", CHUNK_RULES)
def test_chunk_rules(rule, accepts, refuses, one, three, text, knob):
    assert all(rule.accepts(v) for v in accepts)
    assert not any(rule.accepts(v) for v in refuses)
    assert (rule.resolve(1), rule.resolve(3), rule.describe(), rule.takes_chunks) == (one, three, text, knob)


@pytest.mark.parametrize("name, asked, built", [
    ("interleaved", 3, 3), ("zb-v", 1, 2), ("dualpipev", 1, 2), ("v-min", 1, 2), ("gpipe", 2, 1),
])
def test_the_chunks_a_schedule_is_built_with(name, asked, built):
    assert chunks_for(name, asked) == built
