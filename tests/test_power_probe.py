"""benchmarks/power_probe.py without a GPU: every configuration it runs is legal on the
H100 and distinct, and the nvidia-smi samples it wrote on a lent H100 read back as
clocks, power and throttle reasons."""

from pathlib import Path

from gemmperf.hardware import get_gpu
from gemmperf.kernels import check_legal
from gemmperf.problem import KernelConfig
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "power_probe" / "h100_2026-11-26b"


def test_every_configuration_is_legal_and_distinct():
    probe = load_script(ROOT / "benchmarks" / "power_probe.py")
    gpu = get_gpu("h100-sxm5-80gb")
    keys = set()
    for label, m, n, k, fields in probe.CONFIGS:
        cfg = KernelConfig(family="ws-hopper", persistent=True, **fields)
        assert check_legal(cfg, gpu) is None, label
        keys.add((m, n, k, cfg.key()))
    assert len(keys) == len(probe.CONFIGS)


def test_the_smi_samples_read_back():
    probe = load_script(ROOT / "benchmarks" / "power_probe.py")
    samples = probe._smi_samples(RUN / "smi.csv")
    assert len(samples) > 500
    assert all(100 <= s["clock"] <= 1980 and 0 < s["power"] <= 1.05 * s["limit"] for s in samples)
    # the heavy configurations reached the 700 W cap (reason 0x4, the software power cap)
    assert max(s["power"] for s in samples) > 650 and any(s["reasons"].endswith("4") for s in samples)
