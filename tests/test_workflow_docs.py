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
    assert commands == ['python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test,nvmmh]"',
                        "snakemake --cores all", "pytest"]
    for command in commands:
        assert command in ci, command


def _subparser(command: str):
    from gemmperf.app.cli import build_parser

    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[command]


# the KernelConfig fields beside family, dtype and mode, and the flag that sets each
CONFIG_FLAGS = {"tile_m": "--tile", "tile_n": "--tile", "tile_k": "--tile", "stages": "--stages",
                "cluster_m": "--cluster", "cluster_n": "--cluster", "persistent": "--persistent",
                "raster": "--raster", "group_m": "--group-m", "epilogue": "--epilogue", "schedule": "--schedule",
                "persistent_ctas": "--persistent-ctas", "split_k": "--split-k", "stream_k": "--stream-k"}


def test_every_configuration_dimension_is_a_documented_flag_and_column():
    from gemmperf.problem import CONFIG_COLUMNS

    assert set(CONFIG_FLAGS) == set(CONFIG_COLUMNS) - {"family", "dtype", "mode"}
    commands = section("Commands")
    for command in ("predict", "simulate", "optimize"):
        flags = {s for a in _subparser(command)._actions for s in a.option_strings}
        pins = set(CONFIG_FLAGS.values()) - ({"--persistent", "--persistent-ctas"} if command == "optimize" else set())
        assert pins <= flags, (command, pins - flags)
    for flag in set(CONFIG_FLAGS.values()):
        assert f"`{flag}" in commands, flag
    # the configurations CSV's columns, as README lists them
    listed = re.search(r"A configurations CSV has `m,n,k` and any of\n`([^`]+)`\n`([^`]+)`", commands)
    assert listed and (listed[1] + listed[2]).split(",") == list(CONFIG_COLUMNS)


def test_the_dtypes_list_is_documented_and_the_schema_holds_the_kernels_dtypes():
    import yaml

    from gemmperf.bench.collect import KERNEL_DTYPES

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert schema["$defs"]["dtype"]["pattern"] == "^(" + "|".join(KERNEL_DTYPES) + ")$"
    assert schema["properties"]["dtypes"]["items"] == {"$ref": "#/$defs/dtype"}
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert config["dtypes"] == ["bf16"] and "dtype" not in config
    text = section("The workflow's configuration")
    assert "`dtypes`" in text and "`results/<gpu>/<dtype>/`" in text and "`results/<gpu>/shipped/<dtype>/`" in text


def test_the_schema_holds_collects_presets_and_sample_defaults():
    """One preset list in the schema, the collector's own; the sample preset's defaults
    are the collector's, so the workflow and `gemmperf collect` draw the same sample."""
    import yaml

    from gemmperf.bench.collect import PRESETS, SAMPLE_COUNT, SAMPLE_SEED

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    collect = schema["properties"]["collect"]["properties"]
    assert schema["$defs"]["preset"]["enum"] == list(PRESETS)
    assert collect["preset"]["$ref"] == collect["presets"]["additionalProperties"]["$ref"] == "#/$defs/preset"
    sample = collect["sample"]["properties"]
    assert (sample["count"]["default"], sample["seed"]["default"]) == (SAMPLE_COUNT, SAMPLE_SEED)
