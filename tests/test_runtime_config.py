"""RunConfig.runtime (issue 28): who runs the schedule, validated with the other settings in
one line, kept through the result JSON, and absent from older results (read as ours)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from pipelab.engine.config import RUNTIMES, ConfigError, RunConfig
from pipelab.engine.errors import message_of
from pipelab.lessons import i18n
from tests.engine_runs import SMALL
from tests.test_schema import documented_fields

BASE = dict(schedule="1f1b", stages=2, microbatches=4, **SMALL)


def test_the_default_is_our_engine_and_both_runtimes_validate():
    assert RunConfig().runtime == "engine" and RUNTIMES == ("engine", "torch")
    for runtime in RUNTIMES:
        assert RunConfig(**BASE, runtime=runtime).check_values().num_ranks == 2


def test_an_unknown_runtime_is_one_line():
    with pytest.raises(ConfigError) as err:
        RunConfig(**BASE, runtime="jax").check_values()
    assert str(err.value) == "unknown runtime 'jax'; valid: engine, torch"


@pytest.mark.parametrize("device", ["cpu", "cuda", "auto"])
def test_torchs_runtime_takes_every_device(device):
    """A GPU is a device torch's runtime runs on too (engine/torch_bridge/host_staging.py)."""
    schedule = RunConfig(**BASE, device=device).with_(runtime="torch").check_values()
    assert schedule.num_ranks == 2


@pytest.mark.parametrize("settings, code", [
    (dict(overlap_steps=True), "torch_overlap"), (dict(recompute=True), "torch_recompute"),
    (dict(clip_grad_norm=1.0), "torch_clip"),
    (dict(schedule="pipedream"), "torch_csv_async"), (dict(schedule="pipedream-2bw"), "torch_csv_async"),
])
def test_what_torchs_runtime_refuses_is_one_coded_line_in_both_languages(settings, code):
    config = RunConfig(**{**BASE, **settings})
    config.check_values()  # our engine takes it
    with pytest.raises(ConfigError) as err:
        config.with_(runtime="torch").check_values()
    message = message_of(err.value)
    assert message.code == code and "\n" not in message
    chinese = i18n.error_text("zh", message)
    assert chinese != str(message) and "\n" not in chinese
    for lang in ("en", "zh"):  # a page says the setting as its knob does: no command-line flag
        assert "--" not in i18n.error_text(lang, message), i18n.error_text(lang, message)


def test_the_field_travels_through_the_result_json_and_older_results_read_as_ours():
    config = RunConfig(**BASE, runtime="torch")
    assert RunConfig(**json.loads(json.dumps(config.to_dict()))) == config
    old = config.to_dict()
    del old["runtime"]  # a result saved before the field existed
    assert RunConfig(**old).runtime == "engine"


def test_docs_results_md_documents_every_config_field_in_order():
    assert documented_fields()["config"] == [f.name for f in fields(RunConfig)]


def test_a_run_on_torchs_runtime_says_so_in_its_settings_and_in_what_changed():
    from pipelab.app.views.settings_diff import changed_settings, settings_text
    torch = RunConfig(**BASE, runtime="torch")
    assert settings_text(torch).endswith(", on torch's runtime")
    assert settings_text(torch, lang="zh").endswith("，在 torch 的运行时上")
    assert "runtime" not in settings_text(RunConfig(**BASE))
    assert changed_settings(RunConfig(**BASE), torch) == "runtime"
