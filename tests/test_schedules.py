import pytest

from pipelab.engine.actions import ScheduleError
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.theory.simulate import simulate
from pipelab.engine.theory.validate import parse_schedule, validate

# Every test below that loops over REGISTRY covers a schedule a new file in engine/schedules/
# adds; the built-in set is pinned in tests/test_schedule_contract.py.


def grid():
    for p in range(2, 9):
        for m in range(p, 4 * p + 1):
            yield p, m


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ScheduleError) as err:
        build_schedule("gpipe2", 4, 8)
    assert all(n in str(err.value) for n in REGISTRY)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_schedule_validates_wherever_it_builds(name):
    # A builder may refuse (p, m, v) with a ScheduleError naming the constraint (m % p, m >= 2p);
    # whatever it builds must be sound, and it must build on most of the grid.
    rule = REGISTRY[name].chunks
    built = tried = 0
    for p, m in grid():
        for v in sorted({rule.default, rule.resolve(1), rule.resolve(3)}):
            tried += 1
            try:
                schedule = build_schedule(name, p, m, v)
            except ScheduleError as err:
                assert "\n" not in str(err)
                continue
            validate(schedule)
            assert (schedule.num_ranks, schedule.num_microbatches, schedule.chunks) == (p, m, v)
            built += 1
    assert built >= tried // 4, f"{name} built {built} of {tried} settings"


CONSTRAINTS = [
    # name,          p, m, v,    words the error must contain
    ("interleaved",  4, 6, 2,    "multiple of stages"),
    ("interleaved",  1, 1, -1,   "chunks any v >= 1"),  # -1 is the registry's "any", not a v
    ("zb-v",         4, 8, 3,    "chunks"),
    ("dualpipev",    4, 8, 1,    "chunks"),
    ("dualpipev",    4, 7, None, "m >= 2p"),
    ("gpipe",        4, 8, 2,    "chunks"),
    ("pipedream-2bw", 4, 6, None, "multiple of stages"),
    ("1f1b",         0, 8, None, "stages"),
    ("1f1b",         4, 0, None, "micro-batches"),
]


@pytest.mark.parametrize("name,p,m,v,words", CONSTRAINTS)
def test_parameters_a_schedule_cannot_take(name, p, m, v, words):
    with pytest.raises(ScheduleError) as err:
        build_schedule(name, p, m, v)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_fewer_microbatches_than_stages_still_completes():
    # torchtitan #775: hangs when m < p. Ours must validate and finish: the simulator plays
    # every action (it raises Deadlock where a rank would wait forever).
    for name in ("gpipe", "1f1b", "zb-h1", "zb-h2", "zb-v", "pipedream"):
        schedule = build_schedule(name, 4, 2)
        assert validate(schedule) is None
        timeline = simulate(schedule)
        assert len(timeline.compute_events()) == sum(map(len, schedule.actions)), name
        assert {e.microbatch for e in timeline.compute_events()} == {0, 1}, name


def test_pipedream_updates_after_every_backward():
    s = build_schedule("pipedream", 2, 4)
    assert [str(a) for a in s.actions[1]] == ["1F0", "1B0", "1U0", "1F1", "1B1", "1U1",
                                              "1F2", "1B2", "1U2", "1F3", "1B3", "1U3"]


def test_2bw_updates_once_per_p_microbatches():
    s = build_schedule("pipedream-2bw", 2, 4)
    assert [str(a) for a in s.actions[1] if a.kind == "U"] == ["1U1", "1U3"]


PLACEMENTS = [
    ("1f1b", 4, None, (0, 1, 2, 3)),
    ("interleaved", 4, 2, (0, 1, 2, 3, 0, 1, 2, 3)),  # Megatron: device 0 holds chunks 0 and 4
    ("zb-v", 4, 2, (0, 1, 2, 3, 3, 2, 1, 0)),         # the V: device 0 holds the first and last
    ("dualpipev", 4, 2, (0, 1, 2, 3, 3, 2, 1, 0)),    # DualPipe cut in half onto the same V
    ("v-half", 4, 2, (0, 1, 2, 3, 3, 2, 1, 0)),       # the sequel's V blocks (arXiv 2405.15362)
    ("v-min", 4, 2, (0, 1, 2, 3, 3, 2, 1, 0)),
]


@pytest.mark.parametrize("name,p,v,placement", PLACEMENTS)
def test_stage_placement(name, p, v, placement):
    assert build_schedule(name, p, 8, v).stage_to_rank == placement


