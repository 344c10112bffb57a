"""benchmarks/kernel_speed.py without a GPU: options, shape lists, run order and budget,
telemetry parsing, and one shape measured end to end on fake kernels, timer and torch."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gemmperf.errors import UserError
from gemmperf.kernels import launch as launch_mod
from gemmperf.kernels import verify as verify_mod
from gemmperf.kernels.verify import VerifyResult
from gemmperf.problem import KernelConfig
from scripts import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "kernel_speed.py"


@pytest.fixture(scope="module")
def ks():
    return load_script(SCRIPT, "kernel_speed")


def test_help_names_every_option(ks, capsys):
    with pytest.raises(SystemExit) as exc:
        ks.parse_args(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for opt in ("--shapes", "--no-dsv3", "--no-llm", "--rounds", "--warmup-ms", "--max-minutes", "--out", "examples:"):
        assert opt in text


@pytest.mark.parametrize("bad", [["--rounds", "-1"], ["--max-minutes", "nan"], ["--block-ms", "inf"]])
def test_bad_numbers_are_one_line_errors(ks, bad):
    with pytest.raises(UserError, match="must be a finite number"):
        ks.parse_args(bad)


def test_parse_shape(ks):
    assert ks.parse_shape("4096X512x7") == (4096, 512, 7)
    for bad in ("4096x4096", "0x1x1", "ax1x1", "1x1x-1"):
        with pytest.raises(UserError, match="expected MxNxK"):
            ks.parse_shape(bad)


def test_default_lists_squares_dsv3_and_llm_from_m_128(ks):
    lists = ks.shape_lists(None)
    assert lists["square"] == [(4096,) * 3, (8192,) * 3]
    assert len(lists["dsv3"]) == 40
    assert lists["llm"] and min(s[0] for s in lists["llm"]) == 128 and len(lists["llm"]) == 32
    tags = ks.tags_of(lists)
    assert tags[(8192, 8192, 8192)] == ["square", "llm"]  # measured once, counted in both
    assert len(tags) == 2 + 40 + 32 - 1
    assert ks.shape_lists(None, dsv3=False, llm=False) == {"square": [(4096,) * 3, (8192,) * 3]}
    assert ks.shape_lists(["1x2x3"]) == {"shapes": [(1, 2, 3)]}


def test_bad_testlist_row_names_file_line_and_column(ks, tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("m,n,k\n1,2,3\n4,x,6\n")
    with pytest.raises(UserError, match=r"t.csv:3: column n = 'x'"):
        ks.read_testlist(p)


def test_spread_order_is_a_permutation_whose_prefixes_cover_the_range(ks):
    for count in (1, 2, 5, 32, 40):
        order = ks.spread_order(count)
        assert sorted(order) == list(range(count))
    first = ks.spread_order(40)[:4]
    assert {i * 4 // 40 for i in first} == {0, 1, 2, 3}  # one from each quarter


def test_run_order_squares_first_then_lists_in_turn(ks):
    lists = ks.shape_lists(None)
    order = ks.run_order(lists)
    assert order[:2] == lists["square"]
    assert len(order) == len(set(order)) == len(ks.tags_of(lists))
    head = order[2:12]
    assert sum(s in lists["dsv3"] for s in head) >= 4 and sum(s in lists["llm"] for s in head) >= 4


def test_budget(ks):
    assert ks.launches_for(100.0, 0.01, 3) == 10_000
    assert ks.launches_for(100.0, 60.0, 3) == 3
    assert ks.launches_for(100.0, 1e-9, 3) == ks.MAX_LAUNCHES
    per = ks.shape_seconds(4, 200.0, 80.0, 6, 0.3)
    assert 2.5 < per < 4.5  # the default run (73 shapes) fits in 6 minutes with start-up
    assert 73 * per < 5 * 60
    todo, skipped = ks.fit_budget(list(range(10)), 2.0, 9.0)
    assert todo == [0, 1, 2, 3] and skipped == [4, 5, 6, 7, 8, 9]


def test_telemetry_parsing(ks):
    assert ks.decode_reasons(0x4 | 0x40) == ["sw-power-cap", "hw-thermal"]
    assert ks.decode_reasons(0) == []
    assert ks.decode_reasons(0x1000) == ["0x1000"]
    got = ks.parse_smi("1755, 698.52, 61, P0")
    assert got == {"sm_mhz": 1755.0, "power_w": 698.52, "temp_c": 61.0, "pstate": "P0", "reasons": None}
    assert ks.parse_smi("1980, [N/A], 40, P0")["power_w"] is None
    assert ks.parse_smi("garbage") == {}


# ----------------------------------------------------------------- one shape on fakes


class FakeTimer:
    """Every block launches once (to learn who runs) and reports that side's speed."""

    stream = 0

    def __init__(self, log, speed):
        self.log, self.speed, self.calls = log, speed, []

    def run(self, launch, n_warm, n, read=True):
        launch()
        who = self.log[-1]
        self.calls.append((who, n_warm, n, read))
        state = {"sm_mhz": 1755.0, "power_w": 690.0, "temp_c": 60, "pstate": "P0", "reasons": ["sw-power-cap"]}
        return {"ms": self.speed[who], "launches": n, "warmup": n_warm, "launch_cpu_ms": 0.001,
                "launch_bound": False, **(state if read else {})}

    def calibrate(self, launch):
        return self.run(launch, 1, 3, read=False)["ms"]


