"""The held-out lists' measurements and the rows a kernel fix set aside: present, tracked,
and the sweep's plan exactly. Only the configuration columns and the status are read,
never a time (a held-out list is scored once, by benchmarks/accuracy_protocol.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gemmperf.app.resolve import shipped_data_dir
from gemmperf.bench.collect import SAMPLE_SEED, tasks_for
from gemmperf.hardware import get_gpu
from gemmperf.problem import read_testlist
from gemmperf.tables import CONFIG_KEY
from scripts import load_script

REPO = Path(__file__).resolve().parent.parent
GPUS = ("h100-sxm5-80gb", "h200-sxm-141gb")
REMEASURE = load_script(REPO / "benchmarks" / "remeasure.py", "remeasure")
# configurations a shape, per (held-out list, dtype), of the sweep's plan
PLANNED = {(name, dtype): count for name, dtype, _, count in load_script(REPO / "benchmarks" / "reference_sweep.py").PLAN
           if name in ("sealed", "holdout")}
# the GPUs that measured each held-out list (holdout.csv: the H100 on 2026-12-05; the H200's to come)
MEASURED_ON = {"sealed": GPUS, "holdout": ("h100-sxm5-80gb",)}


def table_of(slug: str, name: str, dtype: str) -> Path:
    """Where a held-out list's measurements are: the first sealed list, scored on both GPUs,
    ships with the development lists; the held-out list has a folder of its own."""
    if name == "sealed":
        return REPO / shipped_data_dir(slug, dtype) / "measurements" / "sealed.csv"
    return REMEASURE.RESULTS / slug / name / dtype / f"{name}.csv"


def _rows(path: Path) -> list[dict]:
    return REMEASURE.read(path)[1]


def _key(row: dict) -> tuple:
    return tuple(str(row[c]).lower() for c in CONFIG_KEY)


def _set_aside(slug: str, table: Path) -> list[dict]:
    """The rows of ``table`` that benchmarks/remeasure.py --supersede moved out."""
    path = REMEASURE.RESULTS / slug / REMEASURE.SUPERSEDED / REMEASURE.table_name(slug, table)
    return _rows(path) if path.is_file() else []


@pytest.mark.parametrize("name, dtype", sorted(PLANNED))
@pytest.mark.parametrize("slug", GPUS)
def test_each_held_out_list_is_the_sweeps_plan_every_row_verified(slug, name, dtype):
    table = table_of(slug, name, dtype)
    if slug not in MEASURED_ON[name]:
        assert not table.exists(), f"{table} is measured: add {slug} to MEASURED_ON"
        pytest.skip(f"{slug} has not measured {name} yet")
    rows = _rows(table)
    assert rows and {r["status"] for r in rows} == {"ok"} and {r["gpu"] for r in rows} == {slug}
    planned = tasks_for(read_testlist(REPO / "testlists" / f"{name}.csv", dtype), get_gpu(slug), ["ws-hopper"],
                        dtype, "sample", (PLANNED[name, dtype], SAMPLE_SEED))
    measured = [_key(r) for r in rows + _set_aside(slug, table)]
    assert len(measured) == len(set(measured)) == len(planned)
    assert set(measured) == {_key({**t, "dtype": dtype}) for t in planned}


@pytest.mark.parametrize("slug", GPUS)
def test_no_stale_row_is_left_and_nothing_waits_set_aside(slug):
    """Every row a kernel fix made stale (remeasure.py's STALE) was measured again: the
    H200's on 2026-11-29, the H100's ten (split-K fix-up) on 2026-12-05."""
    assert REMEASURE.tables(slug)
    assert REMEASURE.stale_rows(slug) == {}
    assert not list((REMEASURE.RESULTS / slug / REMEASURE.SUPERSEDED).glob("*.csv"))


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_held_out_and_set_aside_rows_are_not_ignored_by_git():
    """results/<gpu>/* is ignored but for the data a clone needs: a held-out table or a set-aside
    row written by a script must be committable (it once was not, and a clone lacked it)."""
    paths = [f"results/{slug}/{folder}/x.csv" for slug in GPUS for folder in ("holdout/fp8", "superseded", "shipped")]
    run = subprocess.run(["git", "check-ignore", *paths], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 1 and not run.stdout, run.stdout  # 1: none of them is ignored
    run = subprocess.run(["git", "check-ignore", f"results/{GPUS[0]}/cache/x.csv"], cwd=REPO, capture_output=True)
    assert run.returncode == 0  # the generated rest still is
