"""fit.transfer: a fit carried to another GPU by the units of its values (issue 18)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.fit.transfer import microbench_figures, transfer
from gemmperf.hardware import get_gpu
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet, default_params

FAM, DT = "ws-hopper", "bf16"
H100 = get_gpu("h100-sxm5-80gb")


def _base(gpu, **changes) -> ParamSet:
    return ParamSet(gpu=gpu, entries={(FAM, DT): default_params(gpu, FAM, DT).replace(**changes)})


def _fitted(base: ParamSet, **changes) -> ParamSet:
    """Every default constant x 1.5, but the DRAM rate (0.9 of the datasheet) x 1.05: a fit
    keeps it under the datasheet (constants.ceilings)."""
    p = base.get(FAM, DT)
    constants = {name: value * (1.05 if name == "dram_eff_bytes_per_us" else 1.5)
                 for name, value in W.default_constants(base.gpu).as_dict().items()}
    return ParamSet(gpu=base.gpu, entries={(FAM, DT): p.replace(**changes, constants=constants, source="fitted")})


def test_onto_the_same_gpu_it_changes_nothing():
    base = _base(H100, t_init_us=1.0, t_epilogue_us=3.0)
    fitted = _fitted(base, t_init_us=1.2, t_epilogue_us=2.7, load_latency_us=0.8, math_flops_per_us=8e6)
    out = transfer(fitted, base, base).get(FAM, DT)
    want = fitted.get(FAM, DT)
    for name in ("t_init_us", "t_epilogue_us", "load_latency_us", "math_flops_per_us"):
        assert getattr(out, name) == pytest.approx(getattr(want, name))
    assert out.constants == pytest.approx(want.constants)
    assert out.source == "transferred"


def test_each_value_scales_by_its_unit():
    """A GPU of twice the clock and 1.5x the datasheet DRAM: per-clock constants double,
    fixed ones stay, the DRAM and L2 rates follow the measured copy rates, the
    microbenchmarked parameters keep the fit's factor (the epilogue's on its whole
    kernel), the launch and the load latency are carried."""
    fast = H100.replace(slug="h100-fast", sm_clock_mhz=2 * H100.sm_clock_mhz,
                        dram_bytes_per_s=1.5 * H100.dram_bytes_per_s)
    src_base = _base(H100, t_init_us=1.0, t_epilogue_us=4.0)
    dst_base = _base(fast, t_init_us=0.5, t_epilogue_us=2.0)
    fitted = _fitted(src_base, t_init_us=1.2, t_epilogue_us=3.0, load_latency_us=0.8)
    src_c = fitted.get(FAM, DT).constants
    out = transfer(fitted, src_base, dst_base, {"dram": 3.0e6, "l2": 4.0e6}, {"dram": 4.5e6, "l2": 5.0e6})
    p = out.get(FAM, DT)
    assert out.gpu is fast
    assert p.t_init_us == pytest.approx(1.2)
    assert p.t_epilogue_us == pytest.approx(3.0 * (2.0 + 0.5) / (4.0 + 1.0))
    assert p.load_latency_us == pytest.approx(0.8)
    assert p.constants["smem_bytes_per_us"] == pytest.approx(2 * src_c["smem_bytes_per_us"])  # per clock
    assert p.constants["tile_overhead_us"] == pytest.approx(src_c["tile_overhead_us"])  # fixed
    assert p.constants["dram_eff_bytes_per_us"] == pytest.approx(1.5 * src_c["dram_eff_bytes_per_us"])
    assert p.constants["l2_bytes_per_us"] == pytest.approx(1.25 * src_c["l2_bytes_per_us"])
    # without measured copy rates, the datasheet's DRAM ratio
    p = transfer(fitted, src_base, dst_base).get(FAM, DT)
    assert p.constants["l2_bytes_per_us"] == pytest.approx(1.5 * src_c["l2_bytes_per_us"])


def test_an_empty_kernels_difference_stays_out_of_the_launch_and_the_epilogue():
    """The H200's empty kernel runs in 0.72 us, the H100's in 1.05, yet their epilogue-only
    kernels take the same time (3.57 + 1.05 against 3.90 + 0.72 us): the launch is carried
    as it is and the epilogue, with the constants that scale with it, goes by the whole
    epilogue-only kernel (factor 1), not by its difference from the empty one (3.90 /
    3.57)."""
    h200 = get_gpu("h200-sxm-141gb")
    src_base = _base(H100, t_init_us=1.05, t_epilogue_us=3.57)
    dst_base = _base(h200, t_init_us=0.72, t_epilogue_us=3.90)
    fitted = _fitted(src_base, t_init_us=1.35, t_epilogue_us=0.45)
    p = transfer(fitted, src_base, dst_base).get(FAM, DT)
    src_c = fitted.get(FAM, DT).constants
    assert p.t_init_us == pytest.approx(1.35)
    assert p.t_epilogue_us == pytest.approx(0.45)
    for name in ("tma_epilogue_us", "epilogue_acc_us"):
        assert p.constants[name] == pytest.approx(src_c[name])
    # an epilogue-only kernel 1.2x as long: the epilogue's values 1.2x
    slower = transfer(fitted, src_base, _base(h200, t_init_us=0.72, t_epilogue_us=1.2 * 4.62 - 0.72)).get(FAM, DT)
    assert slower.t_epilogue_us == pytest.approx(0.45 * 1.2)
    assert slower.constants["epilogue_acc_us"] == pytest.approx(1.2 * src_c["epilogue_acc_us"])


def test_the_dram_rate_stays_under_the_targets_datasheet():
    """Carried by measured copy rates 1.5x apart onto a GPU whose datasheet DRAM rate is only
    1.2x, the fitted DRAM rate stops at the target's datasheet, as a fit on it would."""
    slow = H100.replace(slug="h100-1.2", dram_bytes_per_s=1.2 * H100.dram_bytes_per_s)
    src_base, dst_base = _base(H100), _base(slow)
    out = transfer(_fitted(src_base), src_base, dst_base, {"dram": 3.0e6, "l2": 4.0e6}, {"dram": 4.5e6, "l2": 4.0e6})
    assert out.get(FAM, DT).constants["dram_eff_bytes_per_us"] == pytest.approx(slow.dram_bytes_per_s / 1e6)


