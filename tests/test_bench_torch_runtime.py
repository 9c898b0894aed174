"""bench/torch_runtime.py's pure parts: both runtimes get the same CSV, the table reads right."""

import pytest

from bench.torch_runtime import SIDES, configs, table_md
from pipelab.engine.config import RunConfig


def test_every_side_runs_the_same_exported_order():
    runs = configs("zb-v", 2, 4, 3, {"model": "mlp", "layers": 4})
    built = [config.check_values() for config in runs.values()]
    assert all(s.actions == built[0].actions and s.stage_to_rank == built[0].stage_to_rank for s in built)
    assert runs[SIDES[1]].transport == "torch" and runs[SIDES[0]].transport == RunConfig().transport


def test_table_gives_medians_ratio_and_errors():
    row = {side: {"step": [0.1, 0.3, 0.2], "bubble": [0.2, 0.2, 0.2]} for side in SIDES}
    row["torch"]["step"] = [0.4, 0.4, 0.4]
    text = table_md({"1f1b": row, "gpipe": {**row, "error": "RunFailed: rank 1 failed"}})
    one_f_one_b = next(line for line in text.splitlines() if line.startswith("| 1f1b"))
    assert "200.0 ms, 0.200" in one_f_one_b and one_f_one_b.rstrip(" |").endswith("2.00")
    assert "RunFailed: rank 1 failed" in text


def test_the_report_names_the_command_that_wrote_it():
    from bench.torch_runtime import provenance
    line = provenance("bench/TORCH_RUNTIME.md")
    assert line.startswith("Written by `bench/torch_runtime.py --out bench/TORCH_RUNTIME.md` on ") and "torch " in line


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--steps", "2"]])
def test_too_few_rounds_or_steps_is_a_one_line_error_before_anything_runs(argv, capsys):
    # --rounds 0 printed a table of dashes; --steps at the warm-up's 2 measured the warm-up.
    from bench.torch_runtime import main
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert "--steps must be above 2 (the warm-up) and --rounds at least 1" in capsys.readouterr().err
