"""The playground offers a validated custom schedule as torch's CSV (docs/torch.md)."""

import pytest

from tests.test_app import open_page

# Opening the app starts the server-wide runner, which warms the engine's forkserver: a process.
pytestmark = pytest.mark.slow


def downloads(at):
    return [el for el in at.get("download_button") if "torch_csv" in str(el.proto.id)]


def test_a_valid_custom_schedule_downloads_as_torch_csv():
    at = open_page("playground")
    at.button(key="playground:validate").click().run()
    assert not at.exception and not at.error
    (button,) = downloads(at)
    assert "torch CSV" in button.proto.label and "pipeline_parallel_schedule_csv" in button.proto.help


def test_an_update_inside_the_step_says_why_there_is_no_csv():
    at = open_page("playground")
    at.text_area(key="playground:custom").set_value("rank 0: 0F0 0B0 0U0\n")
    at.button(key="playground:validate").click().run()
    assert not at.exception and not downloads(at)
    assert any("U actions" in c.value for c in at.caption)
