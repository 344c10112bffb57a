"""Bad input files and sizes through the CLI: each stops with exit status 2 and one line
on stderr naming the file (and the line, column and value where there are some), never a
traceback. Every CSV the project reads goes through gemmperf.csvfile; the cases cover
each of its checks for each kind of file a command reads."""

from pathlib import Path

import pytest

from gemmperf import csvfile, tables
from gemmperf.app.cli import main
from gemmperf.configs import read_configs
from gemmperf.errors import UserError
from gemmperf.problem import MAX_DIM, Shape, read_testlist

GPU = "h100-sxm5-80gb"
SHIPPED = Path(__file__).resolve().parent.parent / "results" / GPU / "shipped"
MEAS = "m,n,k,family,dtype,status,time_us\n"
GOOD_MEAS = "128,128,128,simt,fp32,ok,1.5\n"


def run(capsys, argv):
    """(exit status, stderr lines) of ``gemmperf argv`` run in this process."""
    capsys.readouterr()
    status = main(argv)
    return status, capsys.readouterr().err.splitlines()


def check_one_line(capsys, argv, command, fragments):
    status, err = run(capsys, argv)
    assert status == 2, err
    assert len(err) == 1, err
    assert err[0].startswith(f"gemmperf {command}: ") and "Traceback" not in err[0]
    for fragment in fragments:
        assert fragment in err[0], err[0]


# testlists: (file bytes, fragments after the file name)
TESTLISTS = {
    "not-utf8": (b"m,n,k\n1,2,\xff\n", [":2: not UTF-8 text (byte 0xff at offset 10)"]),
    "empty": (b"", [":1: empty, expected a header line"]),
    "duplicate-column": (b"m,n,k,m\n1,2,3,4\n", [":1: column 'm' appears twice (columns 1 and 4)"]),
    "unknown-column": (b"M,n,k\n1,2,3\n", [":1: unknown column 'M' (did you mean 'm'?); known: m, n, k, dtype"]),
    "missing-column": (b"m,n\n1,2\n", [":1: missing column(s) k"]),
    "unnamed-column": (b"m,n,k,\n1,2,3,\n", [":1: column 4 has no name (a stray comma?)"]),
    "torn-row": (b"m,n,k\n1,2,3\n4,5\n", [":3: expected 3 values, got 2: '4,5'"]),
    "extra-values": (b"m,n,k\n1,2,3,4\n", [":2: expected 3 values, got 4: '1,2,3,4'"]),
    "repeated-header": (b"m,n,k\n1,2,3\nm,n,k\n4,5,6\n", [":3: the header line again"]),
    "empty-value": (b"m,n,k\n1,,3\n", [":2: column n is empty"]),
    "not-a-number": (b"m,n,k\n1,2,1e99x\n", [":2: column k = '1e99x': not an integer"]),
    "nan-size": (b"m,n,k\nnan,2,3\n", [":2: column m = 'nan': not an integer"]),
    "zero-size": (b"m,n,k\n0,2,3\n", [":2: column m = '0': must be >= 1"]),
    "20-digit-size": (b"m,n,k\n12345678901234567890,2,3\n",
                      [":2: column m = '12345678901234567890': above the limit 2147483647"]),
    "flops-too-large": (b"m,n,k\n1000000,1000000,1000000\n", [":2: column k = '1000000': 2*M*N*K = 2000000000000000000 is above the limit 2**53"]),
    "unknown-dtype": (b"m,n,k,dtype\n1,2,3,int3\n", [":2: column dtype = 'int3': unknown dtype"]),
    "duplicate-row": (b"m,n,k\n1,2,3\n# comment\n1,2,3\n", [":4: 1,2,3,bf16 is listed twice (lines 2 and 4)"]),
    "no-rows": (b"m,n,k\n# only a comment\n", [": testlist has no problems"]),
    "bad-quoting": (b'm,n,k\n1,2,"3"x\n', [":2: not valid CSV"]),
}

# measurement tables: (file text, fragments)
MEASUREMENTS = {
    "ok-without-time": (MEAS + "1,2,3,simt,fp32,ok,\n", [":2: column time_us = '': a row with status ok needs"]),
    "ok-nan-time": (MEAS + "1,2,3,simt,fp32,ok,nan\n", [":2: column time_us = 'nan': a row with status ok"]),
    "ok-inf-time": (MEAS + "1,2,3,simt,fp32,ok,inf\n", [":2: column time_us = 'inf': a row with status ok"]),
    "ok-zero-time": (MEAS + "1,2,3,simt,fp32,ok,0\n", [":2: column time_us = '0.0': a row with status ok"]),
    "non-numeric-time": (MEAS + "1,2,3,simt,fp32,ok,12us\n", [":2: column time_us = '12us': not a number"]),
    "unknown-status": (MEAS + "1,2,3,simt,fp32,fine,1.0\n", [":2: column status = 'fine': unknown status"]),
    "torn-row": (MEAS + GOOD_MEAS + "1,2,3,simt,fp\n", [":3: expected 7 values, got 5"]),
    "repeated-header": (MEAS + GOOD_MEAS + MEAS + GOOD_MEAS, [":3: the header line again"]),
    "misspelled-column": (MEAS.replace("time_us", "Time_us") + GOOD_MEAS,
                          [":1: unknown column 'Time_us' (did you mean 'time_us'?)"]),
    "missing-time-column": ("m,n,k,family,dtype,status\n1,2,3,simt,fp32,ok\n", [":1: missing column(s) time_us"]),
    "unknown-family": (MEAS + "1,2,3,cublas,fp32,ok,1.0\n", [":2: column family = 'cublas': unknown family"]),
    "huge-size": (MEAS + "99999999999999999999999,2,3,simt,fp32,ok,1.0\n", [":2: column m = '99999999999999999999999': above the limit 2147483647"]),
}

