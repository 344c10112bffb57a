"""The table schemas, the measurement reader and the valid-row filter (gemmperf.tables)."""

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from gemmperf import tables
from gemmperf.configs import read_configs
from gemmperf.errors import UserError
from gemmperf.problem import CONFIG_COLUMNS, LATER_CONFIG_COLUMNS, KernelConfig

SHIPPED = Path(__file__).resolve().parent.parent / "results" / "h100-sxm5-80gb" / "shipped"
FILES = sorted(SHIPPED.glob("**/measurements/*.csv")) + [SHIPPED / "microbench.csv"]


def test_schemas_agree_with_the_kernel_configuration():
    assert tables.KEY_COLUMNS == ("m", "n", "k", *CONFIG_COLUMNS)
    assert tables.ROW_COLUMNS[: len(tables.KEY_COLUMNS)] == tables.KEY_COLUMNS
    assert (set(tables.INT_COLUMNS) | {"family", "dtype", "persistent", "raster", "mode", "epilogue", "schedule",
                                        "stream_k"}
            == set(tables.KEY_COLUMNS))
    assert set(tables.MEASURED_FLOATS + tables.MEASURED_INTS) <= set(tables.MEASURED_COLUMNS)
    assert set(tables.CONFIG_KEY) == set(tables.KEY_COLUMNS) - {"mode"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_shipped_table_reads_as_polars_infers_it(path):
    df = tables.read_measurements(path)
    # the strict reader's frame is what polars infers from every row, bit for bit, plus the
    # dimensions added since at their defaults where a file was measured before them
    header = pl.read_csv(path, n_rows=0).columns
    later = [c for c in LATER_CONFIG_COLUMNS if c not in header]
    assert_frame_equal(df.drop(later), pl.read_csv(path, infer_schema_length=None), check_exact=True)
    if later:
        assert df.select(later).unique().rows(named=True) == [{c: KernelConfig().as_dict()[c] for c in later}]
    assert df.schema["persistent"] == pl.Boolean and df.schema["time_us"] == pl.Float64


def test_a_table_of_the_new_dimensions_reads_them_and_bad_values_are_one_line(tmp_path):
    head = "m,n,k,family,dtype,tile_m,tile_n,tile_k,stages,epilogue,schedule,group_m,persistent_ctas,status,time_us\n"
    path = tmp_path / "m.csv"
    path.write_text(head + "1,2,3,ws-hopper,bf16,128,128,64,4,tma,pingpong,4,64,ok,1.5\n")
    row = tables.read_measurements(path).row(0, named=True)
    assert (row["epilogue"], row["schedule"], row["group_m"], row["persistent_ctas"]) == ("tma", "pingpong", 4, 64)
    for column, value, why in [("epilogue", "tmaa", "unknown epilogue"), ("schedule", "ping", "unknown schedule"),
                               ("group_m", "0", ""), ("persistent_ctas", "-1", "")]:
        values = dict(zip(head.strip().split(","), "1,2,3,ws-hopper,bf16,128,128,64,4,tma,pingpong,4,64,ok,1.5".split(",")))
        values[column] = value
        path.write_text(head + ",".join(values.values()) + "\n")
        with pytest.raises(UserError) as err:
            tables.read_measurements(path)
        assert str(err.value).startswith(f"{path}:2: column {column} = {value!r}") and why in str(err.value)


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
    with pytest.raises(UserError, match="short.csv:1: missing column\\(s\\) time_us"):
        tables.read_measurements(short)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("m,n,k,family,dtype,time_us\n1,2,3,simt,fp32,1.0\n1,2,3,simt,fp32,x,y,z\n")
    with pytest.raises(UserError) as err:
        tables.read_measurements(ragged)
    assert str(err.value).startswith(f"{ragged}:3: expected 6 values, got 8") and "\n" not in str(err.value)


HEADER = "m,n,k,family,dtype,status,time_us\n"


@pytest.mark.parametrize("row, fragment", [
    ("1,2,3,simt,fp32,ok,\n", ":2: column time_us = '': a row with status ok needs a finite time_us > 0"),
    ("1,2,3,simt,fp32,ok,nan\n", ":2: column time_us = 'nan': a row with status ok needs"),
    ("1,2,3,simt,fp32,ok,-1\n", ":2: column time_us = '-1.0': a row with status ok needs"),
    ("1,2,3,simt,fp32,ok,fast\n", ":2: column time_us = 'fast': not a number"),
    ("1,2,3,simt,fp32,okay,1.0\n", ":2: column status = 'okay': unknown status"),
    ("1,2,3,simt,fp32,,1.0\n", ":2: column status is empty"),
    ("1,2,3,,fp32,ok,1.0\n", ":2: column family = '': empty, a value is required"),
    ("1,2,3,cublas,fp32,ok,1.0\n", ":2: column family = 'cublas': unknown family"),
])
def test_a_bad_measured_row_is_an_error_never_data(tmp_path, row, fragment):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + row)
    with pytest.raises(UserError) as err:
        tables.read_measurements(path)
    assert str(err.value).startswith(str(path)) and fragment in str(err.value)


