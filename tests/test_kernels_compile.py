"""Kernels compile with NVRTC for their architecture, with no GPU needed.

A deterministic representative subset of the default sweep is compiled (every family,
tile shape, stage count class, persistence, raster, cluster shape, epilogue, schedule
and mode, every other dtype, and split-K / stream-K); set GEMMPERF_FULL_COMPILE=1 to
compile the whole default sweep (all modes), the split-K / stream-K configurations the
presets measure (all modes, every dtype) and the default sweep of every other dtype
(full mode) instead.
"""

import os

import pytest

pytest.importorskip("cuda.core")
pytest.importorskip("cuda.bindings.nvrtc")

from gemmperf.errors import UserError  # noqa: E402
from gemmperf.hardware import CATALOG  # noqa: E402
from gemmperf.kernels import builder, check_legal, get_family  # noqa: E402
from gemmperf.problem import FAMILIES, MODES, KernelConfig  # noqa: E402

H100 = CATALOG["h100-sxm5-80gb"]
A100 = CATALOG["a100-sxm4-80gb"]
FULL = os.environ.get("GEMMPERF_FULL_COMPILE") == "1"


def _subset(gpu, family):
    """One config per (tile, stages-class) cycling persistence/raster, plus every mode once."""
    fam = get_family(family)
    sweep = fam.default_sweep(gpu)
    shared_k = [c for d in fam.dtypes for c in fam.shared_k_configs(gpu, d)]
    if FULL:
        others = [c for d in fam.dtypes[1:] for c in fam.default_sweep(gpu, d)]
        return [c.replace(mode=m) for c in sweep + shared_k for m in MODES] + others
    picked, seen = [], set()
    variants = sorted({(c.persistent, c.raster) for c in sweep})
    for i, c in enumerate(sweep):
        # the deepest and the shallowest ring of each tile shape
        key = (c.tile_m, c.tile_n, c.tile_k, c.stages == min(s.stages for s in sweep if
                                                             (s.tile_m, s.tile_n, s.tile_k) == (c.tile_m, c.tile_n, c.tile_k)))
        if key in seen:
            continue
        want = variants[len(seen) % len(variants)]
        if (c.persistent, c.raster) != want:
            continue
        seen.add(key)
        picked.append(c)
    for v in variants:  # every persistence/raster value at least once
        if not any((c.persistent, c.raster) == v for c in picked):
            picked.append(next(c for c in sweep if (c.persistent, c.raster) == v))
    dims = lambda c: (c.schedule, c.epilogue, c.cluster_m, c.cluster_n)  # noqa: E731
    firsts = {}
    for c in sweep:  # every cluster shape, epilogue and schedule at least once
        firsts.setdefault(dims(c), c)
    picked += [c for c in firsts.values() if c not in picked]
    # every mode on the baseline and on the most different kernels (clusters, TMA stores, ping-pong)
    for base in dict.fromkeys([picked[0], *(c for d, c in firsts.items() if d[1:] != ("direct", 1, 1))][:3]):
        picked += [base.replace(mode=m) for m in MODES if m != "full"]
    picked += [picked[0].replace(dtype=d, tile_k=fam.tiles(d)[0][2]) for d in fam.dtypes[1:]]
    # split-K and stream-K: a few, and one in every mode
    picked += shared_k[::9] + [shared_k[-1].replace(mode=m) for m in MODES if m != "full"] if shared_k else []
    return picked


CASES = [(H100, f, c) for f in FAMILIES for c in _subset(H100, f)]
CASES += [(A100, f, c) for f in ("ws-ampere", "simt") for c in _subset(A100, f)[:6]]


@pytest.mark.parametrize("gpu,family,cfg", CASES, ids=[f"{g.arch}-{c.key()}" for g, _, c in CASES])
def test_compiles_within_limits(gpu, family, cfg):
    kern = builder.build(cfg, gpu.arch)
    r = kern.resources
    assert r.smem_total <= gpu.smem_per_block, (r.smem_total, gpu.smem_per_block)
    assert r.registers * r.threads <= gpu.regs_per_sm
    assert r.registers <= 255
    if cfg.mode == "full":
        assert r.spills == 0 and r.stack_frame == 0, kern.log
        assert not any("C7508" in w for w in r.warnings), r.warnings  # setmaxnreg ignored
        assert "warning #" not in kern.log, kern.log  # the front end's (builder.build's fallbacks)
    fam = get_family(family)
    assert r.dynamic_smem == fam.dynamic_smem(cfg)
    assert r.threads == fam.threads(cfg)
    if fam.dynamic_smem(cfg) == 0:  # static shared memory only: ptxas reports it
        assert r.static_smem == fam.smem_bytes(cfg) or cfg.mode in ("epilogue-only", "empty")
    if cfg.mode == "full":  # the register formula that decides legality holds
        assert r.registers <= fam.register_limit(cfg, gpu)


