"""The README is one screen for a newcomer: its quick start is the two commands, it stays short,
and every file it links to exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_readme_is_under_a_thousand_words():
    assert len(README.split()) < 1000, f"README.md has {len(README.split())} words"


def test_the_quick_start_is_the_two_commands_and_ci_runs_the_second():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```bash", 1)[1].split("```", 1)[0]
    assert [line.split()[0] for line in block.strip().splitlines()] == ["bin/serve", "bin/test"]
    assert "bin/test" in (ROOT / ".ci" / "run").read_text()


def test_every_linked_file_exists():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert links and missing == []
