"""The kernel families as objects: the registry, their rules, legality with reasons,
resource formulas and the CUDA files their sources are rendered from (no GPU needed)."""

from importlib import resources

import pytest

from gemmperf.errors import UserError
from gemmperf.hardware import CATALOG
from gemmperf.kernels import FAMILY_OBJECTS, Family, check_legal, families_on, family_of, get_family, pad_k
from gemmperf.kernels import builder, source
from gemmperf.problem import FAMILIES, MODES, KernelConfig

H100 = CATALOG["h100-sxm5-80gb"]
A100 = CATALOG["a100-sxm4-80gb"]
A6000 = CATALOG["rtx-a6000"]
B200 = CATALOG["b200"]
TURING = A6000.replace(arch="sm_75")  # a GPU older than every tensor-core family
HOPPER, AMPERE, SIMT = (get_family(f) for f in ("ws-hopper", "ws-ampere", "simt"))


def test_registry_names_are_the_core_enum():
    assert tuple(FAMILY_OBJECTS) == FAMILIES
    for name, fam in FAMILY_OBJECTS.items():
        assert isinstance(fam, Family) and fam.name == name
    assert family_of(KernelConfig("simt", "fp32")) is SIMT
    with pytest.raises(UserError, match="known families"):
        get_family("ws-volta")


def test_architectures_dtypes_and_tensor_cores():
    assert [f.name for f in families_on(H100)] == ["ws-hopper", "ws-ampere", "simt"]
    assert [f.name for f in families_on(A100)] == ["ws-ampere", "simt"]
    assert [f.name for f in families_on(A6000, ["simt", "ws-ampere"])] == ["simt", "ws-ampere"]
    assert [f.name for f in families_on(B200)] == ["ws-ampere", "simt"]  # wgmma is sm_90a only
    assert HOPPER.runs_on_arch("sm_90a") and not HOPPER.runs_on_arch("sm_90")
    assert AMPERE.runs_on_arch("sm_80") and not AMPERE.runs_on(TURING) and SIMT.runs_on(TURING)
    assert (HOPPER.dtype_for("fp8"), AMPERE.dtype_for("fp16"), SIMT.dtype_for("bf16")) == ("fp8", "fp16", "fp32")
    assert (HOPPER.default_dtype, SIMT.default_dtype) == ("bf16", "fp32")
    assert HOPPER.tensor_cores and AMPERE.tensor_cores and not SIMT.tensor_cores
    assert HOPPER.tma_operands and not AMPERE.tma_operands and not SIMT.tma_operands


def test_constants_the_models_read():
    assert {f.group_m for f in FAMILY_OBJECTS.values()} == {source.GROUP_M}
    assert [pad_k(k) for k in (1, 8, 9, 4095, 4096)] == [8, 8, 16, 4096, 4096]
    assert HOPPER.pad_k(17) == 24 and HOPPER.k_align_elems == 8


@pytest.mark.parametrize(
    "cfg, gpu, reason",
    [
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, cluster_m=4), H100,
         "ws-hopper clusters (cluster_m x cluster_n): 1x1, 2x1, 1x2, 2x2"),
        (KernelConfig("ws-ampere", "bf16", 128, 128, 64, 4, cluster_n=2), A100,
         "ws-ampere clusters (cluster_m x cluster_n): 1x1"),
        (KernelConfig("ws-ampere", "bf16", 128, 128, 64, 4, epilogue="tma"), A100, "ws-ampere epilogues: direct"),
        (KernelConfig("simt", "fp32", 64, 64, 8, 1, schedule="pingpong"), H100, "simt schedules: cooperative"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, raster="grouped", group_m=3), H100,
         "group_m (grouped raster) in {1, 2, 4, 8, 16}"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, raster="row", group_m=4), H100,
         "group_m applies to the grouped raster only (leave it at 8)"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, persistent_ctas=64), H100,
         "persistent_ctas applies to persistent kernels only (leave it at 0)"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, 2, 1, True, persistent_ctas=65), H100,
         "persistent_ctas 65 is not a multiple of the cluster size 2"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4, persistent=True, persistent_ctas=200), H100,
         "persistent_ctas 200 > 132 SMs"),
        (KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4, epilogue="tma", schedule="pingpong"), H100,
         "accumulators exceed 128 registers a thread"),
        (KernelConfig("ws-hopper", "bf16", 128, 256, 64, 5, epilogue="tma"), H100,
         "shared memory 279632 B > 232448 B"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4), A100, "ws-hopper needs sm_90a"),
        (KernelConfig("ws-hopper", "fp32", 128, 128, 64, 4), H100, "ws-hopper takes bf16, fp16 or fp8"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 32, 4), H100, "ws-hopper tiles: M and N in {64, 128, 256}, K = 64 (16-bit) or 128 (fp8)"),
        (KernelConfig("ws-hopper", "bf16", 256, 256, 64, 3), H100, "accumulators exceed 128 registers a thread"),
        (KernelConfig("ws-hopper", "bf16", 128, 128, 64, 1), H100, "ws-hopper needs at least 2 stages"),
        (KernelConfig("ws-hopper", "bf16", 64, 64, 64, 9), H100, "more than 8 stages"),
        (KernelConfig("ws-hopper", "bf16", 128, 256, 64, 5), H100, "shared memory 246864 B > 232448 B"),
        (KernelConfig("ws-ampere", "bf16", 128, 128, 64, 4), TURING, "ws-ampere needs sm_80 or later"),
        (KernelConfig("ws-ampere", "bf16", 128, 128, 16, 4), A100, "ws-ampere tiles: M and N in {64, 128, 256}, K in {32, 64}"),
        (KernelConfig("ws-ampere", "bf16", 256, 256, 32, 2), A100, "accumulators exceed 128 registers a thread"),
        (KernelConfig("simt", "bf16", 64, 64, 8, 1), H100, "simt is fp32"),
        (KernelConfig("simt", "fp32", 256, 64, 8, 1), H100, "simt tiles: M and N in {32, 64, 128}, K in {8, 16, 32}"),
        (KernelConfig("simt", "fp32", 64, 64, 8, 3), H100, "simt stages are 1 or 2"),
    ],
)
def test_illegal_configs_say_why(cfg, gpu, reason):
    assert check_legal(cfg, gpu) == reason


