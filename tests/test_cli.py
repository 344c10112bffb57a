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
    src.write_text("m,n,k,family,dtype,tile_m,tile_n\n512,512,512,ws-hopper,bf16,128,128\n100,100,100,simt,fp32,64,64\n")
    dst = tmp_path / "out.csv"
    code, _, _ = run(capsys, "predict", "--gpu", "a100-sxm4-80gb", "--input", str(src), "--output", str(dst))
    assert code == 0
    lines = dst.read_text().splitlines()
    assert len(lines) == 3 and "predicted_us" in lines[0]


def test_simulate_outputs_every_event(capsys):
    code, out, _ = run(capsys, "simulate", "--gpu", "h100-sxm5-80gb", "--shape", "256x256x1024",
                       "--tile", "128x128x64", "--stages", "3", "--format", "json")
    assert code == 0
    events = json.loads(out)
    maths = [e for e in events if e["warp"] == "MATH"]
    assert len(maths) == 1024 // 64  # one multiply per stage, one wave
    assert all(e["end_us"] >= e["start_us"] for e in events)


def test_gpus_lists_catalog(capsys):
    code, out, _ = run(capsys, "gpus")
    assert code == 0 and "h100-sxm5-80gb" in out and "rtx-a6000" in out