def test_failed_rows_are_kept_and_filtered_by_valid_rows(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + "1,2,3,simt,fp32,ok,1.5\n1,2,4,simt,fp32,timeout,\n1,2,5,simt,fp32,wrong_result,nan\n")
    df = tables.read_measurements(path)
    assert df["status"].to_list() == ["ok", "timeout", "wrong_result"]
    assert tables.valid_rows(df)["k"].to_list() == [3]


def test_parquet_measurements_are_checked_like_csv(tmp_path):
    good = pl.DataFrame({"m": [1], "n": [2], "k": [3], "family": ["simt"], "dtype": ["fp32"],
                         "status": ["ok"], "time_us": [1.0]})
    good.write_parquet(tmp_path / "good.parquet")
    assert_frame_equal(tables.read_measurements(tmp_path / "good.parquet"), good)
    good.with_columns(time_us=pl.lit(float("inf"))).write_parquet(tmp_path / "inf.parquet")
    with pytest.raises(UserError, match="inf.parquet: row 1: column time_us = 'inf'"):
        tables.read_measurements(tmp_path / "inf.parquet")
    good.with_columns(time_us=pl.lit("1.0")).write_parquet(tmp_path / "text.parquet")
    with pytest.raises(UserError, match="column time_us has type String, expected Float64"):
        tables.read_measurements(tmp_path / "text.parquet")
    good.rename({"m": "M"}).write_parquet(tmp_path / "upper.parquet")
    with pytest.raises(UserError, match="unknown column 'M'"):
        tables.read_measurements(tmp_path / "upper.parquet")


def test_a_measurement_table_read_as_configurations_keeps_its_rows():
    path = SHIPPED / "measurements" / "squares.csv"
    cfg, meas = read_configs(path), tables.read_measurements(path)
    assert cfg.columns[: len(tables.KEY_COLUMNS)] == list(tables.KEY_COLUMNS)
    assert cfg.height == meas.height
    assert_frame_equal(cfg.select(tables.INT_COLUMNS), meas.select(tables.INT_COLUMNS))


@pytest.mark.parametrize("text, fragment", [
    ("m,n,k,Tile_M\n1,2,3,64\n", ":1: unknown column 'Tile_M' (did you mean 'tile_m'?); known: m, n, k,"),
    ("m,n,k,m\n1,2,3,1\n", ":1: column 'm' appears twice (columns 1 and 4)"),
    ("m,n,k,tile_m\n1,2,3,0x40\n", ":2: column tile_m = '0x40': not an integer"),
    ("m,n,k,persistent\n1,2,3,maybe\n", ":2: column persistent = 'maybe': not true or false"),
    ("m,n,k,tile_n\n1,2,3,99999999999999999999999\n", ":2: column tile_n = '99999999999999999999999': above the limit"),
    ("m,n,k\n4096,4096,1000000000\n", ":2: column k = '1000000000': 2*M*N*K = "),
    ("m,n,k,status,time_us\n1,2,3,ok,inf\n", ":2: column time_us = 'inf': a row with status ok"),
])
def test_bad_configuration_tables_name_file_line_and_value(tmp_path, text, fragment):
    path = tmp_path / "c.csv"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        read_configs(path)
    assert str(err.value).startswith(str(path)) and fragment in str(err.value), str(err.value)


def test_configuration_defaults_fill_empty_and_absent_columns(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("# a comment\nm,n,k,stages\n1,2,3,\n\n4,5,6,7\n")
    df = read_configs(path)
    assert df["stages"].to_list() == [4, 7] and df["tile_m"].to_list() == [128, 128]


def test_measured_configs_one_row_per_configuration_with_the_median():
    path = SHIPPED / "measurements" / "squares.csv"
    meas = tables.read_measurements(path)
    twice = pl.concat([meas, meas.with_columns(pl.col("time_us") * 3)])
    one = tables.measured_configs(twice)
    assert one.columns == [*tables.CONFIG_KEY, "time_us"]
    assert one.height == tables.valid_rows(meas).height == one.unique(list(tables.CONFIG_KEY)).height
    assert one.get_column("time_us").sum() == pytest.approx(2 * tables.valid_rows(meas).get_column("time_us").sum())
    assert tables.measured_configs(pl.DataFrame()).height == 0
    with pytest.raises(UserError, match="missing column"):
        tables.measured_configs(meas.drop("dtype"))