class FakeTensor:
    def __mul__(self, other):
        return self

    def __sub__(self, other):
        return self

    def t(self):
        return self

    def to(self, dtype):
        return self


def fake_torch(log):
    cuda = SimpleNamespace(synchronize=lambda: None, empty_cache=lambda: None)
    return SimpleNamespace(bfloat16="bf16", float32="fp32", cuda=cuda, rand=lambda *a, **k: FakeTensor(),
                           matmul=lambda a, b: log.append("cublas"))


class FakeRunner:
    def __init__(self, kern, m, n, k, stream=0, log=None):
        self.kern, self.log, self.stream, self.esize = kern, log, stream, 2

    def plan(self, stream):
        self.launch()

    def fill(self, seed):
        pass

    def launch(self):
        self.log.append(self.kern.config.key())

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def fake_kernel(tile_n, stages):
    cfg = KernelConfig("ws-hopper", "bf16", 128, tile_n, 64, stages, persistent=True, raster="grouped")
    res = SimpleNamespace(registers=168, smem_total=197696, spills=0)
    return SimpleNamespace(config=cfg, resources=res)


def test_one_shape_wrong_winner_skipped_and_rounds_interleaved(ks, monkeypatch):
    log = []
    fast_wrong, good = fake_kernel(256, 4), fake_kernel(128, 6)
    speed = {"cublas": 0.20, fast_wrong.config.key(): 0.10, good.config.key(): 0.25}
    monkeypatch.setattr(launch_mod, "GemmRunner", lambda kern, m, n, k, stream=0: FakeRunner(kern, m, n, k, log=log))
    monkeypatch.setattr(verify_mod, "verify", lambda kern, m, n, k, runner=None: VerifyResult(
        kern is good, 0.001, "ok" if kern is good else "12 elements out of tolerance"))
    timer = FakeTimer(log, speed)
    opts = argparse.Namespace(cool_pause=0.0, rounds=4, warmup_ms=200.0, block_ms=80.0)
    row = ks.measure_shape(timer, fake_torch(log), {"ws-hopper": [fast_wrong, good]}, (4096, 4096, 4096), opts)

    hop = row["ws-hopper"]
    assert hop["ok"] and hop["config"] == good.config.key()
    assert list(hop["wrong"]) == [fast_wrong.config.key()]  # printed WRONG, never counted
    flops = 2.0 * 4096**3
    assert hop["tflops"] == pytest.approx(flops / 0.25 / 1e9)
    assert row["cublas_tflops"] == pytest.approx(flops / 0.20 / 1e9)
    assert row["cublas_interleaved_tflops"] == pytest.approx(flops / 0.20 / 1e9)
    assert hop["figure"]["sm_mhz"] == 1755.0 and hop["figure"]["reasons"] == ["sw-power-cap"]
    timed = [c for c in timer.calls if c[3]]  # blocks with telemetry: cuBLAS cool, ours cool, the rounds
    ours = good.config.key()
    assert [c[0] for c in timed[:2]] == ["cublas", ours]
    assert timed[0][2] * 0.20 == pytest.approx(ks.COOL_MS) and timed[1][2] * 0.25 == pytest.approx(ks.COOL_MS)
    assert hop["cool"]["tflops"] == pytest.approx(flops / 0.25 / 1e9)
    assert ks.cool_ratio(row, "ws-hopper") == pytest.approx(0.20 / 0.25)
    rounds = timed[2:]
    who = [c[0] for c in rounds]
    assert who == [ours, "cublas", "cublas", ours, ours, "cublas", "cublas", ours]
    assert len({(c[1], c[2]) for c in rounds}) == 1  # same warm-up and launches on both sides
    assert rounds[0][1] == 1000 and rounds[0][2] == 400  # 200 ms and 80 ms at cuBLAS's 0.2 ms
    cool, inter = ks.ratios(row, "ws-hopper")
    assert cool == pytest.approx(0.8) and inter == pytest.approx(0.8)


