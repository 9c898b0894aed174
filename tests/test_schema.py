"""The result JSON (engine/results/schema.py, docs/results.md): a run reads back as it was written,
older results still open, newer ones are refused in one line, and every field is documented
under the name the JSON gives it."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from pipelab.engine.config import RunConfig
from pipelab.engine.results.metrics import RunMetrics, StageCosts, StepCheckCounts
from pipelab.engine.results.records import GradientCheck, RankMemory
from pipelab.engine.results.result import RunResult
from pipelab.engine.results.schema import SCHEMA_VERSION, ResultSchemaError
from pipelab.engine.results.timeline import Event
from tests.engine_runs import measured

DOC = Path(__file__).resolve().parent.parent / "docs" / "results.md"


def small_run() -> RunResult:
    """A real run with every optional part: the gradient check and the step check."""
    return measured("1f1b", 2, 4, check=True, clip_grad_norm=100.0)


def through_json(data: dict) -> dict:
    return json.loads(json.dumps(data))


def documented_fields() -> dict[str, list[str]]:
    """docs/results.md's tables: section ("top level", or the backticked name in its
    heading) -> the field names in its first column, in order."""
    sections: dict[str, list[str]] = {}
    section = None
    for line in DOC.read_text().splitlines():
        heading = re.match(r"#{2,3} (.*)", line)
        if heading:
            name = re.search(r"`(\w+)`", heading.group(1))
            section = name.group(1) if name else heading.group(1).strip().lower()
        row = re.match(r"\| `(\w+)` \|", line)
        if row and section is not None:
            sections.setdefault(section, []).append(row.group(1))
    return sections


@pytest.mark.slow
def test_a_run_reads_back_equal_to_itself():
    result = small_run()
    written = through_json(result.to_dict())
    again = RunResult.from_dict(written)
    assert again.metrics == result.metrics
    assert again.memory == result.memory
    assert again.check == result.check and again.check is not None
    assert again.metrics.step_check == result.metrics.step_check and again.metrics.step_check is not None
    assert again.timeline.events == result.timeline.events
    assert again.simulated.events == result.simulated.events
    assert (again.losses, again.layer_ranges, again.device, again.transport, again.microbatch_losses) == (
        result.losses, result.layer_ranges, result.device, result.transport, result.microbatch_losses)
    assert again.config == result.config and again.schedule.actions == result.schedule.actions
    assert through_json(again.to_dict()) == written
    assert written["schema_version"] == SCHEMA_VERSION


# The fields a result written before each was added lacks (the first results had none of these).
NEWER = {
    "metrics": ("simulated_bubble_fraction_per_action_costs", "simulated_bubble_fraction_per_step_costs",
                "simulated_barrier_bubble_fraction",
                "bubble_breakdown", "overlapped_steps", "device_step_starts_per_device",
                "simulated_step_time_per_action_costs_s", "cpu_per_step_s", "cpu_times_s",
                "peak_held_microbatches_per_device", "simulated_peak_activation_bytes_per_device", "node", "node_cores",
                "step_check", "device_step_times_s", "device_bubble_fraction_per_step",
                "device_steady_bubble_fraction_per_step",
                "launch_id", "placement"),
    "memory": ("peak_activation_bytes_per_step", "cuda_peak_bytes", "message_buffer_bytes", "cuda_breakdown"),
    "check": ("weight_max_rel_diff", "loss", "reference_loss", "loss_rel_diff", "losses", "reference_losses",
              "losses_max_rel_diff", "replica_weight_max_diff"),
    "top level": ("schema_version", "transport", "data_parallel", "stage_replicas"),
}


def old_format(data: dict) -> dict:
    old = copy.deepcopy(data)
    for key in NEWER["top level"]:
        del old[key]
    for key in NEWER["metrics"]:
        del old["metrics"][key]
    for memory in old["memory"].values():
        for key in NEWER["memory"]:
            del memory[key]
    for key in NEWER["check"]:
        old["check"].pop(key, None)  # a field the run had no figure for (None) is not written
    return old


@pytest.mark.slow
def test_a_result_saved_before_versions_and_newer_fields_still_opens():
    from pipelab.app.runner.stored_run import headline_of
    from pipelab.app.views.results import summary_rows
    from pipelab.lessons import claims
    result = small_run()
    old = RunResult.from_dict(old_format(through_json(result.to_dict())))
    for key in NEWER["metrics"]:
        assert getattr(old.metrics, key) is None, key
    assert all(getattr(m, key) is None for m in old.memory.values() for key in NEWER["memory"])
    assert old.check.grad_max_rel_diff == result.check.grad_max_rel_diff and old.check.losses is None
    assert old.transport is None and old.microbatch_losses == result.microbatch_losses
    # What the older fields say is unchanged, and the pages' readers take the missing ones.
    assert old.metrics.device_bubble_fraction == result.metrics.device_bubble_fraction
    assert old.metrics.costs_s == result.metrics.costs_s
    assert headline_of(old) == headline_of(result)
    assert summary_rows([("old", old)]) == summary_rows([("old", result)])
    assert claims.largest_effect(old.metrics) == ""  # no breakdown, no why


@pytest.mark.slow
def test_a_version_1_result_reads_its_renamed_fields_under_their_new_names():
    from pipelab.engine.results.schema import RENAMED_METRICS
    # Version 2 renamed peak_activations_per_device (a count of held stage-micro-batches, not bytes).
    result = small_run()
    data = through_json(result.to_dict())
    data["schema_version"] = 1
    data["metrics"]["peak_activations_per_device"] = data["metrics"].pop("peak_held_microbatches_per_device")
    for old_name, new_name in RENAMED_METRICS[3].items():  # and version 3's clock-less names, as version 1 had
        if new_name in data["metrics"]:
            data["metrics"][old_name] = data["metrics"].pop(new_name)
    old = RunResult.from_dict(data)
    assert old.metrics == result.metrics and old.metrics.peak_held_microbatches_per_device
    assert through_json(old.to_dict())["schema_version"] == SCHEMA_VERSION == 3  # written back in this layout
    # In this layout the old name is no field: it is not read as one.
    data["schema_version"] = 2
    assert RunResult.from_dict(data).metrics.peak_held_microbatches_per_device is None


@pytest.mark.slow
def test_a_version_2_result_whose_time_fields_named_no_clock_reads_back_under_the_new_names():
    from pipelab.engine.results.schema import RENAMED_METRICS
    result = small_run()
    data = through_json(result.to_dict())
    for old, new in RENAMED_METRICS[3].items():
        if new in data["metrics"]:
            data["metrics"][old] = data["metrics"].pop(new)
    data["schema_version"] = 2
    again = RunResult.from_dict(data)
    assert again.metrics == result.metrics
    assert again.metrics.wall_step_time_s == result.metrics.wall_step_time_s > 0


@pytest.mark.slow
def test_a_result_missing_a_field_every_result_has_is_refused_in_one_line():
    data = through_json(small_run().to_dict())
    del data["metrics"]["device_bubble_fraction"]
    with pytest.raises(ResultSchemaError, match=r"^saved result has no metrics field 'device_bubble_fraction'; "
                                                r"it cannot be read$"):
        RunResult.from_dict(data)


@pytest.mark.parametrize("version, message", [
    (SCHEMA_VERSION + 1, f"result schema_version {SCHEMA_VERSION + 1} is newer than this PipeLab reads (up to "
                         f"{SCHEMA_VERSION}); update PipeLab to open it"),
    (99, f"result schema_version 99 is newer than this PipeLab reads (up to {SCHEMA_VERSION}); update PipeLab "
         "to open it"),
    ("2", "result schema_version '2' is not a whole number; it cannot be read"),
])
@pytest.mark.slow
def test_a_newer_schema_version_is_refused_in_one_line(version, message):
    data = through_json(small_run().to_dict())
    data["schema_version"] = version
    with pytest.raises(ResultSchemaError) as refused:
        RunResult.from_dict(data)
    assert str(refused.value) == message
    if version == SCHEMA_VERSION + 1:
        assert f"`{message}`" in DOC.read_text()  # the message docs/results.md quotes


@pytest.mark.slow
def test_every_json_field_is_documented_under_its_name():
    # A renamed field (in the JSON or its typed record) fails here until docs/results.md and
    # the schema version follow (docs/results.md, "Versions").
    data = through_json(small_run().to_dict())
    doc = documented_fields()
    assert doc["top level"] == list(data)
    assert doc["config"] == list(data["config"]) == [f.name for f in fields(RunConfig)]
    assert doc["events"] == list(data["events"][0]) == list(data["simulated_events"][0])
    assert doc["events"] == [f.name for f in fields(Event)]
    assert doc["metrics"] == list(data["metrics"]) == [f.name for f in fields(RunMetrics)]
    assert doc["costs_s"] == list(data["metrics"]["costs_s"]) == [f.name for f in fields(StageCosts)]
    assert doc["bubble_breakdown"] == list(data["metrics"]["bubble_breakdown"][0])
    assert doc["step_check"] == list(data["metrics"]["step_check"]) == [f.name for f in fields(StepCheckCounts)]
    assert doc["memory"] == list(data["memory"]["0"]) == [f.name for f in fields(RankMemory)]
    assert doc["check"] == [f.name for f in fields(GradientCheck)]
    # A one-pipeline run has no replicas to compare (tests/test_data_parallel.py checks a run with them).
    assert list(data["check"]) == [name for name in doc["check"] if name != "replica_weight_max_diff"]


def test_the_newer_fields_are_the_ones_with_a_default():
    # A field every saved result has must stay required; one added later must default to None.
    def defaulted(record) -> tuple[str, ...]:
        return tuple(f.name for f in fields(record) if f.default is None)
    assert defaulted(RunMetrics) == NEWER["metrics"]
    assert defaulted(RankMemory) == NEWER["memory"]
    assert defaulted(GradientCheck) == NEWER["check"]
