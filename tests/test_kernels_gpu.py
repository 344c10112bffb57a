"""On a GPU: every family and mode gives correct results on odd shapes.

Skipped (with the probe's reason) where there is no GPU.
"""

import pytest

pytest.importorskip("numpy")
pytest.importorskip("cuda.bindings")

from gemmperf.hardware import NoGPU, probe  # noqa: E402
from gemmperf.kernels import get_family  # noqa: E402
from gemmperf.problem import MODES, KernelConfig  # noqa: E402

try:
    GPU = probe()
    REASON = ""
except NoGPU as err:  # also: no driver, no cuda-python
    GPU, REASON = None, str(err)

pytestmark = pytest.mark.skipif(GPU is None, reason=REASON or "no GPU")

SHAPES = [(1, 1, 1), (17, 33, 65), (1000, 1000, 1000), (4096, 257, 7168)]
SMALL = [(1, 1, 1), (17, 33, 65), (64, 130, 7), (200, 129, 300)]


def _configs():
    out = [
        KernelConfig("ws-ampere", "bf16", 128, 128, 32, 4, raster="grouped"),
        KernelConfig("ws-ampere", "fp16", 64, 128, 64, 3, persistent=True),
        KernelConfig("simt", "fp32", 128, 128, 8, 2),
        KernelConfig("simt", "fp32", 64, 64, 16, 1, raster="column"),
    ]
    if GPU is not None and get_family("ws-hopper").runs_on(GPU):
        out = [
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, persistent=True, raster="grouped"),
            KernelConfig("ws-hopper", "bf16", 256, 128, 64, 3),
            KernelConfig("ws-hopper", "fp16", 64, 64, 64, 2, persistent=True, raster="column"),
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, 2, 1, True, "grouped", epilogue="tma"),
            KernelConfig("ws-hopper", "fp16", 128, 128, 64, 4, 1, 2, False, "row", epilogue="tma",
                         schedule="pingpong"),
            KernelConfig("ws-hopper", "bf16", 256, 128, 64, 3, 2, 2, True, "grouped", epilogue="tma", group_m=2),
            KernelConfig("ws-hopper", "bf16", 64, 256, 64, 4, 2, 1, True, "row", schedule="pingpong",
                         persistent_ctas=64),
            KernelConfig("ws-hopper", "bf16", 64, 128, 64, 6, epilogue="tma", split_k=4),
            KernelConfig("ws-hopper", "fp16", 128, 128, 64, 4, 2, 1, True, "grouped", split_k=3),
            KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, 2, 1, True, "grouped", epilogue="tma", stream_k=True),
            KernelConfig("ws-hopper", "bf16", 64, 64, 64, 4, 1, 1, True, "row", stream_k=True, persistent_ctas=100),
            KernelConfig("ws-hopper", "fp8", 128, 256, 128, 4, 2, 1, True, "grouped", epilogue="tma"),
            KernelConfig("ws-hopper", "fp8", 64, 128, 128, 4, 1, 2, False, "row", schedule="pingpong"),
            KernelConfig("ws-hopper", "fp8", 64, 256, 128, 4, epilogue="tma", split_k=16),
            KernelConfig("ws-hopper", "fp8", 128, 128, 128, 4, 1, 1, True, "grouped", epilogue="tma", stream_k=True),
        ] + out
    return out


CONFIGS = _configs()


@pytest.fixture(scope="module")
def arch():
    from gemmperf.kernels.launch import device_arch, ensure_context

    ensure_context(0)
    return device_arch(0)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.key() for c in CONFIGS])
def test_full_mode_correct_on_odd_shapes(cfg, arch):
    from gemmperf.kernels.builder import build
    from gemmperf.kernels.verify import verify

    kern = build(cfg, arch)
    for m, n, k in SHAPES:
        ok, rel, why = verify(kern, m, n, k)
        assert ok, f"{cfg.key()} {m}x{n}x{k}: {why}"
    for m, n, k in SMALL:
        ok, rel, why = verify(kern, m, n, k, exhaustive=True)
        assert ok, f"{cfg.key()} {m}x{n}x{k} (exhaustive): {why}"


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.key() for c in CONFIGS])
@pytest.mark.parametrize("mode", [m for m in MODES if m != "full"])
def test_ablation_modes(cfg, mode, arch):
    from gemmperf.kernels.builder import build
    from gemmperf.kernels.verify import verify

    kern = build(cfg.replace(mode=mode), arch)
    for m, n, k in [(1, 1, 1), (17, 33, 65), (1000, 1000, 1000)]:
        ok, rel, why = verify(kern, m, n, k)
        assert ok, f"{cfg.replace(mode=mode).key()} {m}x{n}x{k}: {why}"


def test_wrong_results_are_caught(arch):
    """A kernel told the wrong K (half of it) must fail verification."""
    from gemmperf.kernels import verify as V
    from gemmperf.kernels.builder import build
    from gemmperf.kernels.launch import GemmRunner

    cfg = CONFIGS[0]
    kern = build(cfg, arch)
    with GemmRunner(kern, 300, 300, 256) as run:
        from gemmperf.kernels.launch import launch_plan

        short = launch_plan(kern, run.A.ptr, run.B.ptr, run.C.ptr, 300, 300, 128, sms=run.sms,
                            lda=run.lda, ldb=run.ldb, ldc=run.ldc)
        run.launch = lambda: short(run.stream)
        ok, rel, why = V.verify(kern, 300, 300, 256, runner=run)
    assert not ok and "tolerance" in why


