"""Arbitrary input to the builders, the validator and the custom-schedule editor: each
either works or raises one clear line; none hangs (hypothesis deadline) or crashes."""

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelab.engine.actions import KINDS, Action, ScheduleError
from pipelab.engine.config import ConfigError, Limits, RunConfig
from pipelab.engine.runtime.comm import sends_by_channel
from pipelab.engine.runtime.slots import slots_needed
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate

names = st.one_of(st.sampled_from(sorted(REGISTRY)), st.text(max_size=12))
small = st.integers(min_value=-3, max_value=12)


@settings(max_examples=300, deadline=2000)
@given(names, small, small, st.one_of(st.none(), small))
def test_builders_build_valid_schedules_or_say_why(name, p, m, v):
    try:
        schedule = build_schedule(name, p, m, v)
    except ScheduleError as err:
        assert str(err) and "\n" not in str(err)
        return
    validate(schedule)
    # Every channel of a schedule that builds gets its slots (engine/runtime/slots.py), at most a step's worth.
    sends = sends_by_channel(schedule)
    slots = slots_needed(schedule, sends)
    assert all(1 <= slots[c] <= len(messages) for c, messages in sends.items())


action_text = st.builds(lambda s, k, j: f"{s}{k}{j}", st.integers(0, 3), st.sampled_from(KINDS), st.integers(0, 3))
noise = st.text(alphabet="0123456789FBIWUX :#,\n-", max_size=40)
program = st.lists(st.lists(action_text, max_size=10).map(" ".join), min_size=1, max_size=4).map("\n".join)


@settings(max_examples=400, deadline=2000)
@given(st.one_of(program, noise))
def test_editor_text_is_validated_or_rejected_in_one_line(text):
    try:
        schedule = parse_schedule(text)
        validate(schedule)
    except InvalidSchedule as err:
        assert "\n" not in err.rule and "<-- here" in err.table
    except ScheduleError as err:
        assert "\n" not in str(err)


@settings(max_examples=300, deadline=2000)
@given(names, small, small, st.one_of(st.none(), small), st.sampled_from(["gpt", "mlp", "cnn"]),
       st.integers(-2, 40), st.integers(-8, 2048), st.integers(-1, 30))
def test_run_settings_are_checked_in_one_place(name, p, m, v, model, layers, hidden, steps):
    config = RunConfig(schedule=name, stages=p, microbatches=m, chunks=v, model=model, layers=layers,
                       hidden=hidden, steps=steps)
    try:
        config.check_values(Limits())
    except (ConfigError, ScheduleError) as err:
        assert str(err).splitlines()[0] and "Traceback" not in str(err)


def test_action_parse_is_total_on_its_own_output():
    for a in (Action(0, "F", 0), Action(12, "W", 99)):
        assert Action.parse(str(a)) == a
