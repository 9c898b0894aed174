"""Export to torch.distributed.pipelining's compute-only CSV and back (engine/torch_bridge/csv_format.py),
checked against torch's own runtime loader and its shipped schedules (engine/torch_bridge/shipped.py)."""

import pytest

from pipelab.engine.actions import Action, ScheduleError
from pipelab.engine.schedules import REGISTRY, build_schedule
from pipelab.engine.schedules.zero_bubble import greedy_order
from pipelab.engine.torch_bridge.csv_format import export_csv, export_rows, import_csv
from pipelab.engine.torch_bridge.shipped import SHIPPED, load_in_torch, shipped_order

SYNCHRONOUS = [name for name, info in REGISTRY.items() if info.synchronous]
ASYNCHRONOUS = [name for name, info in REGISTRY.items() if not info.synchronous]


def settings(name):
    """(p, m) for p in {2, 4} with the smallest m in (p, 2p) the builder takes."""
    for p in (2, 4):
        for m in (p, 2 * p):
            try:
                yield p, m, build_schedule(name, p, m)
            except ScheduleError:
                continue
            break


def cases():
    for name in SYNCHRONOUS:
        for p, m, schedule in settings(name):
            yield pytest.param(schedule, id=f"{name}-p{p}-m{m}")


def test_every_synchronous_schedule_has_a_case_at_both_sizes():
    built = {(s.values[0].name, s.values[0].num_ranks) for s in cases()}
    assert built == {(name, p) for name in SYNCHRONOUS for p in (2, 4)}


@pytest.mark.parametrize("schedule", list(cases()))
def test_export_round_trips(schedule):
    back = import_csv(export_csv(schedule), num_microbatches=schedule.num_microbatches)
    assert back.actions == schedule.actions
    assert back.stage_to_rank == schedule.stage_to_rank


@pytest.mark.parametrize("schedule", list(cases()))
def test_torch_runtime_loads_validates_and_lowers_the_export(schedule, tmp_path):
    path = tmp_path / "schedule.csv"
    path.write_text(export_csv(schedule))
    loaded = load_in_torch(str(path), schedule.num_ranks, schedule.num_stages, schedule.num_microbatches)
    # torch infers the placement from the rows: ours, so interleaved and V stages land where we put them.
    assert loaded.stage_to_rank == schedule.stage_to_rank
    for rank, program in enumerate(schedule.actions):
        compute = [cell for cell in loaded.with_comms[rank]
                   if not any(word in cell for word in ("SEND", "RECV", "SHARD", "REDUCE_GRAD"))]
        assert compute == [str(a) for a in program]  # lowering keeps our order, adds only messages
        crossing = sum(1 for a in program if _crosses(schedule, a))
        assert sum("SEND" in cell for cell in loaded.with_comms[rank]) == crossing


def _crosses(schedule, a):
    """Whether torch sends after ``a``: its output goes to a stage on another rank."""
    if a.kind == "F":
        nxt = a.stage + 1
    elif a.kind in ("B", "I"):
        nxt = a.stage - 1
    else:
        return False
    return 0 <= nxt < schedule.num_stages and schedule.stage_to_rank[nxt] != schedule.stage_to_rank[a.stage]


def test_a_broken_export_is_refused_by_torch(tmp_path):
    # The loader check above would pass vacuously if torch accepted anything: it does not.
    schedule = build_schedule("gpipe", 2, 2)
    path = tmp_path / "bad.csv"
    path.write_text(export_csv(schedule).replace(",1B1", ""))
    with pytest.raises(AssertionError, match="backward"):
        load_in_torch(str(path), 2, 2, 2)


@pytest.mark.parametrize("name", ASYNCHRONOUS)
def test_updates_inside_the_step_are_refused_with_a_reason(name):
    with pytest.raises(ScheduleError) as err:
        export_rows(build_schedule(name, 2, 4))
    assert "\n" not in str(err.value) and "U actions" in str(err.value)


