"""benchmarks/transfer.py's sides: outside bf16 the source's correction learns from the
GPU's bf16 rows as teacher rows (as the workflow's fp8 fit does), with bf16's parameters
beside fp8's; in bf16, or with --without-teacher, from the dtype's own rows alone; and a
left-out list's teacher rows are dropped by list and by shape."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
GPU = "h100-sxm5-80gb"


def test_an_fp8_side_has_the_bf16_rows_and_parameters_as_teacher():
    script = load_script(ROOT / "benchmarks" / "transfer.py", "transfer")
    mb = str(ROOT / "benchmarks" / "results" / "microbench" / "h100_fp8_2026-11-25.csv")  # as --microbench names it
    side = script.gpu_side(GPU, "fp8", mb, teacher=True)
    alone = script.gpu_side(GPU, "fp8", mb, teacher=False)
    bf16 = script.gpu_side(GPU, "bf16", teacher=True)
    assert set(side["dev"].get_column("dtype")) == {"fp8"} and side["dev"].height == alone["dev"].height
    assert set(side["teacher"].get_column("dtype")) == {"bf16"} and side["teacher"].height == bf16["dev"].height
    assert set(side["base"].entries) == {("ws-hopper", "fp8"), ("ws-hopper", "bf16")}
    assert alone["teacher"] is None and set(alone["base"].entries) == {("ws-hopper", "fp8")}
    assert bf16["teacher"] is None  # bf16 teaches itself nothing more


def test_a_left_out_lists_teacher_rows_share_no_list_or_shape_with_it():
    from gemmperf.fit.accuracy import HELD_KEYS, with_teacher

    script = load_script(ROOT / "benchmarks" / "transfer.py", "transfer")
    side = script.gpu_side(GPU, "fp8", None, teacher=True)
    test = side["dev"].filter(pl.col("testlist") == "dsv3")
    train = with_teacher(side["dev"].filter(pl.col("testlist") != "dsv3"), side["teacher"], test, HELD_KEYS)
    taught = train.filter(pl.col("dtype") == "bf16")
    assert 0 < taught.height < side["teacher"].height
    assert "dsv3" not in set(taught.get_column("testlist"))
    assert not set(zip(*taught.select("m", "n", "k").to_dict(as_series=False).values())) & set(
        zip(*test.select("m", "n", "k").to_dict(as_series=False).values()))
