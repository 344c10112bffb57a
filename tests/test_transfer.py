"""fit.transfer: a fit carried to another GPU by the units of its values (issue 18)."""

from __future__ import annotations

import polars as pl
import pytest

from gemmperf.errors import UserError
from gemmperf.fit.transfer import copy_rates, transfer
from gemmperf.hardware import get_gpu
from gemmperf.models import ws_pipelined as W
from gemmperf.params import ParamSet, default_params

FAM, DT = "ws-hopper", "bf16"
H100 = get_gpu("h100-sxm5-80gb")


def _base(gpu, **changes) -> ParamSet:
    return ParamSet(gpu=gpu, entries={(FAM, DT): default_params(gpu, FAM, DT).replace(**changes)})


def _fitted(base: ParamSet, **changes) -> ParamSet:
    p = base.get(FAM, DT)
    constants = {name: value * 1.5 for name, value in W.default_constants(base.gpu).as_dict().items()}
    return ParamSet(gpu=base.gpu, entries={(FAM, DT): p.replace(**changes, constants=constants, source="fitted")})


def test_onto_the_same_gpu_it_changes_nothing():
    base = _base(H100, t_init_us=1.0, t_epilogue_us=3.0)
    fitted = _fitted(base, t_init_us=1.2, t_epilogue_us=2.7, load_latency_us=0.8, math_flops_per_us=8e6)
    out = transfer(fitted, base, base, FAM, DT).get(FAM, DT)
    want = fitted.get(FAM, DT)
    for name in ("t_init_us", "t_epilogue_us", "load_latency_us", "math_flops_per_us"):
        assert getattr(out, name) == pytest.approx(getattr(want, name))
    assert out.constants == pytest.approx(want.constants)
    assert out.source == "transferred"


def test_each_value_scales_by_its_unit():
    """A GPU of twice the clock and 1.5x the datasheet DRAM: per-clock constants double,
    fixed ones stay, the DRAM and L2 rates follow the measured copy rates, the
    microbenchmarked parameters keep the fit's factor, the load latency is carried."""
    fast = H100.replace(slug="h100-fast", sm_clock_mhz=2 * H100.sm_clock_mhz,
                        dram_bytes_per_s=1.5 * H100.dram_bytes_per_s)
    src_base = _base(H100, t_init_us=1.0, t_epilogue_us=4.0)
    dst_base = _base(fast, t_init_us=0.5, t_epilogue_us=2.0)
    fitted = _fitted(src_base, t_init_us=1.2, t_epilogue_us=3.0, load_latency_us=0.8)
    src_c = fitted.get(FAM, DT).constants
    out = transfer(fitted, src_base, dst_base, FAM, DT, {"dram": 3.0e6, "l2": 4.0e6}, {"dram": 4.5e6, "l2": 5.0e6})
    p = out.get(FAM, DT)
    assert out.gpu is fast
    assert p.t_init_us == pytest.approx(0.5 * 1.2 / 1.0)
    assert p.t_epilogue_us == pytest.approx(2.0 * 3.0 / 4.0)
    assert p.load_latency_us == pytest.approx(0.8)
    assert p.constants["smem_bytes_per_us"] == pytest.approx(2 * src_c["smem_bytes_per_us"])  # per clock
    assert p.constants["tile_overhead_us"] == pytest.approx(src_c["tile_overhead_us"])  # fixed
    assert p.constants["dram_eff_bytes_per_us"] == pytest.approx(1.5 * src_c["dram_eff_bytes_per_us"])
    assert p.constants["l2_bytes_per_us"] == pytest.approx(1.25 * src_c["l2_bytes_per_us"])
    # without measured copy rates, the datasheet's DRAM ratio
    p = transfer(fitted, src_base, dst_base, FAM, DT).get(FAM, DT)
    assert p.constants["l2_bytes_per_us"] == pytest.approx(1.5 * src_c["l2_bytes_per_us"])


def test_nothing_fitted_is_one_line():
    base = _base(H100)
    with pytest.raises(UserError, match="no fitted ws-hopper/fp8"):
        transfer(base, base, base, FAM, "fp8")


def test_copy_rates_take_the_fastest_valid_row():
    mb = pl.DataFrame({"kind": ["dram", "dram", "l2", "l2", "load"], "bytes": [2e9, 2e9, 3e7, 3e7, 1e6],
                       "time_us": [800.0, 700.0, 6.0, 0.0, 1.0], "status": ["ok", "ok", "ok", "ok", "ok"]})
    assert copy_rates(mb) == {"dram": pytest.approx(2e9 / 700.0), "l2": pytest.approx(3e7 / 6.0)}
    assert copy_rates(None) == {}
