import json

import pytest

from gemmperf.app.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_user_errors_are_one_line_and_exit_2(capsys, tmp_path):
    bad = tmp_path / "c.csv"
    bad.write_text("m,n,k,tile_m\n128,128,128,64\n128,zz,128,64\n")
    cases = [
        ("predict", "--gpu", "h100-sxm5-80gb", "--input", str(bad)),
        ("predict", "--gpu", "nope", "--shape", "1x1x1"),
        ("predict", "--gpu", "h100-sxm5-80gb", "--shape", "1x1"),
        ("predict", "--gpu", "h100-sxm5-80gb", "--shape", "8x8x8", "--tile", "0x8x8"),
        ("predict", "--gpu", "h100-sxm5-80gb", "--shape", "8x8x8", "--model", "magic"),
        ("predict", "--gpu", "h100-sxm5-80gb", "--shape", "8x8x8", "--set", "bogus=1"),
    ]
    for argv in cases:
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        assert err.count("\n") == 1 and "Traceback" not in err, err
    code, _, err = run(capsys, *cases[0])
    assert f"{bad}:3" in err and "'zz'" in err


def test_predict_one_configuration_json(capsys):
    code, out, _ = run(capsys, "predict", "--gpu", "h100-sxm5-80gb", "--shape", "4096x4096x4096",
                       "--tile", "128x256x64", "--model", "all", "--json")
    assert code == 0
    rows = json.loads(out)
    assert {r["model"] for r in rows} == {"sol", "sync", "ws-stage", "ws-persistent", "ws-pipelined"}
    sol = next(r for r in rows if r["model"] == "sol")["predicted_us"]
    for r in rows:
        assert r["predicted_us"] >= sol * 0.999  # nothing beats the speed of light


def test_predict_csv_in_and_out(capsys, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("m,n,k,family,dtype,tile_m,tile_n,tile_k,stages\n512,512,512,ws-ampere,bf16,128,128,32,4\n"
                   "100,100,100,simt,fp32,64,64,8,2\n")
    dst = tmp_path / "out.csv"
    code, _, _ = run(capsys, "predict", "--gpu", "a100-sxm4-80gb", "--input", str(src), "--output", str(dst))
    assert code == 0
    lines = dst.read_text().splitlines()
    assert len(lines) == 3 and "predicted_us" in lines[0]


def test_simulate_outputs_every_event(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no results/<gpu>/params.json here: descriptor defaults
    code, out, _ = run(capsys, "simulate", "--gpu", "h100-sxm5-80gb", "--shape", "256x256x1024",
                       "--tile", "128x128x64", "--stages", "3", "--format", "json")
    assert code == 0
    answer = json.loads(out)
    assert answer["params_source"].startswith("descriptor defaults") and answer["what_if"] is None
    events = answer["events"]
    maths = [e for e in events if e["warp"] == "MATH"]
    assert len(maths) == 1024 // 64  # one multiply per stage, one wave
    assert all(e["end_us"] >= e["start_us"] for e in events)


def test_gpus_lists_catalog(capsys):
    code, out, _ = run(capsys, "gpus")
    assert code == 0 and "h100-sxm5-80gb" in out and "rtx-a6000" in out


# ------------------------------------------------------------ the fit step writes both files


def test_fit_writes_params_and_correction_from_one_fit(capsys, tmp_path):
    import itertools

    import polars as pl

    from gemmperf.fit import accuracy as A
    from gemmperf.hardware import CATALOG
    from gemmperf.params import ParamSet

    ps = ParamSet(CATALOG["h100-sxm5-80gb"])
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "persistent": p}
                         for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])
    paths = []
    for name, seed, shapes in (("dev", 1, itertools.product([512, 4096], [1024, 8192], [512, 4096])),
                               ("llm", 2, [(1024, 8192, 4096), (2048, 2048, 2048)])):
        path = tmp_path / f"{name}.csv"
        A.synthetic_measurements(ps, list(shapes), cfgs, seed=seed).write_csv(path)
        paths.append(str(path))
    out, corr = tmp_path / "params.json", tmp_path / "correction.json"
    code, _, err = run(capsys, "fit", "--gpu", "h100-sxm5-80gb", "--measurements", *paths, "--heldout", "llm",
                       "--families", "ws-hopper", "--out", str(out), "--correction-out", str(corr))
    assert code == 0, err
    from gemmperf.app.fit import read_measurements

    fitted, correction, _ = A.fit_shipped(read_measurements(paths), ps, "llm", residual=True)
    written = json.loads(out.read_text())
    assert written.pop("fit")["fitted_at"].startswith("20")  # stamped when written: the answers' source date
    assert written == fitted.to_dict()
    assert json.loads(corr.read_text()) == correction.to_dict()