def test_epilogue_constants_scale_with_the_epilogue_microbenchmark():
    """The direct epilogue's per-thread cost and the TMA-store epilogue's fixed cost scale
    with the ratio of the two GPUs' epilogue-only kernels (t_epilogue_us + t_init_us), not
    with their defaults' (clock) ratio."""
    h200 = get_gpu("h200-sxm-141gb")
    src_base = _base(H100, t_epilogue_us=3.6, t_init_us=0.4)
    dst_base = _base(h200, t_epilogue_us=3.96, t_init_us=0.44)
    fitted = _fitted(src_base, t_epilogue_us=0.45)
    src_c = fitted.get(FAM, DT).constants
    out = transfer(fitted, src_base, dst_base).get(FAM, DT)
    for name in ("epilogue_acc_us", "tma_epilogue_us"):
        assert out.constants[name] == pytest.approx(1.1 * src_c[name])
    assert out.constants["tile_overhead_us"] == pytest.approx(src_c["tile_overhead_us"])
    assert out.t_epilogue_us == pytest.approx(1.1 * 0.45)


def test_nothing_fitted_is_one_line():
    with pytest.raises(UserError, match="no fitted parameters of h100-sxm5-80gb"):
        transfer(ParamSet(gpu=H100), _base(H100), _base(H100))


def test_copy_rates_are_the_fastest_valid_row():
    mb = pl.DataFrame({"kind": ["dram", "dram", "l2", "l2", "load"], "bytes": [2e9, 2e9, 3e7, 3e7, 1e6],
                       "time_us": [800.0, 700.0, 6.0, 0.0, 1.0], "status": ["ok", "ok", "ok", "ok", "ok"]})
    assert microbench_figures(mb) == {"dram": pytest.approx(2e9 / 700.0), "l2": pytest.approx(3e7 / 6.0)}
    assert microbench_figures(None) == {}


