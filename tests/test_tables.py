"""The table schemas, the measurement reader and the valid-row filter (gemmperf.tables)."""

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from gemmperf import tables
from gemmperf.configs import read_configs
from gemmperf.errors import UserError
from gemmperf.problem import CONFIG_COLUMNS

SHIPPED = Path(__file__).resolve().parent.parent / "results" / "h100-sxm5-80gb" / "shipped"
FILES = sorted((SHIPPED / "measurements").glob("*.csv")) + [SHIPPED / "microbench.csv"]


def test_schemas_agree_with_the_kernel_configuration():
    assert tables.KEY_COLUMNS == ("m", "n", "k", *CONFIG_COLUMNS)
    assert tables.ROW_COLUMNS[: len(tables.KEY_COLUMNS)] == tables.KEY_COLUMNS
    assert set(tables.INT_COLUMNS) | {"family", "dtype", "persistent", "raster", "mode"} == set(tables.KEY_COLUMNS)
    assert set(tables.MEASURED_FLOATS + tables.MEASURED_INTS) <= set(tables.MEASURED_COLUMNS)
    assert set(tables.CONFIG_KEY) == set(tables.KEY_COLUMNS) - {"mode"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_shipped_table_reads_as_polars_infers_it(path):
    df = tables.read_measurements(path)
    assert_frame_equal(df, pl.read_csv(path, infer_schema_length=None))
    assert df.schema["persistent"] == pl.Boolean and df.schema["time_us"] == pl.Float64


def test_valid_rows_are_ok_full_mode_with_a_positive_finite_time():
    df = pl.DataFrame({"status": ["ok", "ok", "timeout", "ok", "ok", "ok"],
                       "mode": ["full", None, "full", "load-only", "full", "full"],
                       "time_us": [2.0, 1.0, 3.0, 4.0, float("inf"), 0.0]})
    assert tables.valid_rows(df)["time_us"].to_list() == [2.0, 1.0]
    assert tables.canonical_order(tables.valid_rows(df))["time_us"].to_list() == [1.0, 2.0]


def test_bad_tables_stop_with_one_line_naming_the_file(tmp_path):
    missing = tmp_path / "none.csv"
    with pytest.raises(UserError, match="none.csv: measurement file not found"):
        tables.read_measurements(missing)
    short = tmp_path / "short.csv"
    short.write_text("m,n,k,family,dtype\n1,2,3,simt,fp32\n")
    with pytest.raises(UserError, match="short.csv: missing column\\(s\\) time_us"):
        tables.read_measurements(short)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("m,n,k,family,dtype,time_us\n1,2,3,simt,fp32,1.0\n1,2,3,simt,fp32,x,y,z\n")
    with pytest.raises(UserError) as err:
        tables.read_measurements(ragged)
    assert str(err.value).startswith(f"{ragged}: cannot read measurements") and "\n" not in str(err.value)


def test_a_measurement_table_read_as_configurations_keeps_its_rows():
    path = SHIPPED / "measurements" / "squares.csv"
    cfg, meas = read_configs(path), tables.read_measurements(path)
    assert cfg.columns[: len(tables.KEY_COLUMNS)] == list(tables.KEY_COLUMNS)
    assert cfg.height == meas.height
    assert_frame_equal(cfg.select(tables.INT_COLUMNS), meas.select(tables.INT_COLUMNS))
