"""bench/gpu_check.py: the prepared GPU check. Its quick mode runs here, on CPU, with the GPU
part skipped; the report's rows are read from fixed fakes and from the runs' own results."""

import json
import os
import subprocess
import sys
from dataclasses import asdict
from types import SimpleNamespace

import pytest

from bench import gpu_check as G
from bench import report as R
from pipelab.engine.config import RunConfig
from pipelab.engine.results.records import GradientCheck
from tests.fake_results import fake_memory, fake_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 2**20
KIB = 2**10


def fake_result(device="cuda", grad=1e-6, **metrics):
    """A finished 2-rank 1f1b run as row_from_result reads it."""
    values = dict(device_bubble_fraction=0.25, wall_bubble_fraction=0.3, simulated_bubble_fraction=0.24,
                  simulated_bubble_fraction_per_step_costs=0.25, formula_bubble_fraction=0.2, wall_step_time_s=0.01,
                  device_step_time_s=0.009)
    memory = {r: fake_memory(peak_activation_bytes=MIB, parameter_bytes=MIB // 2, gradient_bytes=MIB // 2,
                             cuda_peak_bytes=3 * MIB if device == "cuda" else None) for r in (1, 0)}
    check = None if grad is None else GradientCheck(grad_max_rel_diff=grad, weight_max_rel_diff=0.0,
                                                    losses_max_rel_diff=0.0)
    return SimpleNamespace(config=RunConfig(schedule="1f1b", stages=2, microbatches=8, device=device),
                           schedule=SimpleNamespace(chunks=1), device=device, transport="shared memory",
                           metrics=fake_metrics(2, **{**values, **metrics}), memory=memory, check=check)


def test_a_row_is_its_results_figures_and_its_memory_our_count_beside_the_allocators():
    row = G.row_from_result(fake_result(), "runs/x.json")
    assert (row.device, row.schedule, row.stages, row.microbatches, row.transport) == ("cuda", "1f1b", 2, 8,
                                                                                       "shared memory")
    assert (row.bubble_device, row.bubble_wall, row.bubble_simulated, row.bubble_formula) == (0.25, 0.3, 0.24, 0.2)
    assert [m.rank for m in row.memory] == [0, 1]
    assert all(m.counted_bytes == 2 * MIB and m.allocator_peak_bytes == 3 * MIB for m in row.memory)
    assert row.check.passed and row.check.tolerance == G.CHECK_TOLERANCE["cuda"]


@pytest.mark.parametrize("device, grad, passed", [
    ("cuda", 5e-5, True),  # a GPU sums in other orders: looser than the CPU's 1e-5
    ("cpu", 5e-5, False),
    ("cpu", float("nan"), False),
    ("cpu", None, False),  # no check at all is no pass
])
def test_the_gradient_check_passes_only_within_the_devices_tolerance(device, grad, passed):
    row = G.row_from_result(fake_result(device, grad), "runs/x.json")
    assert row.check.passed is passed
    assert G.check_text(row.check).startswith("passed" if passed else "FAILED")


def fixed_report(gpu_skipped: str | None = None) -> G.Report:
    gpu_rows = (G.row_from_result(fake_result("cuda"), "runs/cuda-1f1b-p2.json"),
                G.Unfinished("cuda", "gpipe", 4, failed=True, reason="RunFailed: rank 1 failed: boom"))
    cpu_rows = (G.row_from_result(fake_result("cpu", device_bubble_fraction=0.30, wall_bubble_fraction=0.31), "a.json"),
                G.row_from_result(fake_result("cpu", device_bubble_fraction=0.30, wall_bubble_fraction=0.60), "b.json"))
    cpu_rows = (cpu_rows[0], G.RunRow(**{**vars(cpu_rows[1]), "stages": 4}))
    gpu = G.Section("cuda", gpu_skipped) if gpu_skipped else G.Section("cuda", None, gpu_rows)
    return G.Report(machine={"date": "today", "cpu": "a CPU"}, cores=2, gpu=G.GpuInfo("H100", 80.0, 1, "12.4"),
                    size=G.QUICK, size_note="--quick", sections=(gpu, G.Section("cpu", None, cpu_rows)),
                    seconds=12.0, budget_s=420.0, schedules=("1f1b", "gpipe"))


