"""The README is the front door: it lists every command with an example, all five
models, and installs and runs exactly as CI does."""

import re
from pathlib import Path

from gemmperf.app.cli import COMMANDS
from gemmperf.models import MODELS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def test_every_command_has_a_line_and_an_example():
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z-]+)` \|[^|]+\| `(gemmperf [^`]+)` \|$",
                                                        section("Commands"), re.M)}
    assert set(rows) == set(COMMANDS), set(COMMANDS) ^ set(rows)
    for command, example in rows.items():
        assert example.startswith(f"gemmperf {command}") or command == "gpu-slot", (command, example)


def test_all_five_models_are_described():
    text = section("The five models")
    assert len(MODELS) == 5
    for model in MODELS:
        assert re.search(rf"^- `{re.escape(model)}`", text, re.M), model


def test_setup_and_test_commands_are_the_ones_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", section("Set up and run"), re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert commands == ['python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]"',
                        "snakemake --cores all", "pytest"]
    for command in commands:
        assert command in ci, command