def ours(name, p, m, v):
    return [[str(a) for a in program] for program in build_schedule(name, p, m, v).actions]


SIZES = [(p, m) for p in (2, 4) for m in (p, 2 * p, 3 * p)]


def as_torch_lists_it(torch_class: str, mine: list[list[str]]) -> list[list[str]]:
    """Our order as torch's class lists it: the same, but for a quirk of torch's own, keyed to its
    class (never to our schedule's name, so a copy of a schedule meets the same table).
    Schedule1F1B._get_pipeline_order (a description only: Schedule1F1B runs its own loop, not
    this list) starts its forward counter at 0 and increments it before each steady forward; the
    last rank has no warm-up forward, so its list names F1..Fm, not F0..F(m-1)."""
    if torch_class != "Schedule1F1B":
        return mine
    last = len(mine) - 1
    return mine[:-1] + [[f"{last}F{int(a.split('F')[1]) + 1}" if "F" in a else a for a in mine[-1]]]


@pytest.mark.parametrize("name", list(SHIPPED))
@pytest.mark.parametrize("p", [2, 4])
def test_every_schedule_naming_a_torch_class_lists_torchs_actions_in_torchs_order(name, p):
    """Each schedule registered with ``torch_class`` against that class, at m = 2p (where every
    one of them fills its pipeline): every rank's actions in torch's order, as its class lists them."""
    v = REGISTRY[name].chunks.default
    mine, torch = ours(name, p, 2 * p, v), shipped_order(name, p, 2 * p, v)
    assert as_torch_lists_it(SHIPPED[name], mine) == torch


@pytest.mark.parametrize("p,m", SIZES)
def test_gpipe_and_dualpipev_equal_torchs(p, m):
    assert ours("gpipe", p, m, None) == shipped_order("gpipe", p, m)
    if m >= 2 * p:  # DualPipeV needs m >= 2p (ours refuses less); torch's OVERLAP_F_B pairs expanded
        assert ours("dualpipev", p, m, 2) == shipped_order("dualpipev", p, m, 2)


@pytest.mark.parametrize("p,m", SIZES)
def test_1f1b_equals_torchs_but_torch_lists_the_last_ranks_forwards_one_micro_batch_late(p, m):
    mine, torch = ours("1f1b", p, m, None), shipped_order("1f1b", p, m)
    assert mine[:-1] == torch[:-1] and mine[-1] != torch[-1]  # the quirk is there to key
    assert as_torch_lists_it("Schedule1F1B", mine) == torch


@pytest.mark.parametrize("p,m", SIZES)
def test_interleaved_equals_torchs_except_megatrons_all_warm_up_at_m_equal_p(p, m):
    if m != p:
        assert ours("interleaved", p, m, 2) == shipped_order("interleaved", p, m, 2)
        return
    mine, torch = ours("interleaved", p, m, 2), shipped_order("interleaved", p, m, 2)
    # With m == p Megatron's schedule is all warm-up: every forward before the first backward
    # on every rank (engine/schedules/interleaved.py). torch's flexible version keeps its usual
    # warm-up count, so its later ranks start 1F1B on their last chunk: the same actions per
    # rank, in another order, on the ranks whose warm-up would end before their forwards do.
    for rank in range(p):
        kinds = [Action.parse(a).kind for a in mine[rank]]
        assert kinds == ["F"] * (2 * m) + ["B"] * (2 * m)
        assert sorted(mine[rank]) == sorted(torch[rank])
    assert mine[0] == torch[0] and mine[-1] != torch[-1]