def test_subset_covers_every_new_dimension():
    hopper = {(c.schedule, c.epilogue, c.cluster_m, c.cluster_n, c.mode) for g, f, c in CASES if f == "ws-hopper"}
    assert {(s, e) for s, e, *_ in hopper} == {("cooperative", "direct"), ("cooperative", "tma"), ("pingpong", "tma")}
    assert {(m, n) for _, _, m, n, _ in hopper} == {(1, 1), (2, 1), (1, 2), (2, 2)}
    assert {mode for _, epilogue, _, _, mode in hopper if epilogue == "tma"} == set(MODES)


def test_subset_covers_split_k_stream_k_and_fp8():
    hopper = [c for g, f, c in CASES if f == "ws-hopper"]
    assert {c.split_k > 1 for c in hopper} == {False, True} and any(c.stream_k for c in hopper)
    assert {c.dtype for c in hopper} == {"bf16", "fp16", "fp8"}
    assert {c.mode for c in hopper if c.stream_k or c.split_k > 1} == set(MODES)


def test_sweep_covers_every_value():
    hopper, ampere, simt = (get_family(f) for f in FAMILIES)
    sweep = hopper.default_sweep(H100)
    assert {c.tile_m for c in sweep} == {64, 128, 256}
    assert {c.tile_n for c in sweep} == {64, 128, 256}
    assert {c.persistent for c in sweep} == {False, True}
    assert {c.raster for c in sweep} == {"row", "column", "grouped"}
    assert min(c.stages for c in sweep) == 2
    for c in sweep:
        assert check_legal(c, H100) is None
        assert hopper.smem_bytes(c) <= H100.smem_per_block
    assert hopper.default_sweep(A100) == []
    assert ampere.default_sweep(A100)
    assert simt.default_sweep(CATALOG["rtx-a6000"])


def test_illegal_configs_are_refused():
    assert check_legal(KernelConfig("ws-hopper", "bf16", 256, 256, 64, 3), H100)  # 256 acc regs
    assert check_legal(KernelConfig("ws-hopper", "bf16", 128, 256, 64, 5), H100)  # smem
    assert check_legal(KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4), A100)  # arch
    assert check_legal(KernelConfig("simt", "bf16", 64, 64, 8, 1), H100)
    with pytest.raises(UserError):
        builder.build(KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4), "sm_80")


def test_disk_cache_hits_and_keys_by_arch(tmp_path):
    cfg = KernelConfig("simt", "fp32", 64, 64, 8, 1)
    first = builder.build(cfg, "sm_80", cache=tmp_path)
    again = builder.build(cfg, "sm_80", cache=tmp_path)
    other = builder.build(cfg, "sm_90a", cache=tmp_path)
    assert not first.from_cache and again.from_cache and not other.from_cache
    assert again.cubin == first.cubin and again.resources == first.resources
    assert other.key != first.key


def test_source_holds_only_rendered_integers():
    src = builder.render(KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, persistent=True, raster="grouped"))
    assert "#define BM 128\n" in src and "#define RASTER 2\n" in src and "m64n256k16" in src
    assert "#include" not in src


def test_a_log_without_ptxas_report_is_compiled_again_with_the_warnings_off(tmp_path, monkeypatch):
    """NVRTC 13.0 (the lent H200's) left ptxas's report out of a log that held a front-end
    warning: build compiles once more with the warnings off and reads that report."""
    cfg = KernelConfig("ws-hopper", "bf16", 64, 64, 64, 4, epilogue="tma", mode="load-only")
    real = builder._compile_nvrtc
    calls = []

    def nvrtc_13_0(source, options, name):
        calls.append(bool(options.get("disable_warnings")))
        cubin, log = real(source, options, name)
        return cubin, log if options.get("disable_warnings") else "x.cu(1): warning #550-D: set but never used\n"

    monkeypatch.setattr(builder, "_compile", nvrtc_13_0)
    monkeypatch.setattr(builder, "_compile_nvrtc", nvrtc_13_0)
    kern = builder.build(cfg, "sm_90a", cache=tmp_path)
    assert calls == [False, False, True] and kern.resources.registers > 0