# configuration tables (predict --input): (file text, fragments)
CONFIGS = {
    "misspelled-column": ("m,n,k,Tile_M\n1,2,3,64\n", [":1: unknown column 'Tile_M' (did you mean 'tile_m'?); known: "]),
    "duplicate-column": ("m,n,k,m\n1,2,3,1\n", [":1: column 'm' appears twice"]),
    "extra-values": ("m,n,k,stages\n1,2,3,4,5\n", [":2: expected 4 values, got 5"]),
    "not-an-integer": ("m,n,k,stages\n1,2,3,2.5\n", [":2: column stages = '2.5': not an integer"]),
    "huge-tile": ("m,n,k,tile_m\n1,2,3,123456789012345678901\n", [":2: column tile_m = '123456789012345678901'"]),
    "bad-bool": ("m,n,k,persistent\n1,2,3,perhaps\n", [":2: column persistent = 'perhaps': not true or false"]),
    "unknown-raster": ("m,n,k,raster\n1,2,3,zigzag\n", [":2: column raster = 'zigzag': unknown raster"]),
    "ok-without-time": ("m,n,k,status,time_us\n1,2,3,ok,\n", [":2: column time_us = '': a row with status ok"]),
}


def write(tmp_path, name, content) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize("case", TESTLISTS)
def test_bad_testlist_optimize(tmp_path, capsys, case):
    content, fragments = TESTLISTS[case]
    path = write(tmp_path, "bad.csv", content)
    argv = ["optimize", "--gpu", GPU, "--testlist", str(path), "--measurements", "--out", str(tmp_path / "t.csv")]
    check_one_line(capsys, argv, "optimize", [f"{path}{f}" for f in fragments])


@pytest.mark.parametrize("case", ["not-utf8", "torn-row", "20-digit-size", "duplicate-row"])
def test_bad_testlist_predict(tmp_path, capsys, case):
    content, fragments = TESTLISTS[case]
    path = write(tmp_path, "bad.csv", content)
    check_one_line(capsys, ["predict", "--gpu", GPU, "--testlist", str(path)], "predict",
                   [f"{path}{f}" for f in fragments])


@pytest.mark.parametrize("case", MEASUREMENTS)
def test_bad_measurements_optimize(tmp_path, capsys, case):
    content, fragments = MEASUREMENTS[case]
    testlist = write(tmp_path, "tl.csv", "m,n,k\n128,128,128\n")
    path = write(tmp_path, "bad.csv", content)
    argv = ["optimize", "--gpu", GPU, "--testlist", str(testlist), "--measurements", str(path),
            "--out", str(tmp_path / "t.csv")]
    check_one_line(capsys, argv, "optimize", [f"{path}{f}" for f in fragments])


@pytest.mark.parametrize("command", ["fit", "accuracy"])
@pytest.mark.parametrize("case", ["ok-without-time", "torn-row", "unknown-status"])
def test_bad_measurements_fit_and_accuracy(tmp_path, capsys, command, case):
    content, fragments = MEASUREMENTS[case]
    path = write(tmp_path, "bad.csv", content)
    argv = [command, "--gpu", GPU, "--microbench", str(SHIPPED / "microbench.csv"), "--measurements", str(path),
            "--out", str(tmp_path / "out.json")]
    check_one_line(capsys, argv, command, [f"{path}{f}" for f in fragments])


MICROBENCH_HEAD = (SHIPPED / "microbench.csv").read_text().splitlines()[:2]


@pytest.mark.parametrize("case, content, fragment", [
    ("ok-without-time", "\n".join([MICROBENCH_HEAD[0], MICROBENCH_HEAD[1].replace(",ok,,0.8778989987931504,", ",ok,,,")]),
     ":2: column time_us = '': a row with status ok"),
    ("torn-row", "\n".join(MICROBENCH_HEAD + [MICROBENCH_HEAD[1][:40]]), ":3: expected 42 values, got"),
    ("not-utf8", "\n".join(MICROBENCH_HEAD).encode() + b"\n\xfe", ":3: not UTF-8 text (byte 0xfe"),
    ("no-kind-column", MEAS + GOOD_MEAS, ":1: missing column(s) kind"),
])
def test_bad_microbench_fit(tmp_path, capsys, case, content, fragment):
    path = write(tmp_path, "microbench.csv", content)
    argv = ["fit", "--gpu", GPU, "--microbench", str(path), "--out", str(tmp_path / "p.json")]
    check_one_line(capsys, argv, "fit", [f"{path}{fragment}"])


