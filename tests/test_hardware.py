import math

import pytest

from gemmperf.hardware import CATALOG, GPU, NoGPU, get_gpu, probe, slug_for_name
from gemmperf.errors import UserError


def test_catalog_has_the_required_gpus():
    assert {"h100-sxm5-80gb", "h200-sxm-141gb", "a100-sxm4-80gb", "rtx-a6000", "b200"} <= set(CATALOG)


@pytest.mark.parametrize(
    "slug, dtype, clock_mhz, datasheet_tflops",
    [
        ("h100-sxm5-80gb", "bf16", 1830, 989.4),  # H100 SXM datasheet, dense
        ("a100-sxm4-80gb", "bf16", 1410, 312.0),
        ("rtx-a6000", "fp16", 1800, 154.8),
        ("a100-sxm4-80gb", "fp32", 1410, 19.5),
    ],
)
def test_peak_rates_match_datasheets(slug, dtype, clock_mhz, datasheet_tflops):
    gpu = CATALOG[slug].replace(sm_clock_mhz=clock_mhz)
    assert math.isclose(gpu.peak_flops(dtype) / 1e12, datasheet_tflops, rel_tol=0.01)


def test_descriptor_round_trip_and_lookup():
    g = CATALOG["h200-sxm-141gb"]
    assert GPU.from_dict(g.to_dict()) == g
    assert g.compute_capability == (9, 0)
    with pytest.raises(UserError, match="unknown GPU"):
        get_gpu("h300")
    assert not CATALOG["a100-sxm4-80gb"].supports("fp8")


def test_names_map_to_slugs():
    assert slug_for_name("NVIDIA H100 80GB HBM3") == "h100-sxm5-80gb"
    assert slug_for_name("NVIDIA H200") == "h200-sxm-141gb"
    assert slug_for_name("NVIDIA GeForce RTX 4090") == "geforce-rtx-4090"


def test_probe_says_clearly_when_there_is_no_gpu():
    try:
        gpu = probe()
    except NoGPU as err:
        assert str(err).startswith("no GPU")
        return
    # on a GPU machine the probe fills every figure
    assert gpu.sms > 0 and gpu.dram_bytes_per_s > 1e11 and gpu.source == "probed"