def test_parse_ptxas():
    log = ("ptxas info    : Used 168 registers, used 1 barriers, 16896 bytes smem\n"
           "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n")
    p = builder.parse_ptxas(log)
    assert (p["registers"], p["static_smem"], p["stack_frame"], p["spill_stores"], p["spill_loads"]) == (168, 16896, 8, 4, 12)


def test_the_compile_command_covers_split_k_stream_k_and_fp8(monkeypatch, capsys):
    """`python3 -m gemmperf.kernels compile` compiles what the presets may measure: the
    default sweep, the split-K / stream-K configurations, and both in fp8 (a stub build)."""
    import argparse
    import types

    from gemmperf.kernels import __main__ as kmain

    built = []
    resources = types.SimpleNamespace(spills=0, stack_frame=0)
    monkeypatch.setattr(kmain, "build", lambda cfg, arch: built.append(cfg) or types.SimpleNamespace(
        resources=resources))
    assert kmain.compile_sweep(argparse.Namespace(gpu="h100-sxm5-80gb", all_modes=False)) == 0
    hopper = get_family("ws-hopper")
    keys = {c.key() for c in built}
    assert len(keys) == len(built)
    for dtype in ("bf16", "fp8"):
        assert {c.key() for c in hopper.default_sweep(H100, dtype)} <= keys
        assert {c.key() for c in hopper.shared_k_configs(H100, dtype)} <= keys
    assert f"{len(built)} configurations for sm_90a" in capsys.readouterr().out


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1)])
def test_two_box_operand_loads_compile(cluster, tmp_path, monkeypatch):
    """ring_depth_probe --boxes: with a 128-row box limit a 256-row operand slice is loaded
    as two boxes, a kernel of its own (another source, another cubin); without it the
    source is the measured kernel's."""
    hopper = get_family("ws-hopper")
    cfg = KernelConfig("ws-hopper", "bf16", 256, 128, 64, 2, *cluster, True, epilogue="tma")
    measured = builder.render(cfg)
    with monkeypatch.context() as knob:
        knob.setattr(hopper, "box_limit", 128)
        split = builder.render(cfg)
        kern = builder.build(cfg, "sm_90a", cache=tmp_path)
    assert split != measured and builder.render(cfg) == measured
    assert "#define A_BOX 128" in split and "#define A_BOX 256" in measured
    assert kern.resources.spills == 0


def test_the_release_first_variant_compiles(tmp_path, monkeypatch):
    """ring_depth_probe --release: a consumer that frees the previous k-block's slot before
    issuing the next one's wgmmas is a kernel of its own; the default renders as measured."""
    hopper = get_family("ws-hopper")
    cfg = KernelConfig("ws-hopper", "bf16", 256, 128, 64, 2, 1, 1, True, epilogue="tma")
    measured = builder.render(cfg)
    with monkeypatch.context() as knob:
        knob.setattr(hopper, "release_first", True)
        first = builder.render(cfg)
        kern = builder.build(cfg, "sm_90a", cache=tmp_path)
    assert "#define RELEASE_FIRST 1" in first and "#define RELEASE_FIRST 0" in measured
    assert builder.render(cfg) == measured and kern.resources.spills == 0


def test_a_built_kernel_keeps_the_boxes_it_was_rendered_for(tmp_path, monkeypatch):
    """The tensor maps take a kernel's boxes from the kernel, not from the knob as it is at
    launch: a 256x128 kernel built with the 128-row limit keeps (128, 128) after the limit
    is set back."""
    hopper = get_family("ws-hopper")
    cfg = KernelConfig("ws-hopper", "bf16", 256, 128, 64, 2, 1, 1, True, epilogue="tma")
    assert builder.build(cfg, "sm_90a", cache=tmp_path).boxes == (256, 128)
    with monkeypatch.context() as knob:
        knob.setattr(hopper, "box_limit", 128)
        split = builder.build(cfg, "sm_90a", cache=tmp_path)
    assert split.boxes == (128, 128)
    cached = builder.build(cfg, "sm_90a", cache=tmp_path)
    assert cached.from_cache and cached.boxes == (256, 128)  # the cache hands the boxes back too
    assert builder.build(cfg.replace(family="ws-ampere", stages=3, cluster_m=1, cluster_n=1, epilogue="direct"),
                         "sm_80", cache=tmp_path).boxes is None
