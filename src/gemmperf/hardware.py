"""GPU descriptors: a catalog of known GPUs, and probing the local one.

Standard library only (plus cuda.bindings inside ``probe``), so it imports on the GPU
machine without polars.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError

KB = 1024
MB = 1024 * 1024
GB = 1000**3


@dataclass(frozen=True)
class GPU:
    """What the models need to know about one GPU.

    Peak rates are stored per SM per clock so that they scale with the clock the
    card actually ran at (recorded with each measurement).
    """

    name: str
    slug: str
    arch: str  # NVRTC target, e.g. "sm_90a"
    sms: int
    sm_clock_mhz: float  # maximum SM clock
    smem_per_block: int  # bytes, opt-in maximum for one CTA
    smem_per_sm: int  # bytes
    regs_per_sm: int
    l2_bytes: int
    dram_bytes_per_s: float
    memory_bytes: int
    # dense tensor-core FLOP per SM per clock, by input dtype (fp32 accumulate)
    tc_flops_per_clk: dict[str, int] = field(default_factory=dict)
    fma_flops_per_clk: int = 256  # FP32 FFMA: 2 FLOP x FP32 lanes per SM
    regs_per_thread: int = 255
    # CTAs that run at once in thread-block clusters of each size (key: CTAs per cluster,
    # as text), where the SMs' grouping into GPCs leaves some idle; sizes not listed:
    # floor(SMs / size) * size (``ctas_in_clusters``)
    cluster_ctas: dict[str, int] = field(default_factory=dict)
    source: str = "catalog"  # "catalog" or "probed"
    driver: str = ""

    # ---- derived figures
    def peak_flops(self, dtype: str, tensor_cores: bool = True) -> float:
        """Whole-GPU peak FLOP/s for ``dtype`` at ``sm_clock_mhz``."""
        return self.flops_per_clk_sm(dtype, tensor_cores) * self.sms * self.sm_clock_mhz * 1e6

    def flops_per_clk_sm(self, dtype: str, tensor_cores: bool = True) -> int:
        if dtype == "fp32" or not tensor_cores:
            return self.fma_flops_per_clk
        key = "fp4" if dtype == "nvfp4" else dtype
        if key not in self.tc_flops_per_clk:
            raise UserError(f"{self.name}: no tensor-core rate for dtype {dtype!r}")
        return self.tc_flops_per_clk[key]

    def ctas_in_clusters(self, size: int) -> int:
        """CTAs (one per SM) that run at once when launched in clusters of ``size`` CTAs."""
        if size <= 1:
            return self.sms
        return int(self.cluster_ctas.get(str(size), self.sms // size * size))

    def supports(self, dtype: str) -> bool:
        return dtype == "fp32" or ("fp4" if dtype == "nvfp4" else dtype) in self.tc_flops_per_clk

    @property
    def compute_capability(self) -> tuple[int, int]:
        digits = re.sub(r"\D", "", self.arch)
        return int(digits[:-1]), int(digits[-1])

    def replace(self, **changes) -> GPU:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> GPU:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def load_gpu(path: str | Path) -> GPU:
    """A descriptor from its JSON file. One written before ``cluster_ctas`` existed takes
    the catalog's figure for its chip (the slug's), which was measured on that chip."""
    try:
        data = json.loads(Path(path).read_text())
        gpu = GPU.from_dict(data)
    except (OSError, ValueError, TypeError, AttributeError) as err:
        raise UserError(f"{path}: not a GPU descriptor ({err})") from None
    base = CATALOG.get(gpu.slug)
    if "cluster_ctas" not in data and base is not None and base.sms == gpu.sms:
        gpu = gpu.replace(cluster_ctas=dict(base.cluster_ctas))
    return gpu


# ----------------------------------------------------------------------- catalog
# Tensor-core rates per SM per clock are the datasheet's dense TFLOP/s divided by
# (SMs x boost clock); each figure names its source.

_HOPPER_TC = {"tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192}

CATALOG: dict[str, GPU] = {
    g.slug: g
    for g in [
        GPU(
            name="NVIDIA H100 SXM5 80GB",
            slug="h100-sxm5-80gb",
            arch="sm_90a",
            sms=132,  # H100 datasheet (SXM5); 132 read off the lent H100 (KINDS.md, 2026-11-13)
            sm_clock_mhz=1980,  # nvidia-smi max SM clock of H100 SXM5
            smem_per_block=227 * KB,  # CUDA C Programming Guide, compute capability 9.0
            smem_per_sm=228 * KB,  # same
            regs_per_sm=65536,  # same
            l2_bytes=50 * MB,  # H100 whitepaper; 50 MB read by PyTorch on the lent H100
            dram_bytes_per_s=3.35e12,  # H100 SXM datasheet, HBM3
            memory_bytes=80 * GB,
            # datasheet 989 TFLOP/s dense bf16 = 132 SMs x 4096 FLOP/clk x 1.83 GHz
            tc_flops_per_clk=dict(_HOPPER_TC),
            fma_flops_per_clk=256,  # 128 FP32 lanes/SM (67 TFLOP/s at 1.98 GHz)
            # cuOccupancyMaxActiveClusters on the lent H100 (2026-11-23, ws-hopper
            # 128x256 s4): 66 clusters of 2 (all 132 SMs), 30 of 4 (120 SMs)
            cluster_ctas={"4": 120},
        ),
        GPU(
            name="NVIDIA H200 SXM 141GB",
            slug="h200-sxm-141gb",
            arch="sm_90a",
            sms=132,  # H200 datasheet; 132 read by PyTorch on the lent H200 (KINDS.md)
            sm_clock_mhz=1980,  # same GH100 as H100 SXM5; 1980 MHz seen under load (KINDS.md)
            smem_per_block=227 * KB,  # CUDA C Programming Guide, cc 9.0
            smem_per_sm=228 * KB,
            regs_per_sm=65536,
            l2_bytes=60 * MB,  # 60 MB read by PyTorch on the lent H200 (KINDS.md, 2026-10-28)
            dram_bytes_per_s=4.8e12,  # H200 datasheet, HBM3e
            memory_bytes=141 * GB,
            tc_flops_per_clk=dict(_HOPPER_TC),  # datasheet: same math rates as H100 SXM
            fma_flops_per_clk=256,
            # cuOccupancyMaxActiveClusters on the lent H200 (2026-11-26, ws-hopper 128x256 s4,
            # 128x128 s4, 64x64 s8): 66 clusters of 2 (all 132 SMs), 30 of 4 (120 SMs)
            cluster_ctas={"4": 120},
        ),
        GPU(
            name="NVIDIA A100 SXM4 80GB",
            slug="a100-sxm4-80gb",
            arch="sm_80",
            sms=108,  # A100 whitepaper
            sm_clock_mhz=1410,  # A100 datasheet boost clock
            smem_per_block=163 * KB,  # CUDA C Programming Guide, cc 8.0
            smem_per_sm=164 * KB,
            regs_per_sm=65536,
            l2_bytes=40 * MB,  # A100 whitepaper
            dram_bytes_per_s=2.039e12,  # A100 80GB SXM datasheet
            memory_bytes=80 * GB,
            # datasheet 312 TFLOP/s dense bf16 = 108 x 2048 x 1.41 GHz
            tc_flops_per_clk={"tf32": 1024, "bf16": 2048, "fp16": 2048},
            fma_flops_per_clk=128,  # 19.5 TFLOP/s FP32 = 108 x 128 x 1.41 GHz
        ),
        GPU(
            name="NVIDIA RTX A6000",
            slug="rtx-a6000",
            arch="sm_86",
            sms=84,  # RTX A6000 datasheet (GA102), the paper's GPU
            sm_clock_mhz=1800,  # datasheet boost clock
            smem_per_block=99 * KB,  # CUDA C Programming Guide, cc 8.6
            smem_per_sm=100 * KB,
            regs_per_sm=65536,
            l2_bytes=6 * MB,  # GA102 whitepaper
            dram_bytes_per_s=768e9,  # datasheet, GDDR6
            memory_bytes=48 * GB,
            # datasheet 154.8 TFLOP/s fp16 tensor with fp32 accumulate = 84 x 1024 x 1.8 GHz
            tc_flops_per_clk={"tf32": 512, "bf16": 1024, "fp16": 1024},
            fma_flops_per_clk=256,  # 38.7 TFLOP/s FP32 = 84 x 256 x 1.8 GHz
        ),
        GPU(
            name="NVIDIA B200",
            slug="b200",
            arch="sm_100a",
            sms=148,  # gemm-model config/gpu/b200.yaml (num_sms)
            sm_clock_mhz=1965,  # B200 max boost; gemm-model's examples lock 1300 MHz
            smem_per_block=227 * KB,  # CUDA C Programming Guide, cc 10.0
            smem_per_sm=228 * KB,
            regs_per_sm=65536,
            l2_bytes=126 * MB,  # Blackwell architecture brief
            dram_bytes_per_s=8.0e12,  # B200 datasheet; gemm-model uses 8192-bit x 4 GHz DDR = 8.192e12
            memory_bytes=180 * GB,
            # gemm-model config/gpu/b200.yaml mma_flops per SM per clock
            tc_flops_per_clk={"tf32": 4096, "bf16": 8192, "fp16": 8192, "fp8": 16384, "fp4": 32768},
            fma_flops_per_clk=256,
        ),
    ]
}

# Device names (as the driver reports them) -> catalog slug.
_NAME_PATTERNS = [
    (r"H100.*(80GB HBM3|SXM)", "h100-sxm5-80gb"),
    (r"H200", "h200-sxm-141gb"),
    (r"A100.*SXM.*80GB", "a100-sxm4-80gb"),
    (r"RTX A6000", "rtx-a6000"),
    (r"B200", "b200"),
]


def slugify(name: str) -> str:
    s = re.sub(r"^nvidia\s+", "", name.strip(), flags=re.I).lower()
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


def slug_for_name(name: str) -> str:
    for pattern, slug in _NAME_PATTERNS:
        if re.search(pattern, name, flags=re.I):
            return slug
    return slugify(name)


def get_gpu(slug: str) -> GPU:
    if slug in CATALOG:
        return CATALOG[slug]
    raise UserError(f"unknown GPU {slug!r}; known: {', '.join(CATALOG)}")


# ----------------------------------------------------------------------- probing


class NoGPU(UserError):
    """No CUDA GPU (or no driver / cuda-python) on this machine."""


def _check(result):
    err, *values = result
    if int(err) != 0:
        raise NoGPU(f"CUDA driver call failed: {err}")
    return values[0] if len(values) == 1 else values


def probe(device: int = 0) -> GPU:
    """Read the local GPU through the CUDA driver API and fill a descriptor.

    Figures the driver does not report (tensor-core rates) come from the catalog
    entry of the same chip, or from the compute capability.
    """
    try:
        from cuda.bindings import driver as cu
    except ImportError as err:
        raise NoGPU(f"no GPU: cuda-python is not importable ({err})") from None
    try:
        err, = cu.cuInit(0)
    except Exception as err:  # driver library missing
        raise NoGPU(f"no GPU: the CUDA driver could not be loaded ({err})") from None
    if int(err) != 0:
        raise NoGPU(f"no GPU: cuInit failed ({err})")
    count = _check(cu.cuDeviceGetCount())
    if count < 1:
        raise NoGPU("no GPU: the CUDA driver sees no device")
    dev = _check(cu.cuDeviceGet(device))
    name = _check(cu.cuDeviceGetName(128, dev)).split(b"\0")[0].decode()
    A = cu.CUdevice_attribute

    def attr(a):
        return int(_check(cu.cuDeviceGetAttribute(a, dev)))

    major = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    minor = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    mem_khz = attr(A.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
    bus_bits = attr(A.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
    driver = int(_check(cu.cuDriverGetVersion()))
    slug = slug_for_name(name)
    base = CATALOG.get(slug)
    arch = f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    tc = dict(base.tc_flops_per_clk) if base else _tc_for_cc(major, minor)
    return GPU(
        name=name,
        slug=slug,
        arch=arch,
        sms=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        sm_clock_mhz=attr(A.CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000.0,
        smem_per_block=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        smem_per_sm=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        regs_per_sm=attr(A.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
        l2_bytes=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        # double data rate: two transfers per memory clock
        dram_bytes_per_s=2.0 * mem_khz * 1e3 * bus_bits / 8,
        memory_bytes=int(_check(cu.cuDeviceTotalMem(dev))),
        tc_flops_per_clk=tc,
        fma_flops_per_clk=base.fma_flops_per_clk if base else 256,
        cluster_ctas=dict(base.cluster_ctas) if base else {},
        source="probed",
        driver=f"{driver // 1000}.{(driver % 1000) // 10}",
    )


def _tc_for_cc(major: int, minor: int) -> dict[str, int]:
    """Dense tensor-core FLOP/clk/SM by architecture when the chip is not catalogued."""
    if major >= 10:
        return dict(CATALOG["b200"].tc_flops_per_clk)
    if major == 9:
        return dict(_HOPPER_TC)
    if (major, minor) == (8, 0):
        return dict(CATALOG["a100-sxm4-80gb"].tc_flops_per_clk)
    if major == 8:
        return dict(CATALOG["rtx-a6000"].tc_flops_per_clk)
    return {}
