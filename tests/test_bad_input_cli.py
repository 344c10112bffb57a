"""Bad input to predict, simulate and optimize: one stderr line naming what was wrong and
exit status 2, or an explicit what-if answer flagged as such; never a traceback, a
negative or non-finite time, or a silent default. Also the answers' own promises: the
parameter source, the one-line optimize answer, --explain, parquet output, help texts.

Every test runs from an empty tmp_path (monkeypatch.chdir), so the repository's results/
is not read unless a test puts files there."""

import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

from gemmperf.app.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
GPU = "h100-sxm5-80gb"
REFERENCE_FIT = ROOT / "tests" / "data" / "reference" / "params_fitted.json"  # old layout: 'extra', no fitted_at


def _without_retired(path: Path) -> Path:
    """A copy of the fit ``path`` without the constants a later model retired (W.RETIRED)."""
    from gemmperf.models.ws_pipelined import RETIRED

    data = json.loads(path.read_text())
    for entry in data["entries"]:
        for key in ("extra", "constants", "uncertainty"):
            for name in RETIRED:
                (entry.get(key) or {}).pop(name, None)
    out = Path(tempfile.mkdtemp(prefix="gemmperf-fit-")) / path.name
    out.write_text(json.dumps(data, indent=1))
    return out


FITTED = _without_retired(REFERENCE_FIT)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv, match: str) -> str:
    """Run ``argv``; it must exit 2 with one stderr line matching ``match``; that line."""
    code, out, err = run(capsys, *argv)
    assert code == 2, (argv, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(match, err), err
    return err


# ------------------------------------------------------------------ legality

ILLEGAL = [  # (extra argv, what the reason says)
    (["--tile", "256x256x64", "--stages", "8"], "accumulators|shared memory"),
    (["--cluster", "16x16"], "cluster"),
    (["--tile", "512x512x512"], "tiles: M and N"),
    (["--tile", "1x1x1"], "tiles: M and N"),
    (["--dtype", "fp8", "--tile", "128x128x64"], r"K = 64 \(16-bit\) or 128 \(fp8\)"),
    (["--family", "ws-ampere", "--tile", "128x128x32", "--dtype", "fp8"], "ws-ampere takes bf16 or fp16"),
    (["--dtype", "fp32"], "ws-hopper takes bf16"),
    (["--split-k", "5"], r"ws-hopper split_k in \{1, 2, 3, 4, 6, 8, 16\}"),
    (["--split-k", "4", "--schedule", "pingpong"], "split-K and stream-K run the cooperative schedule"),
    (["--stream-k"], "stream-K needs a persistent kernel"),
    (["--stream-k", "--persistent", "--split-k", "2"], "two ways to share K: choose one"),
    (["--split-k", "2", "--raster", "grouped", "--group-m", "4"], "keep the raster group at 8"),
    (["--family", "ws-ampere", "--tile", "128x128x32", "--split-k", "2"], r"ws-ampere split_k in \{1\}"),
    (["--family", "ws-ampere", "--tile", "128x128x32", "--persistent", "--stream-k"], "ws-ampere has no stream-K"),
    (["--family", "simt"], "simt is fp32"),
    (["--gpu", "a100-sxm4-80gb"], "needs sm_90a"),
]


@pytest.mark.parametrize("command", ["predict", "simulate"])
@pytest.mark.parametrize("extra, reason", ILLEGAL)
def test_configurations_no_kernel_implements_are_refused(capsys, command, extra, reason):
    err = refused(capsys, command, "--gpu", GPU, "--shape", "4096x4096x4096", *extra, match=reason)
    assert "--what-if" in err and err.startswith(f"gemmperf {command}: ")


@pytest.mark.parametrize("command", ["predict", "simulate"])
def test_a_split_k_below_one_is_one_line(capsys, command):
    refused(capsys, command, "--gpu", GPU, "--shape", "4096x4096x4096", "--split-k", "0",
            match="split_k must be a positive integer, got 0")


def test_fp8_defaults_to_its_tile_k_and_is_named_with_its_output(capsys):
    code, out, err = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--dtype", "fp8", "--explain")
    assert code == 0, err
    assert "with ws-hopper fp8 (e4m3 in, bf16 out) 128x128x128, 4 stages:" in out, out
    assert f"no results/{GPU}/fp8/params.json" in out  # the workflow's fp8 parameters are under results/<gpu>/fp8/
    err = refused(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--dtype", "fp8", "--stages", "9",
                  match="more than")
    assert err.startswith("gemmperf predict: ws-hopper fp8 (e4m3 in, bf16 out) 128x128x128, 9 stages on ")


def test_input_rows_name_their_line(capsys, tmp_path):
    src = tmp_path / "c.csv"
    src.write_text("m,n,k,family,dtype,tile_m,tile_n,tile_k,stages,mode\n"
                   "4096,4096,4096,ws-hopper,bf16,128,128,64,4,full\n"
                   "\n"  # a blank line: the next row is on line 4
                   "4096,4096,4096,ws-hopper,bf16,128,128,64,4,load-only\n")
    refused(capsys, "predict", "--gpu", GPU, "--input", src, match=rf"{re.escape(str(src))}:4: mode load-only")
    src.write_text("m,n,k,family,dtype,tile_m,tile_n,tile_k,stages\n"
                   "4096,4096,4096,ws-hopper,bf16,128,128,64,4\n"
                   "4096,4096,4096,ws-hopper,bf16,64,64,32,4\n")
    refused(capsys, "predict", "--gpu", GPU, "--input", src, match=r"c.csv:3: ws-hopper tiles")


def test_what_if_answers_and_flags_every_row(capsys, tmp_path):
    src = tmp_path / "c.csv"
    src.write_text("m,n,k,family,dtype,tile_m,tile_n,tile_k,stages\n"
                   "4096,4096,4096,ws-hopper,bf16,128,128,64,4\n"
                   "4096,4096,4096,ws-hopper,bf16,256,256,64,8\n")
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--input", src, "--what-if", "--json")
    assert code == 0
    rows = json.loads(out)
    assert rows[0]["what_if"] is None and "accumulators" in rows[1]["what_if"]
    assert all(r["predicted_us"] > 0 for r in rows)
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--tile", "1x1x1", "--what-if")
    assert code == 0 and "what-if: 1 of 1 row(s) no kernel implements: ws-hopper tiles" in out
    code, out, err = run(capsys, "simulate", "--gpu", GPU, "--shape", "256x256x256", "--family", "simt",
                         "--what-if", "--format", "json")
    assert code == 0 and json.loads(out)["what_if"] == "simt is fp32" and "what-if" in err


# ------------------------------------------------------------------ sizes


@pytest.mark.parametrize("model", ["sync", "ws-pipelined"])
def test_shapes_beyond_memory_or_arithmetic_are_one_line(capsys, model):
    big = "10000000000x10000000000x10000000000"
    refused(capsys, "predict", "--gpu", GPU, "--shape", big, "--model", model, match="10000000000")
    refused(capsys, "predict", "--gpu", GPU, "--shape", big, "--model", model, "--what-if", match="10000000000")
    refused(capsys, "optimize", "--gpu", GPU, "--shape", "x".join(["1000000000000"] * 3), match="1000000000000")


def test_memory_bound_and_what_if_past_it(capsys):
    shape = "100000x100000x200000"  # A and B 40 GB each, C 20 GB: more than 80 GB
    refused(capsys, "predict", "--gpu", GPU, "--shape", shape, match=r"need 100 GB, more than the 80 GB")
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--shape", shape, "--what-if", "--json", "--model", "all")
    rows = json.loads(out)
    assert code == 0 and all("GB" in r["what_if"] and r["predicted_us"] > 0 for r in rows)


def test_simulate_bounds_its_work_before_starting(capsys):
    start = time.perf_counter()
    refused(capsys, "simulate", "--gpu", GPU, "--shape", "4096x4096x4096", "--tile", "1x1x1", "--what-if",
            match=r"events .* exceed the limit of 200,000")
    assert time.perf_counter() - start < 1.0
    refused(capsys, "simulate", "--gpu", GPU, "--shape", "4096x4096x4096", "--tile", "1x1x1", match="tiles")
    code, out, _ = run(capsys, "simulate", "--gpu", GPU, "--shape", "16384x16384x16384", "--max-waves", "1")
    assert code == 0 and {line.split(",")[1] for line in out.splitlines()[1:]} == {"0"}


# ------------------------------------------------------------------ parameters


def _params(tmp_path, data) -> Path:
    path = tmp_path / "p.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_bad_parameter_files_are_errors_not_defaults(capsys, tmp_path):
    good = json.loads(FITTED.read_text())
    entry = good["entries"][0]
    cases = [
        ("[]", "JSON object"),
        ("{}", "no 'entries'"),
        ({"gpu": GPU, "entries": []}, "non-empty list"),
        ({"gpu": GPU, "entries": [1]}, "entry 0: expected an object"),
        ({"gpu": GPU, "entries": [{**entry, "Tile_M": 1}]}, "unknown key.*'Tile_M'"),
        ({"gpu": GPU, "entries": [entry, dict(entry)]}, "a second entry for family simt"),
        ({"gpu": GPU, "entries": [{**entry, "t_init_us": "fast"}]}, "t_init_us"),
        ({"gpu": GPU, "bogus": 1, "entries": [entry]}, "unknown 'bogus'"),
        ({"gpu": GPU, "entries": [{**entry, "extra": {**entry["extra"], "coalesce_distanse": 1.0}}]},
         "unknown constant.*coalesce_distanse"),
    ]
    for data, match in cases:
        refused(capsys, "predict", "--gpu", GPU, "--shape", "64x64x64", "--params", _params(tmp_path, data),
                match=match)
    text = FITTED.read_text()
    for bad in ("Infinity", "NaN"):
        field = '"t_init_us": '
        broken = text.replace(field + text.split(field)[1].split(",")[0], field + bad, 1)
        refused(capsys, "predict", "--gpu", GPU, "--shape", "64x64x64", "--params", _params(tmp_path, broken),
                match="t_init_us.*finite")


def test_a_fit_of_an_earlier_model_is_refused_with_its_retired_constants(capsys):
    refused(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--params", REFERENCE_FIT,
            match=r"params_fitted.json: \S+ \S+: fitted by an earlier model \(constant\(s\) oob_row_us, oob_sat_rows, "
                  r"scalar_l2_bytes_per_us, scalar_store_factor retired: .*\); fit it again \(gemmperf fit\)")


def test_another_gpus_fit_is_refused_unless_asked(capsys):
    argv = ["predict", "--gpu", "h200-sxm-141gb", "--shape", "4096x4096x4096", "--params", FITTED]
    refused(capsys, *argv, match=f"fitted for {GPU}, not h200-sxm-141gb; --params-any-gpu")
    code, out, _ = run(capsys, *argv, "--params-any-gpu")
    assert code == 0 and "parameters: fitted on" in out


def test_every_answer_states_its_parameter_source(capsys, tmp_path):
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096")
    assert code == 0 and f"parameters: descriptor defaults (no results/{GPU}/params.json)" in out
    dest = tmp_path / "results" / GPU / "params.json"
    dest.parent.mkdir(parents=True)
    shutil.copy(FITTED, dest)  # no fitted_at: the file's date, said so
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--json")
    assert "(the file's date; it records none) from results/" in json.loads(out)[0]["params_source"]
    data = json.loads(FITTED.read_text())
    dest.write_text(json.dumps({**data, "fitted_at": "2026-11-22T03:28:28+00:00"}))
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--dtype", "fp16")
    assert f"descriptor defaults (results/{GPU}/params.json has no entry for ws-hopper fp16)" in out
    code, out, _ = run(capsys, "optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--family", "ws-hopper",
                       "--json", "--set", "t_init_us=1.5")
    assert json.loads(out)[0]["params_source"] == \
        f"fitted on 2026-11-22 03:28 UTC from results/{GPU}/params.json; --set t_init_us=1.5"
    code, out, err = run(capsys, "simulate", "--gpu", GPU, "--shape", "256x256x256")
    assert code == 0 and "parameters: fitted on 2026-11-22" in err


# ------------------------------------------------------------------ outputs


def test_outputs_by_suffix_in_new_folders_and_folders_refused(capsys, tmp_path):
    code, _, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--output", "new/dir/p.parquet")
    assert code == 0 and Path("new/dir/p.parquet").read_bytes()[:4] == b"PAR1"
    df = pl.read_parquet("new/dir/p.parquet")
    assert df.height == 1 and df["params_source"][0].startswith("descriptor defaults")
    code, _, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--output", "p.json")
    assert code == 0 and json.loads(Path("p.json").read_text())[0]["model"] == "ws-pipelined"
    refused(capsys, "predict", "--gpu", GPU, "--shape", "64x64x64", "--output", "p.txt", match="unknown output format")
    refused(capsys, "predict", "--gpu", GPU, "--shape", "64x64x64", "--output", tmp_path, match="is a folder")
    refused(capsys, "simulate", "--gpu", GPU, "--shape", "64x64x64", "--out", tmp_path, match="is a folder")
    tl = tmp_path / "tl.csv"
    tl.write_text("m,n,k\n256,256,256\n")
    refused(capsys, "optimize", "--gpu", GPU, "--testlist", tl, "--family", "ws-hopper", "--out", tmp_path,
            match="is a folder")
    code, _, _ = run(capsys, "simulate", "--gpu", GPU, "--shape", "64x64x64", "--out", "a/b/t.csv")
    assert code == 0 and Path("a/b/t.csv").read_text().startswith("warp,")


def test_optimize_refuses_what_it_cannot_honour(capsys, tmp_path):
    tl = tmp_path / "tl.csv"
    tl.write_text("m,n,k\n256,256,256\n")
    refused(capsys, "optimize", "--gpu", GPU, "--testlist", tl, "--space", "measured",
            match=f"looked for results/{GPU}/measurements/tl.csv")
    refused(capsys, "optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--family", "ws-hopper",
            "--tile", "1x1x1", match="ws-hopper tiles")
    refused(capsys, "optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--space", "measured",
            match="testlist mode only")
    refused(capsys, "optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--top", "0",
            match="--top 0: expected a positive count")
    refused(capsys, "optimize", "--gpu", GPU, "--testlist", tl, "--top", "4", match="with --shape, not --testlist")


# ------------------------------------------------------------------ answers in words


ONE_LINE = re.compile(r"^4096x4096x4096 bf16 on h100-sxm5-80gb: ws-hopper \d+x\d+x64, \d stages(, cluster \dx\d)?"
                      r"(, TMA epilogue)?(, ping-pong)?(, split-K \d+)?(, stream-K)?, (non-)?persistent( on \d+ CTAs)?, "
                      r"\w+ raster( in groups of \d+)?: [\d.]+ us \(ws-pipelined, limiter \w+\); (?P<meas>.*); params: (?P<src>.*)$")


def _measurement(path: Path, time_us: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("m,n,k,family,dtype,tile_m,tile_n,tile_k,stages,cluster_m,cluster_n,persistent,raster,mode,"
                    "status,time_us\n"
                    f"4096,4096,4096,ws-hopper,bf16,128,256,64,4,1,1,true,row,full,ok,{time_us}\n"
                    "4096,4096,4096,ws-hopper,bf16,128,128,64,4,1,1,true,row,full,ok,900.5\n"
                    "4096,4096,4096,ws-hopper,bf16,64,64,64,4,1,1,true,row,full,timeout,\n")


def test_optimize_answers_in_one_line(capsys, tmp_path):
    argv = ["optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--family", "ws-hopper"]
    code, out, _ = run(capsys, *argv)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 1, out
    match = ONE_LINE.match(lines[0])
    assert match and match["meas"] == "no measurement" and match["src"].startswith("descriptor defaults"), out
    _measurement(tmp_path / "results" / GPU / "measurements" / "squares.csv", 190.25)
    code, out, _ = run(capsys, *argv)
    match = ONE_LINE.match(out.strip())
    assert match and match["meas"].startswith("measured best 190.2 us (ws-hopper 128x256x64, 4 stages, persistent")
    code, out, _ = run(capsys, *argv, "--explain")
    assert "optimum:" in out and "runner-up:" in out and "solve:" in out and "measured best" in out


def test_optimize_lists_the_models_best_under_the_answer(capsys):
    argv = ["optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--family", "ws-hopper"]
    code, out, _ = run(capsys, *argv, "--top", "5", "--stages", "4")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 7 and ONE_LINE.match(lines[0]), out
    assert lines[1] == "the model's 5 best ws-hopper configurations (the answer first), to time:"
    answer = lines[0].split(": ws-hopper ")[1].split(": ")[0]
    assert lines[2].startswith(f"   1. {answer}: ") and lines[2].endswith("us (+0.00%)")
    assert all(", 4 stages," in line for line in lines[2:])
    code, out, _ = run(capsys, *argv, "--top", "3", "--json")
    top = json.loads(out)[0]["top"]
    # the answer first: no listed configuration faster, but for a tie within float rounding
    # (configurations the model cannot tell apart, evaluated one at a time and in a batch)
    fastest = min(t["predicted_us"] for t in top)
    assert code == 0 and len(top) == 3 and top[0]["predicted_us"] <= fastest * (1 + 1e-12)


def _correction_against_128_row_tiles(path: Path) -> Path:
    """A residual correction learned from "measurements" in which 128-row tiles run 1.5x
    the model's time and the others as predicted."""
    import itertools

    from gemmperf.fit.accuracy import synthetic_measurements
    from gemmperf.fit.residual import Correction
    from gemmperf.hardware import get_gpu
    from gemmperf.models import ws_pipelined as W
    from gemmperf.params import ParamSet

    pset = ParamSet(get_gpu(GPU))
    configs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "persistent": True, "cluster_m": cm}
                            for tm, tn, cm in itertools.product([64, 128, 256], [64, 128, 256], [1, 2])])
    rows = synthetic_measurements(pset, itertools.product([1024, 4096, 8192], [2048, 8192], [1024, 4096]), configs,
                                  noise=0.0)
    rows = rows.with_columns(pl.when(pl.col("tile_m") == 128).then(pl.col("time_us") * 1.5)
                             .otherwise(pl.col("time_us")).alias("time_us"))
    Correction.fit(W.predict(rows, pset), pset.gpu.sms).save(path)
    return path


