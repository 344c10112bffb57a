"""What the workflow can do on this machine: which GPUs, measured or shipped, and
which stages run or are skipped (with the reason). Called once when Snakemake
parses the workflow; the rules only wire what this returns.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..hardware import CATALOG, GPU, NoGPU, get_gpu, load_gpu, probe

# What makes a GPU the same GPU for its measurements: a change to any of these reruns
# hardware -> measurements -> everything after. The clocks a card happens to run at
# (which wander between runs) are not part of it: the descriptor's sm_clock_mhz is the
# maximum SM clock, and the clocks seen while measuring are recorded per row instead.
IDENTITY_FIELDS = ("name", "arch", "driver", "sms", "sm_clock_mhz", "memory_bytes", "l2_bytes",
                   "dram_bytes_per_s", "smem_per_sm", "smem_per_block", "regs_per_sm")

# Test hook: a descriptor JSON to use as the probed local GPU (no GPU needed).
FAKE_GPU_ENV = "GEMMPERF_FAKE_GPU"


def identity(gpu: GPU) -> dict:
    """The descriptor fields whose change means new measurements (see IDENTITY_FIELDS)."""
    return {f: getattr(gpu, f) for f in IDENTITY_FIELDS}


def local_probe() -> GPU:
    """The local GPU: probed, or the descriptor named by $GEMMPERF_FAKE_GPU (a test hook
    that stands in for a GPU; any extra fields in it, such as current clocks, are ignored).
    Raises NoGPU."""
    fake = os.environ.get(FAKE_GPU_ENV)
    if fake:
        try:
            data = json.loads(Path(fake).read_text())
        except (OSError, ValueError) as err:
            raise UserError(f"{FAKE_GPU_ENV}={fake}: cannot read the descriptor ({err})") from None
        return GPU.from_dict({**data, "source": "probed"})
    return probe()


@dataclass
class GPUPlan:
    slug: str
    source: str  # "measure" (local GPU), "shipped" (reference data), "catalog" (no data)
    testlists_measured: list[str] = field(default_factory=list)
    has_microbench: bool = False
    skipped: dict[str, str] = field(default_factory=dict)  # stage -> reason
    identity: dict = field(default_factory=dict)  # IDENTITY_FIELDS of its descriptor


@dataclass
class Plan:
    gpus: dict[str, GPUPlan]
    local: str | None  # slug of the local GPU, if any
    local_note: str

    def summary(self) -> str:
        lines = [f"gemmperf plan: {self.local_note}"]
        for g in self.gpus.values():
            lines.append(f"  {g.slug}: {g.source}")
            for stage, why in g.skipped.items():
                lines.append(f"    skipped {stage}: {why}")
        return "\n".join(lines)


def shipped_dir(results: Path, slug: str) -> Path:
    return results / slug / "shipped"


def make_plan(config: dict, results: str | Path = "results", local_gpu=None) -> Plan:
    """Decide the GPUs and stages from the config and what is on disk.

    ``local_gpu``: a GPU descriptor to use instead of probing (tests), or None to probe.
    """
    results = Path(results)
    if local_gpu is None and config.get("probe", True):
        try:
            local_gpu = local_probe()
        except NoGPU as err:
            local_gpu, note = None, str(err)
    if local_gpu is not None:
        note = f"local GPU {local_gpu.name} ({local_gpu.slug})"
    elif not config.get("probe", True):
        note = "probing disabled in the config"
    testlists = list(config["testlists"])
    wanted = config.get("gpus", ["auto"])
    shipped = sorted(p.parent.name for p in results.glob("*/shipped") if p.is_dir())

    slugs: list[str] = []
    for spec in wanted:
        if spec == "auto":
            if local_gpu is not None:
                slugs.append(local_gpu.slug)
            slugs.extend(shipped)
            if local_gpu is None and not shipped:
                slugs.append(config.get("fallback_gpu", "h100-sxm5-80gb"))
        else:
            if spec not in CATALOG and spec not in shipped:
                raise UserError(f"config gpus: unknown GPU {spec!r}; known: {', '.join([*CATALOG, *shipped])}")
            slugs.append(spec)

    gpus: dict[str, GPUPlan] = {}
    for slug in dict.fromkeys(slugs):
        if local_gpu is not None and slug == local_gpu.slug and config.get("measure", True):
            g = GPUPlan(slug, "measure", testlists_measured=testlists, has_microbench=True)
            g.identity = identity(local_gpu)
        elif (shipped_dir(results, slug)).is_dir():
            sd = shipped_dir(results, slug)
            measured = [t for t in testlists if (sd / "measurements" / f"{t}.csv").is_file()]
            g = GPUPlan(slug, "shipped", measured, (sd / "microbench.csv").is_file())
            if (sd / "hardware.json").is_file():
                g.identity = identity(load_gpu(sd / "hardware.json"))
            why = "no GPU here to measure" if local_gpu is None else f"this machine has a {local_gpu.slug}, not this GPU"
            g.skipped["collect"] = f"{why}; using the shipped measurements in {sd}"
            g.skipped["microbench"] = g.skipped["collect"]
        else:
            g = GPUPlan(slug, "catalog")
            g.identity = identity(get_gpu(slug)) if slug in CATALOG else {}
            why = note if local_gpu is None else f"this machine has a {local_gpu.slug}"
            g.skipped["collect"] = f"{why} and no shipped measurements for {slug}"
            g.skipped["microbench"] = g.skipped["collect"]
        if not g.has_microbench:
            g.skipped["fit"] = "no microbenchmarks: parameters are the descriptor defaults"
        if not g.testlists_measured:
            g.skipped["residual"] = "no measurements to learn from or score against"
            g.skipped["accuracy"] = g.skipped["residual"]
        elif not config.get("residual", True):
            g.skipped["residual"] = "residual: false in the config"
        gpus[slug] = g
    return Plan(gpus=gpus, local=local_gpu.slug if local_gpu is not None else None, local_note=note)