def test_all_wrong_is_reported_and_not_counted(ks, monkeypatch):
    log = []
    only = fake_kernel(256, 4)
    monkeypatch.setattr(launch_mod, "GemmRunner", lambda kern, m, n, k, stream=0: FakeRunner(kern, m, n, k, log=log))
    monkeypatch.setattr(verify_mod, "verify", lambda *a, **k: VerifyResult(False, float("nan"), "wrote past C"))
    timer = FakeTimer(log, {"cublas": 0.2, only.config.key(): 0.1})
    opts = argparse.Namespace(cool_pause=0.0, rounds=2, warmup_ms=200.0, block_ms=80.0)
    row = ks.measure_shape(timer, fake_torch(log), {"ws-hopper": [only]}, (64, 64, 64), opts)
    row["key"] = (64, 64, 64)
    assert row["ws-hopper"]["ok"] is False and ks.ratios(row, "ws-hopper") == (None, None)
    tags = {(64, 64, 64): ["shapes"]}
    summary = ks.summarize([row], tags, "ws-hopper")
    assert summary["shapes"]["counted"] == 0 and summary["shapes"]["median_pct_interleaved"] is None
    md = ks.markdown([row], tags, ["ws-hopper"], summary, ["a note"])
    assert "| 64x64x64 | shapes |" in md and "WRONG" in md and "- a note" in md


