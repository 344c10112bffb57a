"""``gemmperf gpus`` (the catalog and the local GPU) and ``gemmperf hardware`` (the
descriptor of one GPU: probed, copied from shipped data, or from the catalog)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..errors import UserError
from ..hardware import CATALOG, GPU, NoGPU, get_gpu, probe
from .plan import identity, local_probe
from .resolve import output_path

SOURCES = ("auto", "measure", "shipped", "catalog")


def cmd_gpus(a) -> int:
    rows = [g.to_dict() for g in CATALOG.values()]
    try:
        local = probe()
        rows.insert(0, local.to_dict())
        note = f"local GPU: {local.name} ({local.slug})"
    except NoGPU as err:
        note = f"{err}"
    if a.json:
        print(json.dumps({"gpus": rows, "local": note}, indent=2))
        return 0
    print(f"{'slug':18} {'source':8} {'SMs':>4} {'MHz':>6} {'DRAM TB/s':>9} {'L2 MB':>6} {'bf16 TF':>8}  name")
    for r in rows:
        g = GPU.from_dict(r)
        bf16 = g.peak_flops("bf16") / 1e12 if g.supports("bf16") else float("nan")
        print(
            f"{g.slug:18} {g.source:8} {g.sms:>4} {g.sm_clock_mhz:>6.0f} {g.dram_bytes_per_s / 1e12:>9.2f}"
            f" {g.l2_bytes / 2**20:>6.0f} {bf16:>8.0f}  {g.name}"
        )
    print(note)
    return 0


def _probed(expect: str | None) -> GPU:
    """The local GPU; with ``expect`` (its identity as JSON, from the workflow's plan),
    an error if the GPU changed since the plan was made."""
    gpu = local_probe()
    print(f"probed {gpu.name}: {gpu.sms} SMs, driver {gpu.driver}", file=sys.stderr)
    if expect is not None and identity(gpu) != json.loads(expect):
        raise UserError(f"the GPU changed since the workflow started: {json.loads(expect)} "
                        f"-> {identity(gpu)}; run snakemake again")
    return gpu


def cmd_hardware(a) -> int:
    out = output_path(a.out, (".json",)) if a.out else None  # a bad path stops before any work
    if a.source == "shipped":
        if not a.shipped or not a.out:
            raise UserError("hardware --source shipped: give --shipped PATH and --out PATH")
        if not Path(a.shipped).is_file():
            raise UserError(f"{a.shipped}: shipped descriptor not found")
        shutil.copyfile(a.shipped, out)
        print(f"copied the shipped descriptor {a.shipped}", file=sys.stderr)
        return 0
    if a.source == "measure":
        gpu = _probed(a.expect_identity)
    elif a.source == "catalog":
        gpu = get_gpu(a.gpu)
        print(f"catalog descriptor for {gpu.slug}", file=sys.stderr)
    else:
        try:
            gpu = probe()
        except NoGPU as err:
            if a.gpu == "auto":
                raise
            gpu = get_gpu(a.gpu)
            print(f"{err}; using the catalog entry for {gpu.slug}", file=sys.stderr)
    text = json.dumps(gpu.to_dict(), indent=2) + "\n"
    if out:
        out.write_text(text)
    else:
        print(text, end="")
    return 0


def add_parsers(sub) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("gpus", help="list the GPU catalog and the probed local GPU",
                       description="The GPUs gemmperf knows (catalog slugs for --gpu) and the local one.",
                       epilog="examples:\n  gemmperf gpus\n  gemmperf gpus --json", formatter_class=fmt)
    p.add_argument("--json", action="store_true", help="print the descriptors as JSON")
    p.set_defaults(func=cmd_gpus)

    p = sub.add_parser("hardware", help="write the descriptor of the local GPU (or a catalog or shipped one)",
                       description="Write a GPU descriptor (SMs, clock, shared memory, bandwidths, peak rates) "
                       "as JSON: the models' view of the GPU.",
                       epilog="examples:\n  gemmperf hardware --out results/local/hardware.json\n"
                       "  gemmperf hardware --source catalog --gpu a100-sxm4-80gb\n"
                       "  gemmperf hardware --source shipped --shipped results/h100-sxm5-80gb/shipped/hardware.json "
                       "--out hw.json", formatter_class=fmt)
    p.add_argument("--gpu", default="auto",
                   help="catalog slug to use when no GPU is present (gemmperf gpus lists them), e.g. --gpu h100-sxm5-80gb")
    p.add_argument("--source", default="auto", choices=SOURCES,
                   help="auto: probe, else the catalog's --gpu; measure: probe (no fallback); "
                   "shipped: copy --shipped; catalog: the catalog's --gpu")
    p.add_argument("--shipped", nargs="?", help="shipped hardware.json to copy (--source shipped)")
    p.add_argument("--expect-identity", help="JSON of the identity fields the probed GPU must have (the workflow's)")
    p.add_argument("--out", help="output JSON, its folder created (default: stdout), e.g. --out hw.json")
    p.set_defaults(func=cmd_hardware)
