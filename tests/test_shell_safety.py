"""No shell reachable from data: config values and GPU folder names that would be shell
commands stop the workflow at its start with one line, never run; every field of every
rule's shell command is quoted; the workflow checks its inputs before any rule runs; a
rule that fails shows the command's one-line error and names its log.

Each workflow case is one `snakemake` process on a temporary folder (about 2 s: the
parse, no rule runs unless the case says so).
"""

from __future__ import annotations

import re
import shutil
import string
import subprocess
from pathlib import Path

import pytest
import yaml
from test_incremental import copy_config

from gemmperf.app.plan import check_config, shipped_gpus
from gemmperf.errors import UserError

SNAKEMAKE = shutil.which("snakemake")
REPO = Path(__file__).resolve().parent.parent
needs_snakemake = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")
INJECTED = "touch X"  # every hostile value below would create a file X if it reached a shell
SNAKEMAKE_CHATTER = ("Using workflow specific profile", "Config file ")


@pytest.fixture
def work(tmp_path) -> Path:
    copy_config(tmp_path)
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "tiny.csv").write_text("m,n,k\n256,256,256\n")
    (tmp_path / "lists" / "held.csv").write_text("m,n,k\n512,512,512\n")
    write_config(tmp_path)
    return tmp_path


def write_config(work: Path, **changes) -> None:
    cfg = {"probe": False, "gpus": ["auto"], "testlists": ["tiny", "held"], "heldout_testlist": "held",
           "testlist_dir": str(work / "lists"), "families": ["simt"], "models": ["sol"]}
    cfg.update(changes)
    (work / "test-config.yaml").write_text(yaml.safe_dump(cfg))


def snakemake(work: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "1", *args,
           "--configfile", str(work / "test-config.yaml")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=work, env=env)


def the_one_line(run: subprocess.CompletedProcess) -> str:
    """The workflow's message: exactly one line besides Snakemake's own preamble."""
    lines = [ln for ln in (run.stdout + run.stderr).splitlines()
             if ln.strip() and not ln.startswith(SNAKEMAKE_CHATTER)]
    assert len(lines) == 1, run.stdout + run.stderr
    assert "Traceback" not in lines[0]
    return lines[0]


def no_file_x(work: Path) -> bool:
    return not any(p.name == "X" for p in work.rglob("X"))


@needs_snakemake
@pytest.mark.parametrize("key, value, named", [
    ("heldout_testlist", "llm; touch X #", "config heldout_testlist = 'llm; touch X #'"),
    ("testlist_dir", "lists; touch X #", "config testlist_dir = 'lists; touch X #'"),
    ("testlists", ["tiny", "held; touch X #"], "config testlists[1] = 'held; touch X #'"),
    ("fallback_gpu", "x;touch X;y", "config fallback_gpu = 'x;touch X;y'"),
    ("gpus", ["h100 backup"], "config gpus[0] = 'h100 backup'"),
    ("collect", {"presets": {"tiny$(touch X)": "small"}}, "config collect.presets"),
    ("collect", {"sample": {"counts": {"tiny$(touch X)": 4}}}, "config collect.sample.counts"),
    ("dtypes", ["bf16", "fp8; touch X #"], "config dtypes[1] = 'fp8; touch X #'"),
    ("dtype", "$(touch X)", "config dtype = '$(touch X)'"),
])
def test_a_config_value_with_shell_characters_stops_the_workflow_in_one_line(work, key, value, named):
    write_config(work, **{key: value})
    line = the_one_line(run := snakemake(work, "-n"))
    assert run.returncode == 2 and line.startswith(f"gemmperf workflow: {named}"), line
    assert "must be" in line  # says what the value should be
    assert no_file_x(work)


@needs_snakemake
def test_a_hostile_config_value_never_reaches_a_real_run(work):
    write_config(work, heldout_testlist="llm; touch X #")
    run = snakemake(work, "results/h100-sxm5-80gb/hardware.json")
    assert run.returncode == 2 and "heldout_testlist" in the_one_line(run)
    assert no_file_x(work) and not (work / "results").exists()


@needs_snakemake
@pytest.mark.parametrize("folder, dry", [("x;touch X;y", True), ("x;touch X;y", False), ("h100 backup", True)])
def test_a_gpu_folder_that_is_not_a_slug_is_refused_with_one_line(work, folder, dry):
    (work / "results" / folder / "shipped").mkdir(parents=True)
    run = snakemake(work, *(["-n"] if dry else []))
    line = the_one_line(run)
    assert run.returncode == 2 and f"results/{folder}/shipped" in line and repr(folder) in line, line
    assert no_file_x(work)
    # nothing was run: no folder named after a word of the name ("h100", "backup", "y")
    assert sorted(p.name for p in (work / "results").iterdir()) == [folder]