@pytest.mark.skipif(GPU is None or not get_family("ws-hopper").runs_on(GPU), reason=REASON or "needs sm_90a")
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1)])
def test_direct_epilogue_writes_an_unpadded_c(cluster, arch):
    """The direct epilogue takes a C whose rows are not padded (ldc = N, odd N)."""
    from gemmperf.kernels.builder import build
    from gemmperf.kernels.launch import GemmRunner
    from gemmperf.kernels.verify import verify

    cfg = KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, *cluster, True, "grouped")
    kern = build(cfg, arch)
    for m, n, k in [(17, 33, 65), (300, 257, 200), (1000, 999, 1000)]:
        with GemmRunner(kern, m, n, k, ldc=n) as run:
            ok, rel, why = verify(kern, m, n, k, runner=run)
        assert ok, f"{cfg.key()} {m}x{n}x{k} ldc={n}: {why}"


@pytest.mark.skipif(GPU is None or not get_family("ws-hopper").runs_on(GPU), reason=REASON or "needs sm_90a")
def test_tma_epilogue_refuses_an_unpadded_c(arch):
    from gemmperf.kernels.builder import build
    from gemmperf.kernels.launch import GemmRunner

    kern = build(KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, epilogue="tma"), arch)
    with pytest.raises(ValueError, match="padded to 16 bytes"):
        GemmRunner(kern, 64, 33, 64, ldc=33)


SHARED_K = [c for c in CONFIGS if c.split_k > 1 or c.stream_k]


@pytest.mark.skipif(not SHARED_K, reason="no split-K / stream-K family on this GPU")
@pytest.mark.parametrize("cfg", SHARED_K, ids=[c.key() for c in SHARED_K])
def test_split_and_stream_k_are_deterministic(cfg, arch):
    """The partial tiles are added in a fixed order whoever arrives last: repeated
    launches give C bit for bit, and leave the counters zero (a launch that did not would
    skip or double a reduction in the next)."""
    import numpy as np

    from gemmperf.kernels.builder import build
    from gemmperf.kernels.launch import GemmRunner

    kern = build(cfg, arch)
    for m, n, k in [(1, 4096, 7168), (300, 1000, 5000)]:
        with GemmRunner(kern, m, n, k) as run:
            run.fill(99)
            outs = []
            for _ in range(4):
                run.poison()
                for _ in range(3):
                    run.launch()
                run.synchronize()
                outs.append(run.c_raw().copy())
            counters = run.workspace.counters.to_host(0, run.workspace.counters.nbytes).view(np.int32)
        assert all(np.array_equal(outs[0], o) for o in outs[1:]), f"{cfg.key()} {m}x{n}x{k}: not deterministic"
        assert not counters.any(), f"{cfg.key()} {m}x{n}x{k}: counters left non-zero"


def _verify_with_knob(cfg, arch, knob: str, value):
    """``cfg`` built and verified on odd and even shapes with the ws-hopper probe knob
    ``knob`` (``WsHopper.box_limit``, ``release_first``) at ``value``, then set back."""
    from gemmperf.kernels.builder import build
    from gemmperf.kernels.verify import verify

    hopper = get_family("ws-hopper")
    before = getattr(hopper, knob)
    setattr(hopper, knob, value)
    try:
        kern = build(cfg, arch)
        for m, n, k in [(17, 33, 65), (300, 257, 200), (1000, 1000, 1000)]:
            ok, rel, why = verify(kern, m, n, k)
            assert ok, f"{cfg.key()} {knob}={value} {m}x{n}x{k}: {why}"
    finally:
        setattr(hopper, knob, before)


@pytest.mark.skipif(GPU is None or not get_family("ws-hopper").runs_on(GPU), reason=REASON or "needs sm_90a")
@pytest.mark.parametrize("tile", [(256, 128), (128, 256)])
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2)])
def test_two_box_operand_loads_are_correct(tile, cluster, arch):
    """ring_depth_probe --boxes' kernels: a 256-row operand slice loaded as two 128-row
    boxes gives the product, odd shapes included."""
    cfg = KernelConfig("ws-hopper", "bf16", *tile, 64, 2, *cluster, True, epilogue="tma")
    _verify_with_knob(cfg, arch, "box_limit", 128)


@pytest.mark.skipif(GPU is None or not get_family("ws-hopper").runs_on(GPU), reason=REASON or "needs sm_90a")
@pytest.mark.parametrize("tile", [(256, 128), (128, 128)])
@pytest.mark.parametrize("stages", [2, 4])
def test_release_first_is_correct(tile, stages, arch):
    """ring_depth_probe --release's kernels: a slot freed before the next k-block's issue
    gives the product."""
    cfg = KernelConfig("ws-hopper", "bf16", *tile, 64, stages, 1, 1, True, epilogue="tma")
    _verify_with_knob(cfg, arch, "release_first", True)