@pytest.mark.parametrize("p,m", SIZES)
def test_zb_v_equals_torchs_once_the_v_is_full(p, m):
    mine, torch = ours("zb-v", p, m, 2), shipped_order("zb-v", p, m, 2)
    if m >= 2 * p:
        assert mine == torch
        return
    # With m < 2p ours comes from the unit-time greedy grid (engine/schedules/zero_bubble.py),
    # which runs F and I as torch's V order does but defers W to fill idle slots; torch runs
    # every W right after its I. The difference is exactly where the W's go.
    assert mine == [[str(a) for a in r] for r in greedy_order(build_schedule("zb-v", p, m, 2).stage_to_rank, m,
                                                                 [2 * p] * p, [2 * p] * p)]
    without_w = [[a for a in r if "W" not in a] for r in mine]
    assert without_w == [[a for a in r if "W" not in a] for r in torch]
    for rank in torch:
        for k, a in enumerate(rank):
            if "I" in a:
                assert rank[k + 1] == a.replace("I", "W")
    assert mine != torch


def test_torchs_own_orders_import_and_validate_here(tmp_path):
    # The other direction: a CSV written by torch (its DualPipeV has OVERLAP_F_B cells) runs here.
    from torch.distributed.pipelining import schedules

    from pipelab.engine.torch_bridge.shipped import stand_in_stages
    p, m = 2, 4
    for name, cls in SHIPPED.items():
        v = REGISTRY[name].chunks.default
        stages = stand_in_stages(p, v)
        torch_schedule = getattr(schedules, cls)(stages[0] if v == 1 else stages, n_microbatches=m)
        path = tmp_path / f"{name}.csv"
        rows = [[str(a) if a is not None else "" for a in torch_schedule.pipeline_order[r]
                 if a is None or a.is_compute_op] for r in range(p)]
        path.write_text("\n".join(",".join(row) for row in rows) + "\n")
        # torch's listed 1F1B has no 1F0 on its last rank (see above): refused. Keyed to torch's
        # class, not our name, so a schedule copied from ours (the same torch_class) meets the same quirk.
        if cls == "Schedule1F1B":
            with pytest.raises(ScheduleError, match="1B0 comes before its forward 1F0"):
                import_csv(path.read_text(), num_microbatches=m)
            continue
        imported = import_csv(path.read_text(), num_microbatches=m)
        assert [[str(a) for a in r] for r in imported.actions] == shipped_order(name, p, m, v)


@pytest.mark.parametrize("cell", ["0SEND_F0", "0UNSHARD", "0X1", "F0"])
def test_import_refuses_a_non_compute_cell_in_one_line(cell):
    with pytest.raises(ScheduleError) as err:
        import_csv(f"0F0,{cell},0B0\n")
    assert "\n" not in str(err.value) and "compute-only" in str(err.value)


def test_an_empty_row_is_a_rank_without_work_not_a_skipped_line():
    with pytest.raises(ScheduleError, match="at least one stage"):
        import_csv("0F0,0B0\n,,\n1F0,1B0\n")
    assert import_csv("0F0,1F0,1B0,0B0\n\n\n").num_ranks == 1


@pytest.mark.parametrize("schedule", list(cases()))
def test_our_reduce_sits_where_torchs_lowering_puts_its_reduce_grad(schedule, tmp_path):
    """Data parallelism: with_gradient_reduce places each stage's R where torch's own lowering
    (_add_reduce_grad) places REDUCE_GRAD, right after the stage's last B or W; the CSV carries it
    both ways."""
    from pipelab.engine.schedules.data_parallel import with_gradient_reduce
    from pipelab.engine.torch_bridge.csv_format import torch_cell
    ours = with_gradient_reduce(schedule)
    path = tmp_path / "schedule.csv"
    path.write_text(export_csv(schedule))
    loaded = load_in_torch(str(path), schedule.num_ranks, schedule.num_stages, schedule.num_microbatches)
    for rank, program in enumerate(ours.actions):
        torchs = [cell for cell in loaded.with_comms[rank] if not any(w in cell for w in ("SEND", "RECV", "SHARD"))]
        assert torchs == [torch_cell(a) for a in program]
    back = import_csv(export_csv(ours), num_microbatches=schedule.num_microbatches)
    assert back.actions == ours.actions and "REDUCE_GRAD" in export_csv(ours)
