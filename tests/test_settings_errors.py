"""One place says which settings are allowed (issue 29): engine/config.py. The page beside its
Run button and ``pipelab run`` ask it (``settings_error``, RunConfig.check_values) and say the
same sentence for the same bad settings; neither checks a value itself. No process starts: the
command line refuses these before it launches anything."""

from __future__ import annotations

import pytest

from pipelab.app.screens import lesson_page
from pipelab.engine.cli.main import main
from pipelab.engine.config import Limits, RunConfig, settings_error

BAD_SETTINGS = [
    # command line arguments after ``pipelab run``                          the error's code
    ("--schedule 1f1b --stages 2 --microbatches 4 --model gpt --hidden 100 --heads 3", "heads"),
    ("--schedule interleaved --stages 4 --microbatches 6 --chunks 2 --layers 16", "multiple"),
    ("--schedule interleaved --stages 4 --microbatches 8 --chunks 2 --layers 4", "layers"),
    ("--schedule pipedream --stages 2 --microbatches 4 --check", "check_async"),
    ("--schedule 1f1b --stages 2 --microbatches 4 --lr 20", "lr"),
    ("--schedule 1f1b --stages 2 --microbatches 4 --runtime torch --recompute", "torch_recompute"),
    ("--schedule pipedream --stages 2 --microbatches 4 --runtime torch", "torch_csv_async"),
]


def command_line_error(args: str, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(["run", *args.split()])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pipelab: error: ") and "\n" not in err, err
    return err.removeprefix("pipelab: error: ")


def config_of(args: str) -> RunConfig:
    """The RunConfig ``pipelab run ARGS`` builds, through the command line's own parser."""
    import argparse

    from pipelab.engine.cli.main import add_schedule_args
    from pipelab.engine.config import add_run_args, config_from_args
    parser = argparse.ArgumentParser()
    add_schedule_args(parser)
    add_run_args(parser)
    parser.add_argument("--runtime", default="engine")
    return config_from_args(parser.parse_args(args.split()))


@pytest.mark.parametrize("args, code", BAD_SETTINGS)
def test_the_page_and_the_command_line_say_the_same_sentence(args, code, capsys):
    page = lesson_page.settings_error(config_of(args))
    assert page is not None and page.code == code
    assert command_line_error(args, capsys) == page


@pytest.mark.parametrize("args, code", BAD_SETTINGS)
def test_the_one_place_gives_the_error_check_values_raises(args, code):
    config = config_of(args)
    error = settings_error(config, Limits())
    assert error is not None and error.code == code
    with pytest.raises(Exception) as raised:
        config.check_values(Limits())
    assert str(raised.value) == error


def test_good_settings_have_no_error():
    assert settings_error(RunConfig(schedule="1f1b", stages=2, microbatches=4, model="mlp", layers=4)) is None


def test_too_few_layers_are_refused_before_the_stages_are_built(monkeypatch):
    config = RunConfig(schedule="interleaved", stages=8, microbatches=8, chunks=64, model="mlp", layers=8)
    monkeypatch.setattr(RunConfig, "build_schedule", lambda self: pytest.fail("built 512 stages to refuse them"))
    assert settings_error(config).code == "layers"