def test_optimize_re_ranks_the_models_best_by_the_correction(capsys, tmp_path):
    corr = _correction_against_128_row_tiles(tmp_path / "correction.json")
    argv = ["optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--family", "ws-hopper"]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and ": ws-hopper 128x256x64" in out, out  # the fitted answer: a 128-row tile
    code, out, _ = run(capsys, *argv, "--correction", corr, "--top", "4")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 7 and ONE_LINE.match(lines[0]), out
    assert lines[1].startswith("corrected: ws-hopper ") and not lines[1].startswith("corrected: ws-hopper 128x")
    assert "the best of the model's 64 best" in lines[1] and "the answer above corrected:" in lines[1]
    assert lines[2] == "the model's 4 best ws-hopper configurations (re-ranked by the residual correction), to time:"
    corrected = [float(line.split("corrected ")[1].split(" us")[0]) for line in lines[3:]]
    assert corrected == sorted(corrected)
    code, out, _ = run(capsys, *argv, "--correction", corr, "--json")
    answer = json.loads(out)[0]
    assert "top" not in answer and answer["corrected"]["tile_m"] != 128 and answer["corrected"]["corrected_us"] > 0
    refused(capsys, *argv, "--corrected", match=f"results/{GPU}/correction.json: no residual correction")
    refused(capsys, *argv, "--corrected", "--model", "ws-stage", match="corrects ws-pipelined, not --model ws-stage")
    tl = tmp_path / "tl.csv"
    tl.write_text("m,n,k\n256,256,256\n")
    refused(capsys, "optimize", "--gpu", GPU, "--testlist", tl, "--corrected", match="with --shape, not --testlist")