def _cluster_rows(times: dict, status: str = "ok") -> pl.DataFrame:
    """Microbenchmark rows of kind cluster: (cluster_m, cluster_n) -> time_us."""
    return pl.DataFrame({"kind": "cluster", "family": FAM, "dtype": DT, "status": status,
                         "cluster_m": [c[0] for c in times], "cluster_n": [c[1] for c in times],
                         "time_us": list(times.values()), "bytes": 1.0})


def test_the_cost_of_clusters_is_the_mean_difference_to_the_tiles_alone():
    rows = _cluster_rows({(1, 1): 5.0, (2, 1): 6.4, (1, 2): 6.6})
    assert microbench_figures(rows) == {"cluster": pytest.approx(1.5)}
    # no tile alone, a failed pair, or clusters no slower: no figure (the constant keeps its default's ratio)
    assert microbench_figures(_cluster_rows({(2, 1): 6.4, (1, 2): 6.6})) == {}
    assert microbench_figures(_cluster_rows({(1, 1): 5.0, (2, 1): 6.4}, status="timeout")) == {}
    assert microbench_figures(_cluster_rows({(1, 1): 5.0, (2, 1): 4.9})) == {}


def test_cluster_sync_scales_with_the_measured_cost_of_clusters():
    """The H100 and H200 fits' cluster_sync_us (1.36, 0.64 us) are in the ratio their cluster
    probes measured (1.52, 0.72 us): the transfer carries it by that ratio, and as it is
    where either GPU lacks the figure."""
    h200 = get_gpu("h200-sxm-141gb")
    src_base, dst_base = _base(H100), _base(h200)
    fitted = _fitted(src_base)
    was = fitted.get(FAM, DT).constants["cluster_sync_us"]
    out = transfer(fitted, src_base, dst_base, {"cluster": 1.52}, {"cluster": 0.72}).get(FAM, DT)
    assert out.constants["cluster_sync_us"] == pytest.approx(was * 0.72 / 1.52)
    assert out.constants["tile_overhead_us"] == pytest.approx(fitted.get(FAM, DT).constants["tile_overhead_us"])
    out = transfer(fitted, src_base, dst_base, {"cluster": 1.52}, {}).get(FAM, DT)
    assert out.constants["cluster_sync_us"] == pytest.approx(was)


REPO = Path(__file__).resolve().parent.parent
H200 = get_gpu("h200-sxm-141gb")


def _cli_results(tmp_path: Path) -> ParamSet:
    """results/ of a finished H100 run (a params.json of ws-hopper bf16, the shipped
    microbenchmarks) and the H200's microbenchmarks, in ``tmp_path``; the fitted set."""
    h100 = tmp_path / "results" / "h100-sxm5-80gb"
    (h100 / "shipped").mkdir(parents=True)
    shutil.copy(REPO / "results" / "h100-sxm5-80gb" / "shipped" / "microbench.csv", h100 / "shipped")
    (tmp_path / "results" / "h200-sxm-141gb").mkdir()
    shutil.copy(REPO / "results" / "h200-sxm-141gb" / "shipped" / "microbench.csv",
                tmp_path / "results" / "h200-sxm-141gb" / "microbench.csv")
    fitted = _fitted(_base(H100), t_init_us=1.2, t_epilogue_us=3.0, load_latency_us=0.8)
    fitted.save(h100 / "params.json")
    return fitted


def _carried(fitted: ParamSet) -> ParamSet:
    """``fitted`` (the H100's) carried onto the H200 as `predict --transfer-from` does, from
    the microbenchmarks ``_cli_results`` put in the working folder."""
    from gemmperf.fit.microbench import fit_paramset
    from gemmperf.tables import MICROBENCH_REQUIRED, read_measurements

    files = [Path("results/h100-sxm5-80gb/shipped/microbench.csv"), Path("results/h200-sxm-141gb/microbench.csv")]
    bases = [fit_paramset(g, str(f), [FAM], DT, log=lambda *_: None) for g, f in zip((H100, H200), files)]
    rates = [microbench_figures(read_measurements(f, required=MICROBENCH_REQUIRED)) for f in files]
    return transfer(fitted, *bases, *rates)