def test_fit_with_teacher_measurements_ships_its_own_dtype_and_records_them(capsys, tmp_path):
    """An fp8 run's fit taught by the GPU's bf16 rows: its params.json holds fp8's constants
    only, its "fit" record counts the teacher rows, the accuracy reuses that fit; teacher
    rows of the run's own dtype, or without --correction-out, are refused in one line."""
    import itertools

    import polars as pl

    from gemmperf.fit import accuracy as A
    from gemmperf.hardware import CATALOG
    from gemmperf.params import ParamSet

    ps = ParamSet(CATALOG["h100-sxm5-80gb"])
    cfgs = pl.DataFrame([{"tile_m": tm, "tile_n": tn, "persistent": p}
                         for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])
    paths = {}
    for dtype in ("bf16", "fp8"):
        for name, seed, shapes in (("dev", 1, itertools.product([512, 4096], [1024, 8192], [512, 4096])),
                                   ("more", 2, [(1024, 8192, 4096), (2048, 2048, 2048)])):
            path = tmp_path / dtype / f"{name}.csv"
            path.parent.mkdir(exist_ok=True)
            rows = A.synthetic_measurements(ps, list(shapes), cfgs, seed=seed + len(dtype))
            rows.with_columns(pl.lit(dtype).alias("dtype")).write_csv(path)
            paths.setdefault(dtype, []).append(str(path))
    out, corr = tmp_path / "params.json", tmp_path / "correction.json"
    common = ("--gpu", "h100-sxm5-80gb", "--families", "ws-hopper", "--dtype", "fp8", "--measurements", *paths["fp8"])
    code, _, err = run(capsys, "fit", *common, "--teacher-measurements", *paths["bf16"], "--out", str(out),
                       "--correction-out", str(corr))
    assert code == 0, err
    written = json.loads(out.read_text())
    assert {e["dtype"] for e in written["entries"]} == {"fp8"}
    assert written["fit"]["teacher_rows"] == 10 * cfgs.height and written["fit"]["teacher_measurements"]
    assert json.loads(corr.read_text())["meta"]["n_train"] == 2 * 10 * cfgs.height
    # scored with that fit, the accuracy must be taught the same rows
    code, _, err = run(capsys, "accuracy", *common, "--params", str(out), "--correction", str(corr),
                       "--models", "sol", "--folds", "2", "--out", str(tmp_path / "a.json"))
    last = err.strip().splitlines()[-1]  # after the note that no --microbench was given
    assert code == 2 and "teacher_rows" in last and "Traceback" not in err, err
    for extra in (("--teacher-measurements", *paths["fp8"], "--correction-out", str(corr)),
                  ("--teacher-measurements", *paths["bf16"])):
        code, _, err = run(capsys, "fit", *common, *extra, "--out", str(out))
        assert code == 2 and "--teacher-measurements" in err.strip().splitlines()[-1] and "Traceback" not in err, err


def test_ablations_only_refuses_what_it_cannot_honour(capsys):
    for extra in (("--ablations",), ("--models", "sol")):
        code, _, err = run(capsys, "accuracy", "--gpu", "h100-sxm5-80gb", "--measurements", "nosuch.csv",
                           "--out", "x.json", "--ablations-only", *extra)
        assert code == 2 and err.count("\n") == 1 and "--ablations-only" in err, err


# ------------------------------------------------------------ stage hashes from imports


def test_every_module_a_stage_imports_is_hashed():
    # the ast closure of each command's entry module must cover what importing it loads
    import subprocess
    import sys

    from gemmperf.app import stagehash
    from gemmperf.app.cli import COMMANDS, entry_module

    probe = ("import importlib, json, sys; importlib.import_module(sys.argv[1]); "
             "print(json.dumps(sorted(m for m in sys.modules if m == 'gemmperf' or m.startswith('gemmperf.'))))")
    for module in dict.fromkeys(entry_module(c) for c in COMMANDS):
        command = next(c for c in COMMANDS if entry_module(c) == module)
        out = subprocess.run([sys.executable, "-c", probe, module], capture_output=True, text=True, check=True)
        loaded = set(json.loads(out.stdout))
        missing = loaded - stagehash.stage_modules(command)
        assert not missing, f"{command}: imports {sorted(missing)} but they are not hashed"