def test_predict_explains_in_words(capsys):
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "4096x4096x4096", "--explain")
    assert code == 0
    assert "1024 tiles on 132 SMs: 8 waves, the last with 100 of 132 SMs busy" in out
    assert re.search(r"It is \w+ bound", out) and "Where the time goes: main loop" in out
    assert "exposed prologue fill" in out and "epilogue" in out
    code, out, _ = run(capsys, "predict", "--gpu", GPU, "--shape", "64x64x64", "--model", "sync", "--json", "--explain")
    assert "It is load bound" in json.loads(out)[0]["explanation"]


# ------------------------------------------------------------------ help


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_says_what_and_shows_examples(capsys, command):
    with pytest.raises(SystemExit) as exc:
        main([command, "-h"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and re.search(r"^examples?\b.*:$", out, re.M | re.I) and f"gemmperf {command}" in out
    sub = next(a for a in build_parser(command)._actions if hasattr(a, "choices") and a.choices)
    for action in sub.choices[command]._actions:
        assert action.help and len(action.help) > 10, (command, action.dest)


def test_top_level_help_lists_every_command_on_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["-h"])
    out = capsys.readouterr().out
    for name, (_, text) in COMMANDS.items():
        assert re.search(rf"^ +{re.escape(name)} +{re.escape(text)}$", out, re.M), name


def test_a_negative_or_non_finite_time_is_never_an_answer():
    from gemmperf.app.answers import check_times
    from gemmperf.errors import UserError

    good = pl.DataFrame({"model": ["sync"], "m": [8], "n": [8], "k": [8], "predicted_us": [3.5]})
    check_times(good)
    for bad in (-1.0, 0.0, float("inf"), float("nan"), None):
        with pytest.raises(UserError, match=r"internal error: model sync gave predicted_us"):
            check_times(good.with_columns(pl.Series("predicted_us", [bad], dtype=pl.Float64)))


# ------------------------------------------------------------------ output paths of every command

SHIPPED = ROOT / "results" / GPU / "shipped"
WRITERS = [  # (argv with OUT where the output goes, the flag named)
    (["fit", "--gpu", GPU, "--measurements", SHIPPED / "measurements" / "squares.csv", "--out", "OUT"], "--out"),
    (["fit", "--gpu", GPU, "--measurements", SHIPPED / "measurements" / "squares.csv", "--out", "p.json",
      "--correction-out", "OUT"], "--correction-out"),
    (["accuracy", "--gpu", GPU, "--measurements", SHIPPED / "measurements" / "squares.csv", "--out", "a.json",
      "--table", "OUT"], "--table"),
    (["merge", SHIPPED / "measurements" / "squares.csv", "--out", "OUT"], "--out"),
    (["hardware", "--gpu", GPU, "--source", "catalog", "--out", "OUT"], "--out"),
    (["collect", "--testlist", ROOT / "testlists" / "squares.csv", "--out", "OUT"], "--out"),
    (["microbench", "--out", "OUT"], "--out"),
    (["predict", "--gpu", GPU, "--shape", "256x256x256", "--output", "OUT"], "--output"),
    (["simulate", "--gpu", GPU, "--shape", "256x256x256", "--out", "OUT"], "--out"),
]


@pytest.mark.parametrize("argv,flag", WRITERS, ids=lambda v: v[0] if isinstance(v, list) else v)
def test_an_output_that_is_a_folder_stops_before_any_work(capsys, tmp_path, argv, flag):
    (tmp_path / "adir").mkdir()
    started = time.perf_counter()
    refused(capsys, *[("adir" if a == "OUT" else a) for a in argv], match=f"{flag} adir: is a folder")
    assert time.perf_counter() - started < 5  # refused up front, not after a fit


@pytest.mark.parametrize("argv,flag", WRITERS[:1] + WRITERS[-2:], ids=lambda v: v[0] if isinstance(v, list) else v)
def test_an_output_in_a_missing_folder_is_written_there(capsys, tmp_path, argv, flag):
    if argv[0] == "fit":
        argv = ["fit", "--gpu", GPU, "--out", "OUT"]  # descriptor defaults: no fit to wait for
    code, _, err = run(capsys, *[("new/sub/out.json" if a == "OUT" else a) for a in argv])
    assert code == 0, err
    assert (tmp_path / "new" / "sub" / "out.json").is_file()


def test_report_out_dir_that_is_a_file_is_refused(capsys, tmp_path):
    (tmp_path / "afile").write_text("x")
    refused(capsys, "report", "--hardware", SHIPPED / "hardware.json", "--params", "p.json", "--testlists", "x",
            "--predictions", "x.parquet", "--tilings", "x.csv", "--source", "shipped", "--out-dir", "afile",
            match="--out-dir afile: is a file")


@pytest.mark.parametrize("argv", [["predict", "--nosuch"], ["optimize", "--model", "bogus"], ["report"], ["bogus"]])
def test_a_usage_error_is_one_line(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "-h)" in err, err


def test_optimize_over_every_family_answers_only_in_the_dtype_asked(capsys):
    refused(capsys, "optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--dtype", "nvfp4",
            match="simt: computes fp32, not nvfp4")
    code, out, err = run(capsys, "optimize", "--gpu", GPU, "--shape", "4096x4096x4096", "--dtype", "fp8")
    assert code == 0 and out.startswith(f"4096x4096x4096 fp8 (e4m3 in, bf16 out) on {GPU}: ws-hopper (skipped "
                                        "ws-ampere, simt: --explain says why) "), out
    assert re.search(r"ws-hopper \(skipped .*\) \d+x\d+x128, ", out) and f"no results/{GPU}/fp8/params.json" in out
    code, out, err = run(capsys, "optimize", "--gpu", GPU, "--shape", "1024x1024x1024", "--dtype", "fp32")
    assert code == 0 and out.startswith(f"1024x1024x1024 fp32 on {GPU}: simt (skipped ws-hopper, ws-ampere: "), err