def test_the_report_shows_each_runs_bubbles_memory_and_check_and_a_failed_run_with_its_reason():
    report = fixed_report()
    md = G.report_md(report)
    assert "| 1f1b | 2 | shared memory | 0.250 | 0.300 | 0.240 | 0.250 | 0.200 | passed (1.0e-06 <= 1e-04) |" in md
    assert "| 1f1b | 2 | 0 | 3.00 MiB | 2.00 MiB | 1.50 |" in md  # allocator beside our count, per rank
    assert "| gpipe | 4 | failed |" in md and "RunFailed: rank 1 failed: boom" in md
    assert "**shared memory**" in md  # which transport ran
    # CPU: the clocks should agree only where each rank has a core.
    assert "| 1f1b | 2 | 2 ranks, 2 cores: a core each | shared memory | 0.300 | 0.310 | 0.010 | met |" in md
    assert "| 1f1b | 4 | 4 ranks, 2 cores: taking turns | shared memory | 0.300 | 0.600 | 0.300 | not expected" in md
    assert "NOT all runs passed" in md
    data = G.report_dict(report)
    assert data["passed"] is False and data["sections"][0]["passed"] is False and data["sections"][1]["passed"]
    assert [r["status"] for r in data["sections"][0]["rows"]] == ["ran", "failed"]
    json.dumps(data)  # plain JSON


def test_a_skipped_gpu_part_says_why_and_does_not_fail_the_check():
    report = fixed_report(gpu_skipped="no GPU: this torch is built without CUDA")
    assert "Skipped: no GPU: this torch is built without CUDA." in G.report_md(report)
    assert report.passed and G.report_dict(report)["sections"][0]["rows"] == []


