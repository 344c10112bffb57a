"""The repeat measurements of benchmarks/results/repeat/ (the noise floor): each is a
shipped table's configurations exactly, measured again on the same GPU model, every row
verified. Named <gpu>_<dtype>_<testlist>_<date>.csv after the table they repeat."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmperf.tables import CONFIG_KEY
from scripts import load_script

REPO = Path(__file__).resolve().parent.parent
REMEASURE = load_script(REPO / "benchmarks" / "remeasure.py", "remeasure")
SLUGS = {"h100": "h100-sxm5-80gb", "h200": "h200-sxm-141gb"}
REPEATS = sorted((REPO / "benchmarks" / "results" / "repeat").glob("*.csv"))


def _shipped(repeat: Path) -> tuple[str, Path]:
    gpu, dtype, testlist = repeat.stem.split("_")[:3]
    folder = REMEASURE.RESULTS / SLUGS[gpu] / "shipped"
    return SLUGS[gpu], (folder if dtype == "bf16" else folder / dtype) / "measurements" / f"{testlist}.csv"


def _keys(rows: list[dict]) -> list[tuple]:
    return [tuple(str(r[c]).lower() for c in CONFIG_KEY) for r in rows]


def test_there_are_repeats_of_both_gpus():
    assert {p.name.split("_")[0] for p in REPEATS} == set(SLUGS)


@pytest.mark.parametrize("repeat", REPEATS, ids=lambda p: p.stem)
def test_a_repeat_is_its_shipped_tables_configurations_every_row_verified(repeat):
    slug, table = _shipped(repeat)
    again, shipped = REMEASURE.read(repeat)[1], REMEASURE.read(table)[1]
    assert {r["status"] for r in again} == {"ok"} and {r["gpu"] for r in again} == {slug}
    keys = _keys(again)
    assert len(keys) == len(set(keys)) == len(shipped)
    assert set(keys) == set(_keys(shipped))