def test_shipped_gpus_are_slugs(tmp_path):
    for name in ("h100-sxm5-80gb", "b200.v2", "gb_1"):
        (tmp_path / name / "shipped").mkdir(parents=True)
    (tmp_path / "no-shipped-folder").mkdir()
    assert shipped_gpus(tmp_path) == ["b200.v2", "gb_1", "h100-sxm5-80gb"]
    (tmp_path / "Bad Name" / "shipped").mkdir(parents=True)
    with pytest.raises(UserError, match="'Bad Name' is not a slug"):
        shipped_gpus(tmp_path)


# ------------------------------------------------------------------- every field quoted

# fields whose values the workflow itself writes (numbers, fixed flags), never data
UNQUOTED_OK = {"threads", "params.residual"}


def shell_fields(path: Path) -> list[tuple[int, str]]:
    """(line, field) for every replacement field in the shell strings of a rule file."""
    out = []
    in_shell = False
    for no, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.strip()
        if stripped == "shell:":
            in_shell = True
            continue
        if in_shell and stripped and not stripped.startswith(('"', "logged(", ")")):
            in_shell = False
        if in_shell:
            for text in re.findall(r'"((?:[^"\\]|\\.)*)"', line):
                for _, field, spec, _ in string.Formatter().parse(text):
                    if field is not None:
                        out.append((no, f"{field}:{spec}" if spec else field))
    return out


RULE_FILES = sorted((REPO / "workflow" / "rules").glob("*.smk"))


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_every_field_of_every_shell_command_is_quoted(path):
    fields = shell_fields(path)
    if path.name != "common.smk":
        assert fields, f"{path.name}: no shell command found (the parser above needs updating)"
    bare = [(no, f) for no, f in fields if not f.endswith(":q") and f not in UNQUOTED_OK]
    assert not bare, f"{path.name}: unquoted fields (line, field): {bare}"


# ----------------------------------------------------------------- inputs checked at start


def test_the_config_names_testlists_and_gpus_that_exist(work):
    cfg = yaml.safe_load((work / "test-config.yaml").read_text())
    cfg |= {"dtypes": ["bf16", "fp8"], "collect": {"presets": {}}, "fallback_gpu": "h100-sxm5-80gb"}
    check_config(cfg, work / "results")  # the fixture's config is fine
    for change, message in [
        ({"heldout_testlist": "nosuch"}, "config heldout_testlist = 'nosuch': not one of testlists (tiny, held)"),
        ({"collect": {"presets": {"nosuch": "small"}}}, "config collect.presets: 'nosuch' is not a testlist"),
        ({"collect": {"sample": {"counts": {"nosuch": 4}}}},
         "config collect.sample.counts: 'nosuch' is not a testlist"),
        ({"fallback_gpu": "bogus"}, "config fallback_gpu = 'bogus': not a catalog GPU or shipped data"),
        ({"testlists": ["tiny", "nosuch"]}, "config testlists: 'nosuch' has no file"),
        ({"dtype": "fp16"}, "config dtype = 'fp16' and dtypes = ['bf16', 'fp8']: give only dtypes"),
    ]:
        with pytest.raises(UserError) as err:
            check_config({**cfg, **change}, work / "results")
        assert str(err.value).startswith(message) and "\n" not in str(err.value), err.value
    check_config({**cfg, "heldout_testlist": None}, work / "results")  # null: nothing held out
    check_config({**cfg, "collect": {"presets": {"held": "small"}}}, work / "results")


@needs_snakemake
def test_a_malformed_testlist_stops_the_workflow_at_start_with_file_line_and_value(work):
    (work / "lists" / "held.csv").write_text("m,n,k\n512,512,512\n1e99x,2,3\n")
    run = snakemake(work, "-n")
    line = the_one_line(run)
    assert run.returncode == 2 and "held.csv:3" in line and "'1e99x'" in line, line


FAILING_GEMMPERF = """#!/bin/sh
echo "some progress on stdout"
echo "gemmperf $1: results/x.json:4: column sms = 'many': not an integer" >&2
exit 2
"""


@needs_snakemake
def test_a_failing_rule_shows_the_commands_one_line_and_names_its_log(work, tmp_path_factory):
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "gemmperf").write_text(FAILING_GEMMPERF)
    (bin_dir / "gemmperf").chmod(0o755)
    import os

    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = snakemake(work, "results/h100-sxm5-80gb/hardware.json", env=env)
    out = run.stdout + run.stderr
    assert run.returncode != 0
    assert "gemmperf hardware: results/x.json:4: column sms = 'many': not an integer" in out, out
    assert "logs/h100-sxm5-80gb/hardware.log" in out
    assert "some progress" not in out  # the command's other output stays in the log
    assert "column sms" in (work / "logs" / "h100-sxm5-80gb" / "hardware.log").read_text()