def test_summary_medians_and_table(ks):
    def row(shape, ours, cool, inter, bound=False):
        fig = {"tflops": ours, "sm_mhz": 1700.0, "power_w": 700.0, "launch_bound": bound}
        return {"key": shape, "shape": "x".join(map(str, shape)), "cublas_tflops": cool,
                "cublas_interleaved_tflops": inter, "cublas": {"cool": {"tflops": cool}, "interleaved": {"tflops": inter}},
                "ws-hopper": {"ok": True, "tflops": ours, "config": "cfg", "figure": fig,
                              "cool": {"tflops": ours * 1.1}}}

    rows = [row((1, 1, 1), 90, 100, 90), row((2, 2, 2), 50, 100, 100), row((3, 3, 3), 80, 100, 80, bound=True)]
    tags = {(1, 1, 1): ["dsv3"], (2, 2, 2): ["dsv3"], (3, 3, 3): ["dsv3", "llm"]}
    s = ks.summarize(rows, tags, "ws-hopper")
    assert s["dsv3"]["median_pct_interleaved"] == pytest.approx(100.0)
    assert s["dsv3"]["median_pct_cool"] == pytest.approx(80.0)
    assert s["llm"] == {"shapes": 1, "counted": 1, "median_pct_cool": pytest.approx(80.0),
                        "median_pct_cool_vs_cool": pytest.approx(88.0),
                        "median_pct_interleaved": pytest.approx(100.0)}
    md = ks.markdown(rows, tags, ["ws-hopper"], s, [])
    assert "80.0* (1700 MHz, 700 W)" in md  # launch-bound figures are marked
    assert ("median of ws-hopper over dsv3 (3 of 3 shapes counted): 100% of interleaved cuBLAS, 80% of cool "
            "cuBLAS, 88% cool of cool cuBLAS") in md


def test_no_gpu_run_exits_with_one_line(ks, tmp_path):
    from gemmperf.hardware import NoGPU, probe

    try:
        probe(0)
        pytest.skip("a GPU is present")
    except NoGPU:
        pass
    env = {"PYTHONPATH": str(SCRIPT.parent.parent / "src"), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert res.returncode == 2
    assert res.stderr.startswith("kernel_speed: no GPU") and len(res.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


ABLATION = SCRIPT.parent / "kernel_ablation.py"


def test_ablation_variants_are_legal_one_change_each_and_bad_input_is_one_line(tmp_path):
    """benchmarks/kernel_ablation.py without a GPU: every variant is a legal H100
    configuration, names are unique, an unknown --only name or a bad shape is one line
    (exit 2), and with no GPU it stops with one line before writing anything."""
    ab = load_script(ABLATION, "kernel_ablation")
    from gemmperf.hardware import CATALOG, NoGPU, probe
    from gemmperf.kernels import check_legal

    names = [name for name, _, _ in ab.VARIANTS]
    assert len(set(names)) == len(names) and names[0] == "baseline"
    assert all(check_legal(cfg, CATALOG["h100-sxm5-80gb"]) is None for _, _, cfg in ab.VARIANTS)
    with pytest.raises(UserError, match="--only 'nope'"):
        ab.parse_args(["--only", "nope"])
    env = {"PYTHONPATH": str(SCRIPT.parent.parent / "src"), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, str(ABLATION), "--shapes", "4096x4096", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("kernel_ablation: shape '4096x4096'")
    try:
        probe(0)
        return  # a GPU is present: the no-GPU line cannot be seen here
    except NoGPU:
        pass
    res = subprocess.run([sys.executable, str(ABLATION), "--out", str(tmp_path)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("kernel_ablation: no GPU")
    assert len(res.stderr.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


def test_decode_lists_and_fp8_candidates(ks):
    lists = ks.shape_lists(None, dsv3=False, llm=False, decode=True, squares=False)
    assert set(lists) == {"decode", "llm-decode"}
    assert all(m <= ks.DECODE_MAX_M for shapes in lists.values() for m, _, _ in shapes)
    assert (1, 4096, 14336) in lists["llm-decode"] and len(lists["decode"]) == 60
    fp8 = ks.candidates("ws-hopper", "fp8")
    assert fp8 and all(c.dtype == "fp8" and c.tile_k == 128 for c in fp8)
    assert ks.candidates("simt", "fp8") == []
    assert any(c.split_k > 1 for c in fp8) and any(c.stream_k for c in fp8)


def test_cold_l2_copies_cover_three_l2s(ks):
    assert ks.copies_for(1, 4096, 4096, 2, None) == 1
    assert ks.copies_for(1, 4096, 4096, 2, 50 * 2**20) == 5  # 32 MB a copy, 150 MB
    assert ks.copies_for(1, 64, 64, 2, 50 * 2**20) == 64  # capped
