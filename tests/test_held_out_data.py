"""The sealed list's measurements and the rows a kernel fix set aside: present, tracked,
and the sweep's plan exactly. Only the configuration columns and the status are read,
never a time (the sealed list is scored once, by benchmarks/accuracy_protocol.py --sealed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gemmperf.bench.collect import SAMPLE_SEED, tasks_for
from gemmperf.hardware import get_gpu
from gemmperf.problem import read_testlist
from gemmperf.tables import CONFIG_KEY
from scripts import load_script

REPO = Path(__file__).resolve().parent.parent
GPUS = ("h100-sxm5-80gb", "h200-sxm-141gb")
REMEASURE = load_script(REPO / "benchmarks" / "remeasure.py", "remeasure")
# configurations a shape, per dtype, of the sweep's sealed entries
SEALED_COUNT = {dtype: count for name, dtype, _, count in load_script(REPO / "benchmarks" / "reference_sweep.py").PLAN
                if name == "sealed"}


def _rows(path: Path) -> list[dict]:
    return REMEASURE.read(path)[1]


def _key(row: dict) -> tuple:
    return tuple(str(row[c]).lower() for c in CONFIG_KEY)


def _set_aside(slug: str, table: Path) -> list[dict]:
    """The rows of ``table`` that benchmarks/remeasure.py --supersede moved out."""
    path = REMEASURE.RESULTS / slug / REMEASURE.SUPERSEDED / REMEASURE.table_name(slug, table)
    return _rows(path) if path.is_file() else []


@pytest.mark.parametrize("slug", GPUS)
@pytest.mark.parametrize("dtype", sorted(SEALED_COUNT))
def test_each_gpus_sealed_list_is_the_sweeps_plan_every_row_verified(slug, dtype):
    table = REMEASURE.RESULTS / slug / "sealed" / dtype / "sealed.csv"
    rows = _rows(table)
    assert rows and {r["status"] for r in rows} == {"ok"} and {r["gpu"] for r in rows} == {slug}
    planned = tasks_for(read_testlist(REPO / "testlists" / "sealed.csv", dtype), get_gpu(slug), ["ws-hopper"],
                        dtype, "sample", (SEALED_COUNT[dtype], SAMPLE_SEED))
    measured = [_key(r) for r in rows + _set_aside(slug, table)]
    assert len(measured) == len(set(measured)) == len(planned)
    assert set(measured) == {_key({**t, "dtype": dtype}) for t in planned}


def test_the_h100s_stale_split_k_rows_wait_for_an_h100():
    """The ten H100 rows of the old split-K fix-up (remeasure.py's STALE), one per table
    but two of random; none of them is still in a table a fit reads."""
    folder = REMEASURE.RESULTS / "h100-sxm5-80gb" / REMEASURE.SUPERSEDED
    counts = {p.name: len(_rows(p)) for p in folder.glob("*.csv")}
    assert sum(counts.values()) == 10 and counts["shipped+measurements+random.csv"] == 2
    for name in counts:
        table = REMEASURE.RESULTS / "h100-sxm5-80gb" / Path(*name.split("+"))
        kept = {_key(r) for r in _rows(table)}
        assert not kept & {_key(r) for r in _rows(folder / name)}, name


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_held_out_and_set_aside_rows_are_not_ignored_by_git():
    """results/<gpu>/* is ignored but for the data a clone needs: a sealed table or a set-aside
    row written by a script must be committable (it once was not, and a clone lacked it)."""
    paths = [f"results/{slug}/{folder}/x.csv" for slug in GPUS for folder in ("sealed/fp8", "superseded", "shipped")]
    run = subprocess.run(["git", "check-ignore", *paths], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 1 and not run.stdout, run.stdout  # 1: none of them is ignored
    run = subprocess.run(["git", "check-ignore", f"results/{GPUS[0]}/cache/x.csv"], cwd=REPO, capture_output=True)
    assert run.returncode == 0  # the generated rest still is