@pytest.mark.slow
@pytest.mark.parametrize("args, said", [
    (["--budget", "0"], "--budget must be a positive number of seconds"),
    (["--budget", "nan"], "--budget must be a positive number of seconds"),
    (["--out", "FILE"], "is a file, not a folder"),
    (["--steps", "3"], "unrecognized arguments"),
])
def test_bad_arguments_give_one_line_and_exit_2(tmp_path, args, said):
    file = tmp_path / "a-file"
    file.write_text("")
    args = [str(file) if a == "FILE" else a for a in args]
    out = subprocess.run([sys.executable, "-m", "bench.gpu_check", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and said in out.stderr


# ---- the quick mode, for real --------------------------------------------------------

@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    done = subprocess.run([sys.executable, "-m", "bench.gpu_check", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "report.json") as f:
        data = json.load(f)
    return out, data, (out / "report.md").read_text()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quick_mode_reports_every_synchronous_schedule_at_p2_and_p4_with_passed_checks(quick):
    from pipelab.engine.schedules import REGISTRY
    out, data, md = quick
    assert (out / "report.md").is_file() and (out / "report.json").is_file()
    synchronous = {name for name, info in REGISTRY.items() if info.synchronous}
    assert synchronous and set(REGISTRY) - synchronous  # the async ones exist and are left out
    gpu, cpu, torch_gpu = data["sections"]
    assert torch_gpu["runtime"] == "torch" and (torch_gpu["skipped"] is None) == (gpu["skipped"] is None)
    expected = {(s, p) for s in synchronous for p in (2, 4)}
    for section in ([gpu] if gpu["skipped"] is None else []) + [cpu]:
        assert {(r["schedule"], r["stages"]) for r in section["rows"]} == expected
        assert all(r["status"] == "ran" and r["check"]["passed"] for r in section["rows"])
        assert all(r["check"]["grad_max_rel_diff"] <= G.CHECK_TOLERANCE[section["device"]] for r in section["rows"])
    assert data["passed"] is True and "every run finished and passed its gradient check" in md


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quick_mode_without_cuda_skips_the_gpu_part_saying_why(quick):
    why = G.cuda_missing()
    if why is None:
        pytest.skip("this machine has a GPU: the GPU part ran")
    _, data, md = quick
    gpu = data["sections"][0]
    assert gpu["device"] == "cuda" and gpu["rows"] == [] and gpu["skipped"] == f"no GPU: {why}"
    assert f"Skipped: no GPU: {why}." in md
    assert data["gpu"] is None and data["size"] == asdict(G.QUICK)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quick_mode_reports_the_runs_own_numbers(quick):
    from pipelab.engine.results.result import RunResult
    from pipelab.engine.theory import formulas as theory
    out, data, md = quick
    rows = data["sections"][1]["rows"]
    for row in rows:
        with open(out / row["result_file"]) as f:
            result = RunResult.from_dict(json.load(f))
        m = result.metrics
        assert (result.config.schedule, result.config.stages, result.config.device) == (row["schedule"], row["stages"],
                                                                                      "cpu")
        assert (row["bubble_device"], row["bubble_wall"], row["bubble_simulated"], row["bubble_formula"]) == (
            m.device_bubble_fraction, m.wall_bubble_fraction, m.simulated_bubble_fraction, m.formula_bubble_fraction)
        assert row["transport"] == result.transport == "shared memory"
        assert row["check"]["grad_max_rel_diff"] == result.check.grad_max_rel_diff
        assert [r["counted_bytes"] for r in row["memory"]] == [
            mem.peak_activation_bytes + mem.parameter_bytes + mem.gradient_bytes + mem.optimizer_bytes
            + mem.peak_stashed_weight_bytes for _, mem in sorted(result.memory.items())]
        assert all(r["allocator_peak_bytes"] is None for r in row["memory"])  # no CUDA allocator on CPU
        layout = G.layout_text(row["stages"], row["data_parallel"])  # "2", or "2, d = 2" for two pipelines
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {row['schedule']} | {layout} |"))
        assert f"| {R.num(row['bubble_device'])} | {R.num(row['bubble_wall'])} |" in line
        if row["schedule"] == "gpipe":  # the formula at the run's own p and m
            p, m_ = row["stages"], row["microbatches"]
            assert row["bubble_formula"] == pytest.approx(theory.gpipe_bubble_fraction(p, m_))
    assert len({r["bubble_device"] for r in rows}) > 1  # measured, not one constant


@pytest.mark.slow
def test_with_a_gpu_the_full_size_runs_the_gpu_part_first_and_its_report_is_written_before_the_cpu_part(
        monkeypatch, tmp_path):
    # No GPU here: the GPU's presence and both sections' runs are stand-ins; what is tested is
    # the order, the size, and the interim report a command stopped during the CPU part leaves.
    seen = []

    def section(device, size, schedules, budget, out, runtime="engine"):
        seen.append((device, size, runtime))
        if device == "cpu" or runtime == "torch":
            with open(tmp_path / "report.json") as f:
                interim = json.load(f)
            assert interim["complete"] is False and interim["passed"] is False
            assert [r["schedule"] for r in interim["sections"][0]["rows"]] == ["1f1b"]
            assert "an interim report" in (tmp_path / "report.md").read_text()
        return G.Section(device, None, (G.row_from_result(fake_result(device), f"runs/{device}.json"),), runtime)

    monkeypatch.setattr(G, "cuda_missing", lambda: None)
    monkeypatch.setattr(G, "gpu_info", lambda: G.GpuInfo("H100", 80.0, 1, "12.4"))
    monkeypatch.setattr(G, "run_section", section)
    report = G.run_check(str(tmp_path), quick=False, budget_s=60.0)
    assert seen == [("cuda", G.FULL, "engine"), ("cuda", G.FULL, "torch"), ("cpu", G.FULL, "engine")]
    assert [(s.device, s.runtime) for s in report.sections] == [("cuda", "engine"), ("cpu", "engine"),
                                                                  ("cuda", "torch")]
    assert report.complete and report.passed and report.size_note == "full"


def test_a_section_stops_after_two_failures_in_a_row_and_nothing_starts_past_the_budget(monkeypatch, tmp_path):
    import pipelab.engine.runtime.launch
    from pipelab.engine.runtime.rank_processes import RunFailed
    calls = []

    def failing_run(config):
        calls.append((config.schedule, config.stages, config.device, config.check))
        raise RunFailed("rank 0 failed: RuntimeError: no kernel image")

    monkeypatch.setattr(pipelab.engine.runtime.launch, "run", failing_run)
    section = G.run_section("cuda", G.QUICK, ("1f1b", "gpipe", "zb-h1"), G.Budget(60.0), str(tmp_path))
    assert calls == [("1f1b", 2, "cuda", True), ("gpipe", 2, "cuda", True)]  # a GPU that breaks spends no more
    assert [r.status for r in section.rows] == ["failed", "failed"] + ["not run"] * 5
    assert section.rows[3].layout == "2, d = 2"  # the data-parallel run of 1F1B, right after p = 2
    assert "no kernel image" in section.rows[0].reason and not section.passed
    spent = G.run_section("cpu", G.QUICK, ("1f1b",), G.Budget(G.MIN_RUN_S / 2), str(tmp_path))
    assert len(calls) == 2 and all("time budget" in r.reason for r in spent.rows)


def breakdown(activations, counted):
    parts = dict(parameters=MIB, gradients=MIB, optimizer_state=MIB, check_reference=MIB, messages_and_inputs=0,
                 stage_outputs=0, library_workspace=2 * MIB, setup_other=0, temporaries=MIB)
    return dict(peak=sum(parts.values()) + activations, at="F stage 0, micro-batch 3, step 2", **parts,
                activations=activations, activations_counted=counted)


def test_the_memory_breakdown_names_each_part_and_says_where_activations_agree():
    row = G.row_from_result(fake_result(), "runs/x.json")
    memory = (G.MemoryRow(0, 2 * MIB, 9 * MIB, breakdown(2 * MIB, 2 * MIB)),
              G.MemoryRow(1, 2 * MIB, 9 * MIB, breakdown(3 * MIB, 2 * MIB)))  # 50 % off: does not agree
    md = G.breakdown_md([(row, m) for m in memory])
    assert "agree within 10% on 1 of 2 ranks" in md
    assert ("| 1f1b | 2 | 0 | 9.00 MiB | 1.00 MiB | 1.00 MiB | 1.00 MiB | 1.00 MiB | 0.00 MiB | 0.00 MiB | 2.00 MiB "
            "| 0.00 MiB | 2.00 MiB / 2.00 MiB | yes | 1.00 MiB | F stage 0, micro-batch 3, step 2 |") in md
    assert "| 3.00 MiB / 2.00 MiB | NO |" in md


def test_torchs_runtime_section_lists_its_runs_and_what_its_csv_cannot_take_without_failing():
    ran = G.RunRow(**{**vars(G.row_from_result(fake_result(), "runs/cuda-torch-1f1b-p2.json")), "runtime": "torch"})
    refused = G.Unfinished("cuda", "zb-v", 2, failed=False, reason="torch's CSV cannot place it", refused=True)
    section = G.Section("cuda", None, (ran, refused), runtime="torch")
    md = G.torch_md(section)
    assert "| 1f1b | 2 | 0.250 | 0.300 | 10.0 ms | passed (1.0e-06 <= 1e-04) | 3.00 MiB, 3.00 MiB |" in md
    assert "| zb-v | 2 | not run |" in md and "torch's CSV cannot place it" in md
    assert section.passed  # a schedule the runtime cannot take is no failure of the check
    assert not G.Section("cuda", None, (G.Unfinished("cuda", "gpipe", 2, failed=True, reason="boom"),)).passed
    report = G.Report(machine={}, cores=2, gpu=None, size=G.QUICK, size_note="", seconds=1.0, budget_s=1.0,
                      sections=(G.Section("cuda", "no GPU"), G.Section("cpu", None, ()), section))
    assert "## 2. torch's runtime on the GPU" in G.report_md(report) and report.passed


@pytest.mark.slow
def test_one_part_runs_that_section_alone_and_says_the_others_were_not_asked_for(monkeypatch, tmp_path):
    seen = []

    def section(device, size, schedules, budget, out, runtime="engine"):
        seen.append((device, runtime))
        return G.Section(device, None, (G.row_from_result(fake_result(device), f"runs/{device}.json"),), runtime)

    monkeypatch.setattr(G, "cuda_missing", lambda: None)
    monkeypatch.setattr(G, "gpu_info", lambda: None)
    monkeypatch.setattr(G, "run_section", section)
    report = G.run_check(str(tmp_path), quick=False, budget_s=60.0, part="torch")
    assert seen == [("cuda", "torch")]
    assert [s.skipped for s in report.sections] == ["not asked for (--part torch)"] * 2 + [None]


def test_the_engine_also_runs_data_parallel_layouts_and_torchs_runtime_does_not():
    runs = G.layouts(("1f1b", "gpipe", "zb-v"), "engine")
    assert runs == [("1f1b", 2, 1), ("gpipe", 2, 1), ("zb-v", 2, 1), ("1f1b", 2, 2), ("zb-v", 2, 2),
                    ("1f1b", 4, 1), ("gpipe", 4, 1), ("zb-v", 4, 1)]  # d = 2 before the budget reaches p = 4
    assert all(d == 1 for _, _, d in G.layouts(("1f1b",), "torch"))


@pytest.mark.parametrize("replica_diff, passed, says", [
    (None, True, "passed (0.0e+00 <= 1e-04)"),
    (0.0, True, "replicas bit-identical"),
    (1e-6, False, "replicas DIFFER"),   # within the tolerance, but replicas that drift apart are a bug
])
def test_replicas_must_stay_bit_identical(replica_diff, passed, says):
    from types import SimpleNamespace as NS
    check = NS(grad_max_rel_diff=0.0, weight_max_rel_diff=0.0, losses_max_rel_diff=0.0,
               replica_weight_max_diff=replica_diff)
    row = G.check_row(check, "cuda")
    assert row.passed is passed and says in G.check_text(row)


@pytest.mark.parametrize(("allocator", "ours", "agree"), [
    # allocator's share  our count   within 10 %
    (110 * KIB,           100 * KIB,  True),   # 10 % above: the limit agrees
    (90 * KIB,            100 * KIB,  True),   # 10 % below
    (111 * KIB,           100 * KIB,  False),  # just past it
    (150 * KIB,           100 * KIB,  False),  # the last stage's extra buffer, as on the H200
    (0,                   0,          True),   # nothing held, nothing counted
])
def test_a_ranks_activation_share_agrees_within_ten_percent_of_our_count(allocator, ours, agree):
    assert G.activations_agree(breakdown(allocator, ours)) is agree
