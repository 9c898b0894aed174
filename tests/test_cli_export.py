"""``pipelab export``: good input writes torch's CSV, bad input one line and exit 2."""

import subprocess
import sys

import pytest

from pipelab.engine.cli.main import main
from pipelab.engine.schedules import build_schedule
from pipelab.engine.torch_bridge.csv_format import export_csv, import_csv


def test_export_writes_the_schedule_torch_reads(tmp_path, capsys):
    out = tmp_path / "zbv.csv"
    assert main(["export", "--schedule", "zb-v", "--stages", "4", "--microbatches", "8", "--format", "torch-csv",
                 "--out", str(out)]) == 0
    expected = build_schedule("zb-v", 4, 8)
    assert out.read_text() == export_csv(expected)
    assert import_csv(out.read_text()).actions == expected.actions
    assert str(out) in capsys.readouterr().err  # says where it went, on stderr: stdout stays the CSV's


def test_export_without_out_prints_the_csv(capsys):
    assert main(["export", "--schedule", "interleaved", "--stages", "2", "--microbatches", "4", "--chunks", "2"]) == 0
    assert capsys.readouterr().out == export_csv(build_schedule("interleaved", 2, 4, 2))


@pytest.mark.parametrize("suffix", [".txt", ".csv"])
def test_export_a_custom_schedule_in_our_text_or_torchs_csv(tmp_path, capsys, suffix):
    custom = tmp_path / f"mine{suffix}"
    custom.write_text("rank 0: 0F0 0F1 0B0 0B1\nrank 1: 1F0 1B0 1F1 1B1\n" if suffix == ".txt"
                      else "0F0,0F1,,0B0,0B1\n1F0,1B0,1F1,1B1\n")
    assert main(["export", "--custom", str(custom)]) == 0
    assert capsys.readouterr().out == "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "pipelab", "export", *args], capture_output=True, text=True,
                          timeout=120)


BAD = [
    # arguments, words the one line must say
    (["--schedule", "pipedream", "--stages", "2", "--microbatches", "4"], "U actions"),
    (["--schedule", "pipedream-2bw", "--stages", "2", "--microbatches", "4"], "only synchronous schedules"),
    (["--schedule", "gpipe2", "--stages", "2", "--microbatches", "4"], "unknown schedule"),
    (["--schedule", "gpipe", "--stages", "2"], "needs --microbatches"),
    (["--schedule", "interleaved", "--stages", "4", "--microbatches", "6"], "multiple of stages"),
    (["--schedule", "gpipe", "--stages", "2", "--microbatches", "2", "--format", "json"], "invalid choice"),
    (["--custom", "/no/such/file.csv"], "cannot read --custom"),
    (["--schedule", "custom"], "--custom FILE"),
]


@pytest.mark.parametrize("args,words", BAD)
def test_bad_input_is_one_line_and_exit_2(args, words, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


@pytest.mark.slow
def test_a_bad_custom_cell_is_one_line_from_the_real_command(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0F0,0SEND_F0,0B0\n")
    result = run_cli("--custom", str(bad))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "compute-only" in result.stderr


def test_an_unsound_custom_schedule_names_the_rule(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("0B0 0F0\n")
    with pytest.raises(SystemExit) as exc:
        main(["export", "--custom", str(bad)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "before its forward" in err
