"""benchmarks/split_k_probe.py and benchmarks/remeasure.py without a GPU: the probe's runs
are legal, its SASS count tells serialized fix-up loads from batched ones, the run on a
lent H200 reads back (split 2 of a 128x256 tile on one-CTA clusters 2.2x the unsplit
kernel before the fix, 1.05x after); a fix's stale rows are set aside and measured again
into their tables."""

import csv
from pathlib import Path

from gemmperf.hardware import get_gpu
from scripts import load_script, refused

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "split_k_probe"


def test_the_probes_runs_are_legal_and_named_apart():
    script = load_script(ROOT / "benchmarks" / "split_k_probe.py")
    tasks = script.tasks()
    assert not refused(tasks, get_gpu("h200-sxm-141gb")) and not refused(tasks, get_gpu("h100-sxm5-80gb"))
    names = [tuple(script.label(t).values()) + (t["m"],) for t in tasks]
    assert len(set(names)) == len(names)
    assert {t["split_k"] for t in tasks} == {1, 2, 3, 4}


def test_the_sass_count_tells_serialized_loads_from_batched_ones():
    script = load_script(ROOT / "benchmarks" / "split_k_probe.py")
    serial = "".join(f"  @P2 BRA `(.L_x_{i}) ;\n  LDG.E.64.STRONG.GPU R56, desc[UR10][R56.64+-0x{i:x}00] ;\n"
                     for i in range(64))
    batched = "".join(f"  @!P3 LDG.E.64.STRONG.GPU R{60 + 2 * (i % 16)}, desc[UR14][R{60 + 2 * (i % 16)}.64] ;\n"
                      for i in range(32))
    assert script.serial_loads(serial) == 64 > script.SERIAL
    assert script.serial_loads(batched) == 2 <= script.SERIAL
    assert script.serial_loads("  EXIT ;\n") == 0
    assert len(script.sass_configs()) > 300  # every tile, cluster shape, epilogue and dtype


def test_the_h200_run_before_and_after_the_fix_reads_back():
    script = load_script(ROOT / "benchmarks" / "split_k_probe.py")

    def times(name):
        with open(RESULTS / name) as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == len(script.tasks()) and all(r["status"] == "ok" for r in rows)
        return {(r["shape"], r["tile"], r["cluster"], r["persistent"], r["mode"], r["split_k"]): float(r["time_us"])
                for r in rows}

    for name, low, high in (("split_k_probe_h200_2026-11-29.csv", 2.0, 2.4),
                            ("split_k_probe_h200_fixed_2026-11-29.csv", 1.0, 1.1)):
        t = times(name)
        key = ("4x256x512", "128x256", "1x1", "False", "full")
        assert low < t[key + ("2",)] / t[key + ("1",)] < high
        assert t[key + ("3",)] / t[key + ("1",)] < 1.15  # split 3 was never slow
        clustered = ("4x256x512", "128x256", "1x2", "False", "full")
        assert t[clustered + ("2",)] / t[clustered + ("1",)] < 1.1
    text = "\n".join(script.summary([{**r, "persistent": r["persistent"]} for r in
                                     csv.DictReader(open(RESULTS / "split_k_probe_h200_fixed_2026-11-29.csv"))]))
    assert "4x256x512 128x256:" in text and "S2/S1" in text


def _table(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _row(split_k, tile_n, time_us, timestamp):
    from gemmperf.problem import KernelConfig

    cfg = KernelConfig("ws-hopper", "bf16", 128, tile_n, 64, 4, split_k=split_k)
    return {"m": 4, "n": 256, "k": 512, **{k: str(v).lower() if isinstance(v, bool) else v
                                           for k, v in cfg.as_dict().items()},
            "status": "ok", "time_us": time_us, "timestamp": timestamp}


def test_stale_rows_are_set_aside_then_measured_again_into_their_table(tmp_path, monkeypatch, capsys):
    script = load_script(ROOT / "benchmarks" / "remeasure.py")
    monkeypatch.setattr(script, "RESULTS", tmp_path)
    monkeypatch.setattr(script, "ROOT", tmp_path)
    table = tmp_path / "gpu-a" / "shipped" / "measurements" / "random.csv"
    keep, stale = _row(1, 256, 7.9, "2026-11-25T07:00:00"), _row(2, 256, 24.6, "2026-11-25T07:01:00")
    unclustered_128 = _row(2, 128, 8.0, "2026-11-25T07:02:00")  # 64 accumulators a thread: not stale
    _table(table, [keep, stale, unclustered_128])
    assert list(script.stale_rows("gpu-a")) == ["shipped+measurements+random.csv"]
    assert script.main(["--supersede", "gpu-a"]) == 0
    with open(table) as f:
        assert [r["time_us"] for r in csv.DictReader(f)] == ["7.9", "8.0"]
    aside = tmp_path / "gpu-a" / "superseded" / "shipped+measurements+random.csv"
    assert [r["time_us"] for r in csv.DictReader(open(aside))] == ["24.6"]
    assert [r["time_us"] for r in script.stale_rows("gpu-a")["shipped+measurements+random.csv"]] == ["24.6"]
    # as --out on the GPU writes it: the row measured again, after the fix
    measured = tmp_path / "measured"
    again = {**stale, "time_us": 11.7, "timestamp": "2026-11-29T17:30:00"}
    _table(measured / "shipped+measurements+random.csv", [again])
    assert script.main(["--merge", str(measured), "--gpu", "gpu-a"]) == 0
    with open(table) as f:
        assert sorted(float(r["time_us"]) for r in csv.DictReader(f)) == [7.9, 8.0, 11.7]
    assert not aside.exists() and script.stale_rows("gpu-a") == {}


def test_the_fixup_run_reads_back_and_a_wide_tiles_partial_costs_more_round_trips_not_more_bytes():
    script = load_script(ROOT / "benchmarks" / "split_k_probe.py")
    with open(RESULTS / "split_k_fixup_h200_2026-11-29.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 96 and all(r["status"] == "ok" for r in rows)
    split = {tuple(line.split()[:2]): float(line.split()[2]) for line in script.fixup_slopes(rows)[1:]}
    assert set(split) == {("128x256", "16"), ("128x256", "128"), ("256x128", "16"), ("256x128", "256"),
                          ("128x128", "16"), ("128x128", "128")}
    # a few rows a partial: a 128-accumulator tile's costs 1.5-1.7x a 64-accumulator tile's
    for wide in ("128x256", "256x128"):
        assert 1.4 < split[(wide, "16")] / split[("128x128", "16")] < 2.0
    # whole partials: twice the bytes, not twice the time
    assert split[("128x256", "128")] < 1.5 * split[("128x128", "128")]