def test_resource_formulas():
    cfg = KernelConfig("ws-hopper", "bf16", 128, 256, 64, 4)
    assert HOPPER.threads(cfg) == 384 and HOPPER.consumer_warpgroups(cfg) == 2
    assert HOPPER.dynamic_smem(cfg) == HOPPER.smem_bytes(cfg) == 4 * (128 + 256) * 64 * 2 + 4 * 16 + 1024
    assert (HOPPER.register_estimate(cfg), HOPPER.register_limit(cfg, H100)) == (128 + 40, 232)
    cfg = KernelConfig("ws-ampere", "bf16", 128, 128, 32, 3)
    assert AMPERE.threads(cfg) == 192
    assert AMPERE.smem_bytes(cfg) == 3 * 256 * 32 * 2 + 3 * 16 + 128
    assert AMPERE.register_estimate(cfg) == 128 + 32 + 40 and AMPERE.register_limit(cfg, A100) == 255
    cfg = KernelConfig("simt", "fp32", 128, 64, 16, 2)
    assert SIMT.threads(cfg) == 128 and SIMT.dynamic_smem(cfg) == 0
    assert SIMT.smem_bytes(cfg) == 2 * 16 * (128 + 64 + 8) * 4
    assert SIMT.register_estimate(cfg) == 64 + 48


@pytest.mark.parametrize("name", FAMILIES)
def test_sweep_spaces_are_legal_and_nested(name):
    fam = get_family(name)
    legal = fam.legal_configs(H100)
    sweep = fam.default_sweep(H100)
    assert sweep and set(sweep) <= set(legal)
    assert all(check_legal(c, H100) is None and c.dtype == fam.default_dtype for c in legal)
    assert {(c.tile_m, c.tile_n, c.tile_k) for c in legal} <= set(fam.tiles())
    assert {c.stages for c in legal} <= set(fam.stage_range())
    assert len(fam.legal_configs(H100, modes=MODES)) == len(MODES) * len(legal)


@pytest.mark.parametrize("name", FAMILIES)
def test_source_is_defines_then_the_family_files(name):
    fam = get_family(name)
    cfg = fam.default_sweep(H100)[0]
    src = builder.render(cfg)
    files = resources.files("gemmperf.kernels")
    for f in fam.source_files:
        text = files.joinpath(f).read_text()
        assert text in src and "#include" not in text
    assert src.startswith(f"#define BM {cfg.tile_m}\n") and src.endswith(source.read(fam.source_files[-1]))


def test_builder_refuses_a_foreign_architecture():
    with pytest.raises(UserError, match="ws-hopper needs sm_90a, not sm_80"):
        builder.build(KernelConfig("ws-hopper", "bf16", 128, 128, 64, 4), "sm_80")
    with pytest.raises(UserError, match="expected sm_XY"):
        builder.build(KernelConfig("simt", "fp32", 64, 64, 8, 1), "hopper")


@pytest.mark.parametrize("name", FAMILIES)
def test_bench_choices_are_legal_where_the_family_runs(name):
    fam = get_family(name)
    gpu = H100
    for tm, tn, tk in fam.microbench_tiles:
        assert check_legal(KernelConfig(name, fam.default_dtype, tm, tn, tk, fam.bench_stages), gpu) is None
    for tm, tn, stages, persistent in fam.small_picks:
        tk = max(t[2] for t in fam.tiles(fam.default_dtype))
        assert check_legal(KernelConfig(name, fam.default_dtype, tm, tn, tk, stages, persistent=persistent), gpu) is None


def test_core_default_params_agree_with_the_families_on_tensor_cores():
    # params.default_params (core) cannot ask the kernels layer, so it knows simt as the
    # one family without tensor cores; this keeps the two statements in step
    from gemmperf.hardware import CATALOG
    from gemmperf.kernels import FAMILY_OBJECTS
    from gemmperf.params import default_params

    gpu = CATALOG["h100-sxm5-80gb"]
    for name, fam in FAMILY_OBJECTS.items():
        dtype = fam.dtype_for("bf16")
        got = default_params(gpu, name, dtype).math_flops_per_us
        assert got == gpu.flops_per_clk_sm(dtype, fam.tensor_cores) * gpu.sm_clock_mhz