def test_predict_transfer_from_another_gpus_fit(tmp_path, monkeypatch, capsys):
    """gemmperf predict --gpu h200 --transfer-from h100: the H100's params.json carried onto
    the H200's microbenchmarks, the same prediction as fit.transfer's, said so."""
    from gemmperf.app.cli import main

    _cli_results(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["predict", "--gpu", "h200-sxm-141gb", "--transfer-from", "h100-sxm5-80gb",
                 "--shape", "4096x4096x4096", "--json"]) == 0
    out = capsys.readouterr().out
    row, = json.loads(out)
    want = _carried(ParamSet.load("results/h100-sxm5-80gb/params.json", H100))
    from gemmperf import configs
    from gemmperf.problem import KernelConfig, Shape

    rows = configs.cross([Shape(4096, 4096, 4096)], [KernelConfig(family=FAM, dtype=DT)])
    assert row["predicted_us"] == pytest.approx(W.predict(rows, want).get_column("predicted_us")[0], rel=1e-9)
    assert row["params_source"].startswith("transferred: the fit of h100-sxm5-80gb")
    assert "h200-sxm-141gb's microbenchmarks" in row["params_source"] and "unverified" in row["params_source"]


@pytest.mark.parametrize("argv, match", [
    (["--transfer-from", "a100-sxm4-80gb"], r"--transfer-from a100-sxm4-80gb: no fitted parameters in "
                                            r"results/a100-sxm4-80gb/params\.json"),
    (["--transfer-from", "nonsense"], r"--transfer-from nonsense: unknown GPU 'nonsense'"),
    (["--transfer-from", "h100-sxm5-80gb", "--corrected"],
     r"results/h100-sxm5-80gb/correction\.json: no residual correction for h100-sxm5-80gb"),
    (["--anchor", "h100.csv"], r"--anchor: give --transfer-from GPU too"),
    (["--transfer-from", "h100-sxm5-80gb", "--anchor", "missing.csv"], r"missing\.csv: measurement file not found"),
])
def test_predict_transfer_from_refusals_are_one_line(tmp_path, monkeypatch, capsys, argv, match):
    from gemmperf.app.cli import main

    _cli_results(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["predict", "--gpu", "h200-sxm-141gb", "--shape", "256x256x256", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(match, err), err


def test_a_what_if_gpu_is_carried_onto_its_descriptor(tmp_path, monkeypatch, capsys):
    """A catalog GPU nothing was measured on (A100): the H100's fit of ws-ampere carried
    onto its descriptor, the answer labelled unverified; its per-clock constants follow
    the clock ratio."""
    from gemmperf.app.cli import main

    _cli_results(tmp_path)
    h100 = tmp_path / "results" / "h100-sxm5-80gb"
    fitted = ParamSet.load(h100 / "params.json", H100)
    p = fitted.get(FAM, DT)
    fitted.entries[("ws-ampere", DT)] = p.replace(t_init_us=1.5)
    fitted.save(h100 / "params.json")
    monkeypatch.chdir(tmp_path)
    assert main(["predict", "--gpu", "a100-sxm4-80gb", "--transfer-from", "h100-sxm5-80gb", "--family",
                 "ws-ampere", "--tile", "128x128x32", "--stages", "3", "--shape", "4096x4096x4096", "--json"]) == 0
    row, = json.loads(capsys.readouterr().out)
    assert "a100-sxm4-80gb's descriptor (no microbenchmarks of a100-sxm4-80gb)" in row["params_source"]
    assert "unverified" in row["params_source"] and row["predicted_us"] > 0
    a100 = get_gpu("a100-sxm4-80gb")
    out = transfer(ParamSet(gpu=H100, entries={("ws-ampere", DT): fitted.get("ws-ampere", DT)}),
                   ParamSet(H100), ParamSet(a100)).get("ws-ampere", DT)
    clock = a100.sm_clock_mhz / H100.sm_clock_mhz
    assert out.constants["smem_bytes_per_us"] == pytest.approx(p.constants["smem_bytes_per_us"] * clock)
    assert out.t_init_us == pytest.approx(1.5)  # both bases are the descriptor default


def test_anchored_cancels_what_the_model_gets_wrong_on_both_gpus():
    """A kernel the model misjudges by the same factor on both GPUs (each configuration its
    own factor, 0.7x to 1.6x): the source's measured time times the model's ratio of the
    GPUs gives the target's time exactly; configurations the source did not measure have
    none, and on the same GPU the anchored time is the measured one."""
    import itertools

    import numpy as np

    from gemmperf.fit.accuracy import synthetic_measurements
    from gemmperf.fit.transfer import anchored

    from gemmperf.tables import CONFIG_DEFAULTS, TILING_COLUMNS

    base = {c: CONFIG_DEFAULTS[c] for c in TILING_COLUMNS}
    cfgs = pl.DataFrame([{**base, "tile_m": tm, "tile_n": tn, "persistent": p}
                         for tm, tn, p in itertools.product([64, 128], [128, 256], [False, True])])
    shapes = [(512, 1024, 4096), (4096, 8192, 512), (1, 4096, 4096)]
    src_fit, dst_model = ParamSet(gpu=H100), ParamSet(gpu=H200)
    src = synthetic_measurements(src_fit, shapes, cfgs, noise=0.0)
    dst = synthetic_measurements(dst_model, shapes, cfgs, noise=0.0)
    wrong = np.exp(np.random.default_rng(7).uniform(np.log(0.7), np.log(1.6), src.height))
    src = src.with_columns(pl.col("time_us") * wrong)  # both tables: the same rows, in the same order
    dst = dst.with_columns(pl.col("time_us") * wrong)
    unmeasured = synthetic_measurements(dst_model, [(777, 999, 333)], cfgs, noise=0.0)
    target = pl.concat([dst, unmeasured]).with_columns(
        W.predict(pl.concat([dst, unmeasured]), dst_model).get_column("predicted_us"))
    out = anchored(target, src, src_fit)
    got = out.head(dst.height)
    assert got.get_column("anchored_us").to_numpy() == pytest.approx(dst.get_column("time_us").to_numpy(), rel=1e-9)
    # the model alone is off by the factor, the reused source time by the GPUs' ratio
    assert not np.allclose(got.get_column("predicted_us").to_numpy(), dst.get_column("time_us").to_numpy(), rtol=0.05)
    assert not np.allclose(got.get_column("source_us").to_numpy(), dst.get_column("time_us").to_numpy(), rtol=0.01)
    assert out.tail(unmeasured.height).get_column("anchored_us").null_count() == unmeasured.height
    same = src.with_columns(W.predict(src, src_fit).get_column("predicted_us"))
    assert anchored(same, src, src_fit).get_column("anchored_us").to_numpy() == pytest.approx(
        src.get_column("time_us").to_numpy(), rel=1e-9)


def test_predict_anchored_on_the_source_gpus_measurements(tmp_path, monkeypatch, capsys):
    """--anchor: each configuration the H100 measured is also answered by its measured time
    times the ratio of the transfer's prediction to the H100 fit's; one it did not measure
    only by the transfer."""
    from gemmperf.app.cli import main

    fitted = _cli_results(tmp_path)
    monkeypatch.chdir(tmp_path)
    shipped = pl.read_csv(REPO / "results" / "h100-sxm5-80gb" / "shipped" / "measurements" / "llm.csv",
                          infer_schema_length=None)
    shipped.head(3).write_csv("h100.csv")
    asked = shipped.head(4)  # the fourth is not in h100.csv
    asked.write_csv("asked.csv")
    assert main(["predict", "--gpu", "h200-sxm-141gb", "--transfer-from", "h100-sxm5-80gb", "--input", "asked.csv",
                 "--anchor", "h100.csv", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    plain = [r for r in rows if r["model"] == "ws-pipelined"]
    anchored = [r for r in rows if r["model"] == "ws-pipelined anchored on h100-sxm5-80gb"]
    assert len(plain) == 4 and len(anchored) == 3
    src = W.predict(shipped.head(3), fitted).get_column("predicted_us").to_list()
    for r, own, measured in zip(anchored, src, shipped.head(3).get_column("time_us").to_list()):
        twin = next(p for p in plain if all(p[c] == r[c] for c in ("m", "n", "k", "tile_m", "tile_n", "stages",
                                                                   "cluster_m", "epilogue", "schedule")))
        assert r["predicted_us"] == pytest.approx(measured * twin["predicted_us"] / own, rel=1e-9)
        assert r["source_us"] == pytest.approx(measured)


def _kernels_off_by_tile(pset: ParamSet, shapes) -> pl.DataFrame:
    """Synthetic measurements of ``pset``'s GPU in which the model's error follows the
    configuration as a real kernel's does: 64-row tiles 1.3x its prediction, direct
    epilogues 0.85x (the same on any GPU of the architecture)."""
    import itertools

    from gemmperf.fit.accuracy import synthetic_measurements
    from gemmperf.tables import CONFIG_DEFAULTS, TILING_COLUMNS

    base = {c: CONFIG_DEFAULTS[c] for c in TILING_COLUMNS}
    cfgs = pl.DataFrame([{**base, "tile_m": tm, "tile_n": tn, "epilogue": e, "persistent": p}
                         for tm, tn, e, p in itertools.product([64, 128], [128, 256], ["tma", "direct"],
                                                               [False, True])])
    rows = synthetic_measurements(pset, shapes, cfgs, noise=0.01)
    off = pl.when(pl.col("tile_m") == 64).then(1.3).otherwise(1.0) * pl.when(
        pl.col("epilogue") == "direct").then(0.85).otherwise(1.0)
    return rows.with_columns(pl.col("time_us") * off)


def test_the_sources_correction_carries_with_the_transfer():
    """score(..., correction=): the transfer's prediction on the target corrected by the
    source's residual correction (same trees, the target's SM count), named after the
    source; where the model's error follows the configuration on both GPUs, the corrected
    transfer is closer to the target's times than the transfer alone, with nothing
    measured on the target."""
    import numpy as np

    from gemmperf.fit import protocol as P
    from gemmperf.fit.residual import Correction
    from gemmperf.fit.transfer import baselines, corrected_name, score, transfer_name

    shapes = [(m, n, k) for m in (128, 1024, 4096) for n in (2048, 8192) for k in (512, 4096)]
    src_fit, dst_base = ParamSet(gpu=H100), ParamSet(gpu=H200)
    src = P.development({"synthetic": _kernels_off_by_tile(src_fit, shapes)})
    dst = P.development({"synthetic": _kernels_off_by_tile(dst_base, shapes)})
    correction = Correction.fit(W.predict(src, src_fit), H100.sms)
    models = baselines(src_fit, ParamSet(gpu=H100), dst_base, dst_base)
    preds, summary = score(models, dst, source_fit=src_fit, correction=correction)
    name = corrected_name(src_fit, models)
    assert name == f"{transfer_name(src_fit, models)} + h100-sxm5-80gb correction"
    want = correction.onto(H200.sms)(W.predict(dst, dst_base)).get_column("corrected_us")
    assert preds.get_column(name).to_numpy() == pytest.approx(want.to_numpy(), rel=1e-12)
    mape = {r["model"]: r["mape_pct"] for r in summary.filter(pl.col("class") == "all").iter_rows(named=True)}
    assert mape[name] < 0.5 * mape[transfer_name(src_fit, models)]
    moved = preds.get_column(name).to_numpy() / preds.get_column("time_us").to_numpy()
    assert np.exp(np.abs(np.log(moved)).mean()) < 1.05
    with pytest.raises(UserError, match="needs the source's fit"):
        score(models, dst, correction=correction)


def test_a_correction_carried_onto_another_gpu_counts_its_sms():
    """Correction.onto: the same trees, the features in SMs counted on the target (a
    what-if GPU of 148 SMs sees other waves' fill than the H100's 132)."""
    from gemmperf.fit.residual import Correction, features

    rows = _kernels_off_by_tile(ParamSet(gpu=H100), [(4096, 4096, 1024), (1024, 8192, 4096), (512, 2048, 512)])
    pred = W.predict(rows, ParamSet(gpu=H100))
    corr = Correction.fit(pred, H100.sms, n_estimators=20, min_samples_leaf=4)
    moved = corr.onto(148)
    assert moved.estimator is corr.estimator and moved.sms == 148 and corr.sms == H100.sms
    assert moved.meta["trained_on_sms"] == H100.sms
    assert not features(pred, 148).equals(features(pred, H100.sms))


def test_predict_transfer_from_corrected_uses_the_source_gpus_correction(tmp_path, monkeypatch, capsys):
    """gemmperf predict --gpu h200 --transfer-from h100 --corrected: the carried prediction
    times the H100's residual correction (results/h100-sxm5-80gb/correction.json), said so."""
    from gemmperf import configs
    from gemmperf.app.cli import main
    from gemmperf.fit.residual import Correction
    from gemmperf.problem import KernelConfig, Shape

    fitted = _cli_results(tmp_path)
    shapes = [(m, n, k) for m in (128, 2048) for n in (4096, 8192) for k in (1024, 4096)]
    src = _kernels_off_by_tile(fitted, shapes)
    correction = Correction.fit(W.predict(src, fitted), H100.sms)
    correction.save(tmp_path / "results" / "h100-sxm5-80gb" / "correction.json")
    monkeypatch.chdir(tmp_path)
    argv = ["predict", "--gpu", "h200-sxm-141gb", "--transfer-from", "h100-sxm5-80gb", "--shape", "4096x4096x4096",
            "--tile", "64x256x64"]
    assert main([*argv, "--json"]) == 0
    plain, = json.loads(capsys.readouterr().out)
    assert main([*argv, "--corrected", "--json"]) == 0
    row, = json.loads(capsys.readouterr().out)
    rows = configs.cross([Shape(4096, 4096, 4096)], [KernelConfig(family=FAM, dtype=DT, tile_m=64, tile_n=256)])
    factor = correction.onto(H200.sms).factor(W.predict(rows, _carried(fitted)))[0]
    assert row["uncorrected_us"] == pytest.approx(plain["predicted_us"], rel=1e-12)
    assert row["predicted_us"] == pytest.approx(plain["predicted_us"] * factor, rel=1e-9)
    assert factor > 1.05  # the 64-row tile's error (1.3x), learned on the H100
    assert main([*argv, "--corrected"]) == 0
    assert "corrected: by the residual correction learned on h100-sxm5-80gb's GEMMs" in capsys.readouterr().out


def test_optimize_transfer_from_answers_for_the_gpu_moved_to(tmp_path, monkeypatch, capsys):
    """gemmperf optimize --gpu h200 --transfer-from h100: the Z3 answer under the H100's fit
    carried onto the H200 (as predict --transfer-from carries it), labelled so; with
    --corrected the H100's correction re-ranks it, and without the H100's correction.json
    one line says what is missing."""
    from gemmperf.app.cli import main
    from gemmperf.fit.residual import Correction
    from gemmperf.optimize import solve
    from gemmperf.problem import Shape

    fitted = _cli_results(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["optimize", "--gpu", "h200-sxm-141gb", "--transfer-from", "h100-sxm5-80gb", "--shape", "2440x5879x541",
            "--family", "ws-hopper"]
    assert main([*argv, "--json"]) == 0
    sol, = json.loads(capsys.readouterr().out)
    want = solve(Shape(2440, 5879, 541), FAM, H200, _carried(fitted), runner_up=False)
    assert sol["predicted_us"] == pytest.approx(want.predicted_us, rel=1e-9)
    assert sol["params_source"].startswith("transferred: the fit of h100-sxm5-80gb")
    assert main([*argv, "--corrected"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results/h100-sxm5-80gb/correction.json: no residual correction" in err
    src = _kernels_off_by_tile(fitted, [(m, n, k) for m in (128, 2048) for n in (4096, 8192) for k in (512, 4096)])
    Correction.fit(W.predict(src, fitted), H100.sms).save(tmp_path / "results" / "h100-sxm5-80gb" / "correction.json")
    assert main([*argv, "--corrected", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "corrected: ws-hopper" in out and "re-ranked by the residual correction" in out
    assert "corrected by the residual correction learned on h100-sxm5-80gb's GEMMs" in out