def test_stage_hash_follows_the_imports(tmp_path):
    import shutil

    from gemmperf.app import stagehash

    root = tmp_path / "gemmperf"
    shutil.copytree(stagehash.PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = {s: stagehash.code_hash(s, root) for s in ("merge", "collect", "predict", "report", "fit")}
    with (root / "bench" / "merge.py").open("a") as fh:
        fh.write("\n# an edit\n")
    stagehash.code_hash.cache_clear()
    after = {s: stagehash.code_hash(s, root) for s in before}
    assert [s for s in before if before[s] != after[s]] == ["merge"]
    (root / "kernels" / "extra.cuh").write_text("// a kernel source\n")  # data file of a hashed package
    stagehash.code_hash.cache_clear()
    again = {s: stagehash.code_hash(s, root) for s in before}
    uses_kernels = {s for s in before if "gemmperf.kernels" in stagehash.stage_modules(s, root)}
    assert {s for s in before if after[s] != again[s]} == uses_kernels
    assert {"collect", "predict"} <= uses_kernels and "merge" not in uses_kernels
    assert "gemmperf.kernels.families" in stagehash.stage_modules("predict", root)  # legality decides the configs


# ------------------------------------------------------------ fp8 over several families


def test_fp8_testlist_predicts_and_optimizes_the_families_that_take_it(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # descriptor defaults
    (tmp_path / "t.csv").write_text("m,n,k\n256,256,256\n64,7168,2048\n")
    every = "ws-hopper,ws-ampere,simt"
    code, _, err = run(capsys, "predict", "--gpu", "h100-sxm5-80gb", "--testlist", "t.csv", "--families", every,
                       "--dtype", "fp8", "--model", "sol,ws-pipelined", "--output", "p.csv")
    assert code == 0, err
    import polars as pl

    pred = pl.read_csv(tmp_path / "p.csv")
    assert set(zip(pred["family"], pred["dtype"])) == {("ws-hopper", "fp8"), ("simt", "fp32")}
    assert set(pred.filter(pl.col("family") == "ws-hopper")["tile_k"]) == {128}
    code, _, err = run(capsys, "optimize", "--gpu", "h100-sxm5-80gb", "--testlist", "t.csv", "--family", every,
                       "--dtype", "fp8", "--out", "o.csv")
    assert code == 0, err
    assert "optimize: skipping ws-ampere: ws-ampere takes bf16 or fp16, not fp8\n" in err
    tilings = pl.read_csv(tmp_path / "o.csv")
    assert sorted(set(zip(tilings["family"], tilings["dtype"]))) == [("simt", "fp32"), ("ws-hopper", "fp8")]
    code, _, err = run(capsys, "optimize", "--gpu", "h100-sxm5-80gb", "--testlist", "t.csv", "--family",
                       "ws-ampere", "--dtype", "fp8", "--out", "o.csv")
    assert code == 2 and err.count("\n") == 1, err
    assert "--dtype fp8: no kernel of ws-ampere takes it (ws-ampere takes bf16 or fp16, not fp8)" in err


# ------------------------------------------------------------ split-K, stream-K, fp8 on the command line


def test_predict_and_simulate_take_split_k_and_stream_k(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    skinny = ["--gpu", "h100-sxm5-80gb", "--shape", "64x7168x2048", "--tile", "64x128x64", "--epilogue", "tma"]
    code, out, _ = run(capsys, "predict", *skinny, "--split-k", "4", "--json", "--explain")
    assert code == 0
    row = json.loads(out)[0]
    assert (row["split_k"], row["stream_k"]) == (4, False)
    assert "64x128x64, 4 stages, split-K 4:" in row["explanation"]
    assert "Each tile's K is split among 4 CTAs" in row["explanation"]
    code, out, _ = run(capsys, "predict", *skinny, "--persistent", "--raster", "grouped", "--stream-k", "--explain")
    assert code == 0 and "persistent, stream-K:" in out and "CTAs share the (tile, k-block) iterations" in out
    code, out, err = run(capsys, "simulate", *skinny, "--split-k", "4")
    assert code == 0 and out.startswith("warp,") and "ws-stage does not model K shared among CTAs" in err


def _optimizer_pins_k_sharing() -> bool:
    from gemmperf.optimize.space import FIELDS

    return {"split_k", "stream_k"} <= set(FIELDS)


@pytest.mark.skipif(not _optimizer_pins_k_sharing(), reason="the optimizer does not search split-K / stream-K yet")
def test_optimize_pins_split_k_and_stream_k(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    skinny = ["optimize", "--gpu", "h100-sxm5-80gb", "--shape", "64x7168x2048", "--family", "ws-hopper"]
    code, out, err = run(capsys, *skinny, "--split-k", "4")
    assert code == 0 and ", split-K 4, " in out and out.count("\n") == 1, err
    code, out, err = run(capsys, *skinny, "--stream-k")
    assert code == 0 and ", stream-K, " in out and "persistent" in out, err
    code, out, err = run(capsys, *skinny, "--split-k", "1", "--no-stream-k", "--json")
    assert code == 0 and {(s["split_k"], s["stream_k"]) for s in json.loads(out)} == {(1, False)}
    code, _, err = run(capsys, *skinny, "--stream-k", "--schedule", "pingpong")
    assert code == 2 and err.count("\n") == 1 and "split-K and stream-K run the cooperative schedule" in err
    code, _, err = run(capsys, *skinny, "--split-k", "0")
    assert code == 2 and "--split-k 0: must be >= 1" in err
    tl = tmp_path / "t.csv"
    tl.write_text("m,n,k\n64,7168,2048\n")
    code, _, err = run(capsys, "optimize", "--gpu", "h100-sxm5-80gb", "--testlist", str(tl), "--split-k", "2")
    assert code == 2 and "apply to one --shape, not a testlist" in err