@pytest.mark.parametrize("case", CONFIGS)
def test_bad_configurations_predict(tmp_path, capsys, case):
    content, fragments = CONFIGS[case]
    path = write(tmp_path, "bad.csv", content)
    check_one_line(capsys, ["predict", "--gpu", GPU, "--input", str(path)], "predict",
                   [f"{path}{f}" for f in fragments])


@pytest.mark.parametrize("argv, flag", [
    (["predict", "--input"], "--input"), (["predict", "--testlist"], "--testlist"),
    (["optimize", "--measurements"], "--measurements"),
])
def test_missing_files_and_folders(tmp_path, capsys, argv, flag):
    testlist = write(tmp_path, "tl.csv", "m,n,k\n128,128,128\n")
    extra = ["--testlist", str(testlist), "--out", str(tmp_path / "t.csv")] if argv[0] == "optimize" else []
    for path, fragment in ((tmp_path / "nosuch.csv", "not found"), (tmp_path, "is a folder")):
        check_one_line(capsys, [argv[0], "--gpu", GPU, *extra, flag, str(path)], argv[0], [f"{path}: ", fragment])


@pytest.mark.parametrize("command", ["predict", "optimize", "simulate"])
@pytest.mark.parametrize("shape, fragment", [
    ("12345678901234567890x4096x4096", "M = '12345678901234567890': above the limit 2147483647"),
    (f"4096x{MAX_DIM + 1}x4096", f"N = '{MAX_DIM + 1}': above the limit"),
    ("1000000x1000000x1000000", "2*M*N*K = 2000000000000000000 is above the limit 2**53"),
    ("4096xnanx4096", "N = 'nan': not an integer"),
])
def test_shapes_too_large_for_the_arithmetic(capsys, command, shape, fragment):
    check_one_line(capsys, [command, "--gpu", GPU, "--shape", shape], command, [f"shape {shape!r}: ", fragment])


# ------------------------------------------------------------------ what the reader accepts


def test_a_byte_order_mark_comments_and_blank_lines_are_accepted(tmp_path):
    testlist = write(tmp_path, "tl.csv", b"\xef\xbb\xbf# projections\nm,n,k\n\n1,2,3\n# x\n4,5,6\n")
    assert read_testlist(testlist) == [Shape(1, 2, 3), Shape(4, 5, 6)]
    meas = write(tmp_path, "m.csv", b"\xef\xbb\xbf" + (MEAS + GOOD_MEAS).encode())
    assert tables.read_measurements(meas)["time_us"].to_list() == [1.5]
    cfg = write(tmp_path, "c.csv", b"\xef\xbb\xbfm,n,k\r\n1,2,3\r\n")
    assert read_configs(cfg)["k"].to_list() == [3]


def test_comments_are_not_skipped_in_measurements(tmp_path):
    path = write(tmp_path, "m.csv", MEAS + "# a comment\n" + GOOD_MEAS)
    with pytest.raises(UserError, match=":2: expected 7 values, got 1"):
        tables.read_measurements(path)


def test_a_quoted_value_across_lines_keeps_the_line_numbers(tmp_path):
    path = write(tmp_path, "m.csv", "m,n,k,family,dtype,status,reason,time_us\n"
                 '1,2,3,simt,fp32,compile_error,"two\nlines",\n1,2,4,simt,fp32,ok,,x\n')
    with pytest.raises(UserError, match=":4: column time_us = 'x': not a number"):
        tables.read_measurements(path)


def test_parsers_refuse_what_python_would_accept():
    for raw in ("1_000", "0x10", "1e3", " 5x", "٣"):  # int() takes the first and the last
        with pytest.raises(csvfile.BadValue):
            csvfile.integer()(raw)
    for raw in ("1_0.5", "infinity", "NaN", "1e999"):
        with pytest.raises(csvfile.BadValue):
            csvfile.number()(raw)
    assert csvfile.number(finite=False)("nan") != csvfile.number(finite=False)("nan")
    assert csvfile.integer(1, 10)("+7") == 7 and csvfile.number()("-.5e1") == -5.0


@pytest.mark.parametrize("shape", [f"1x1x{MAX_DIM}", f"1x{MAX_DIM}x8", "100000x100000x100000"])
def test_the_largest_shapes_allowed_give_finite_positive_times(capsys, shape):
    """At the limits (a dimension at MAX_DIM, or flops near MAX_FLOPS, operands still
    fitting in the H100's 80 GB) every model's numbers are finite and >= 0, its time > 0
    (before the limits, sync at 10**10 cubed gave negative times from int64 overflow)."""
    import json
    import math

    capsys.readouterr()
    assert main(["predict", "--gpu", GPU, "--shape", shape, "--model", "all", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 5 and all(math.isfinite(r["predicted_us"]) and r["predicted_us"] > 0 for r in rows)
    numbers = [v for r in rows for v in r.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert all(math.isfinite(v) and v >= 0 for v in numbers)