@pytest.mark.parametrize("schedule, split_stages", [
    (build_schedule("1f1b", 4, 8),                        []),
    (build_schedule("interleaved", 2, 4, 2),              []),
    (build_schedule("zb-h1", 4, 8),                       [0, 1, 2, 3]),
    (build_schedule("zb-v", 2, 4, 2),                     [0, 1, 2, 3]),
    (build_schedule("dualpipev", 2, 4, 2),                [0, 1, 2, 3]),
    (parse_schedule("0F0 0B0\n1F0 1I0 1W0"),              [1]),  # a custom mix
])
def test_which_stages_split_the_backward(schedule, split_stages):
    assert [s for s in range(schedule.num_stages) if schedule.has_split_backward(s)] == split_stages


@pytest.mark.parametrize("name", list(REGISTRY))
def test_messages_per_step_are_the_sends_the_executor_posts(name):
    from pipelab.engine.runtime.comm import sends_by_channel
    for p, m in ((2, 4), (4, 8), (3, 6)):
        schedule = build_schedule(name, p, m)
        assert schedule.messages_per_step == sum(len(sent) for sent in sends_by_channel(schedule).values()), (p, m)


def test_interleaved_sends_v_times_the_messages():
    one, two = build_schedule("interleaved", 4, 8, 1), build_schedule("interleaved", 4, 8, 2)
    assert (one.messages_per_step, two.messages_per_step) == (2 * 8 * 3, 2 * 8 * 7)  # 2m(vp - 1)
    assert simulate(two).bubble_fraction() < simulate(one).bubble_fraction()


@pytest.mark.parametrize("name", ["v-half", "v-min"])
def test_v_blocks_repeat_every_six_passes_in_steady_state(name):
    # arXiv 2405.15362, section 2: one building block per micro-batch, repeated every T = 6
    # slots without collision, so once the pipeline is full any six consecutive passes of a
    # rank are one of each: F, I and W of both chunks.
    p, m = 4, 16
    s = build_schedule(name, p, m)
    for r, program in enumerate(s.actions):
        chunk = {stage: k for k, stage in enumerate(s.stages_of(r))}
        middle = program[len(program) // 3: 2 * len(program) // 3]
        for k in range(len(middle) - 5):
            window = {(a.kind, chunk[a.stage]) for a in middle[k:k + 6]}
            assert len(window) == 6, (r, [str(a) for a in middle[k:k + 6]])


def test_zb_v_runs_each_w_right_after_its_i_in_steady_state():
    # arXiv 2401.10241, section 6: F0 I0 W0 F1 I1 W1 repeats, so nothing waits for a late W.
    rank0 = [str(a) for a in build_schedule("zb-v", 4, 16).actions[0]]
    middle = rank0[len(rank0) // 3: 2 * len(rank0) // 3]
    for k, action in enumerate(middle[:-1]):
        if action[1] == "I":
            assert middle[k + 1] == action.replace("I", "W"), middle


def test_dualpipev_pairs_one_chunk_s_forward_with_the_other_s_backward():
    # Steady state on rank r (arXiv 2412.19437, DualPipeV): F0 B1 F1 B0, full backwards.
    p, m = 4, 16
    s = build_schedule("dualpipev", p, m)
    for r, program in enumerate(s.actions):
        chunk0, chunk1 = r, 2 * p - 1 - r
        kinds = [(a.kind, a.stage) for a in program]
        pairs = sum(kinds[k:k + 4] == [("F", chunk0), ("B", chunk1), ("F", chunk1), ("B", chunk0)]
                    for k in range(len(kinds) - 3))
        assert pairs == m - 2 * p + r + 1, r
        assert program[-1].kind == "W"  # the W tail closes the step
        assert any(a.kind == "I" for a in program)  # split at the ends


def test_dualpipev_needs_as_many_microbatches_as_stages():
    validate(build_schedule("dualpipev", 4, 8))
    with pytest.raises(ScheduleError, match="m >= 2p = 8"):
        build_schedule("dualpipev", 4, 7)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_what_a_schedule_declares_is_what_it_builds(name):
    info = REGISTRY[name]
    schedule = build_schedule(name, 4, 16)
    assert info.synchronous == (not schedule.is_async)
    assert schedule.chunks == info.chunks.default and schedule.name == name
