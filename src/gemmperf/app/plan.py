"""What the workflow can do on this machine: which GPUs, measured or shipped, and
which stages run or are skipped (with the reason). Called once when Snakemake
parses the workflow; the rules only wire what this returns.

Each GPU runs one chain (collect, microbench, fit, accuracy, predict, optimize, report)
per input dtype of the config's ``dtypes``: a ``RunPlan``, whose files are under
``results/<run>/``. The run of bf16 (BASE_DTYPE) is named after the GPU, results/<gpu>/,
where a single dtype's files always were; the run of any other dtype D is <gpu>/D, under
results/<gpu>/D/. Shipped data follows the same rule: results/<gpu>/shipped/ holds bf16
measurements (measurements/, microbench.csv), results/<gpu>/shipped/D/ those of dtype D.
A run with no data of its dtype (fp8 on the shipped H100) is handled like a GPU without
measurements: descriptor defaults, every legal configuration predicted, no accuracy.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..hardware import CATALOG, GPU, NoGPU, get_gpu, load_gpu, probe
from ..problem import read_testlist
from .resolve import BASE_DTYPE, run_name

# What makes a GPU the same GPU for its measurements: a change to any of these reruns
# hardware -> measurements -> everything after. The clocks a card happens to run at
# (which wander between runs) are not part of it: the descriptor's sm_clock_mhz is the
# maximum SM clock, and the clocks seen while measuring are recorded per row instead.
IDENTITY_FIELDS = ("name", "arch", "driver", "sms", "sm_clock_mhz", "memory_bytes", "l2_bytes",
                   "dram_bytes_per_s", "smem_per_sm", "smem_per_block", "regs_per_sm")

# A GPU slug: the name of its results/<slug>/ folder, which reaches the workflow's shell
# commands and file patterns. The config schema holds the same pattern for gpus and
# fallback_gpu.
SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
SLUG_RULE = "lowercase letters, digits, '.', '_' and '-', starting with a letter or digit"

# Test hook: a descriptor JSON to use as the probed local GPU (no GPU needed).
FAKE_GPU_ENV = "GEMMPERF_FAKE_GPU"

# The dtype whose run sits at results/<gpu>/ (and whose shipped data at
# results/<gpu>/shipped/) is resolve.BASE_DTYPE, bf16; any other dtype D's at
# results/<gpu>/D/ (shipped/D/): resolve.run_name.


def config_dtypes(config: dict) -> list[str]:
    """The config's input dtypes: ``dtypes`` (a list), or the older single ``dtype``; bf16
    when neither is given. Both given is an error (which one was meant?)."""
    if "dtypes" in config and "dtype" in config:
        raise UserError(f"config dtype = {config['dtype']!r} and dtypes = {config['dtypes']!r}: give only dtypes "
                        f"(a list; dtype is its older single-value form)")
    if "dtypes" in config:
        return list(config["dtypes"])
    return [config.get("dtype", BASE_DTYPE)]


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
class RunPlan:
    """One GPU's chain in one input dtype: its files are under results/<name>/."""
    name: str  # run_name(gpu, dtype)
    gpu: str  # the GPU's slug
    dtype: str
    source: str  # "measure" (local GPU), "shipped" (reference data), "catalog" (no data of this dtype)
    testlists_measured: list[str] = field(default_factory=list)
    has_microbench: bool = False
    data: str | None = None  # the shipped folder its measurements and microbench.csv are read from
    answers: list[str] = field(default_factory=list)  # shipped timed answers (<data>/answers/*.csv): the answer band
    # the run of the same GPU in BASE_DTYPE whose measurements and answers this run's
    # correction also learns from (teacher rows, gemmperf.fit.accuracy), or None
    teacher: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # stage -> reason


@dataclass
class GPUPlan:
    slug: str
    source: str  # "measure" (local GPU), "shipped" (reference data), "catalog" (no data)
    identity: dict = field(default_factory=dict)  # IDENTITY_FIELDS of its descriptor
    runs: dict[str, RunPlan] = field(default_factory=dict)  # dtype -> its run


@dataclass
class Plan:
    gpus: dict[str, GPUPlan]
    local: str | None  # slug of the local GPU, if any
    local_note: str

    @property
    def runs(self) -> dict[str, RunPlan]:
        """Every GPU's run of every dtype, by name (GPU by GPU, in the config's dtype order)."""
        return {r.name: r for g in self.gpus.values() for r in g.runs.values()}

    def summary(self) -> str:
        lines = [f"gemmperf plan: {self.local_note}"]
        for r in self.runs.values():
            lines.append(f"  {r.name}: {r.source}")
            for stage, why in r.skipped.items():
                lines.append(f"    skipped {stage}: {why}")
        return "\n".join(lines)


def shipped_dir(results: Path, slug: str) -> Path:
    return results / slug / "shipped"


def shipped_gpus(results: str | Path = "results") -> list[str]:
    """The GPUs with shipped data: the names of the folders results/<name>/shipped/.
    A name that is not a slug (``h100 backup``, ``x;touch X;y``) stops the workflow with
    one line naming the folder, rather than being skipped: the folder was put there to be
    used, and a GPU silently missing from the run and its report is a wrong answer."""
    names = sorted(p.parent.name for p in Path(results).glob("*/shipped") if p.is_dir())
    for name in names:
        if not SLUG.match(name):
            raise UserError(f"{shipped_dir(Path(results), name)}: the GPU folder name {name!r} is not a slug "
                            f"({SLUG_RULE}); rename the folder, or move it out of {results}/")
    return names


def _check_slug(slug: str, what: str) -> str:
    if not SLUG.match(slug):
        raise UserError(f"{what}: GPU slug {slug!r} is not a slug ({SLUG_RULE})")
    return slug


def validate_config(config: dict, schema_path: str | Path) -> None:
    """Check the config against the workflow's JSON schema; the first violation as one
    line naming the key and the value (Snakemake's own validation prints the schema)."""
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    if isinstance(error.instance, (dict, list)):  # a key is missing, unknown or a list too short
        raise UserError(f"config {key or '(top level)'}: {error.message}")
    raise UserError(f"config {key} = {error.instance!r}: {_why(error)}")


def _why(error) -> str:
    """What a value should have been, in words."""
    rule = error.schema.get("description") if isinstance(error.schema, dict) else None
    if error.validator == "pattern" and rule:
        return f"must be {rule}"
    if error.validator == "enum":
        return f"not one of {', '.join(map(str, error.validator_value))}"
    if error.validator == "type":
        return f"must be of type {error.validator_value}"
    return error.message


def check_config(config: dict, results: str | Path = "results") -> None:
    """What the schema cannot check: the testlists exist and read cleanly (the first bad
    row stops with file, line and value), the held-out testlist, the collect presets and
    sample counts name testlists, and the fallback GPU is known. Run once when the
    workflow starts, so a bad input stops it there with one line instead of failing
    inside a rule."""
    testlists = list(config["testlists"])
    folder = Path(config["testlist_dir"])
    for name in testlists:
        path = folder / f"{name}.csv"
        if not path.is_file():
            raise UserError(f"config testlists: {name!r} has no file {path} (testlist_dir: {folder})")
        read_testlist(path, config_dtypes(config)[0])
    heldout = config.get("heldout_testlist")
    if heldout is not None and heldout not in testlists:
        raise UserError(f"config heldout_testlist = {heldout!r}: not one of testlists ({', '.join(testlists)}); "
                        f"add it to testlists, or set heldout_testlist: null for no held-out testlist")
    collect = config.get("collect", {})
    for key, names in (("presets", collect.get("presets", {})),
                       ("sample.counts", collect.get("sample", {}).get("counts", {}))):
        for name in names:
            if name not in testlists and not (folder / f"{name}.csv").is_file():
                raise UserError(f"config collect.{key}: {name!r} is not a testlist (not in testlists, "
                                f"no {folder / (name + '.csv')})")
    fallback = config.get("fallback_gpu")
    known = [*CATALOG, *shipped_gpus(results)]
    if fallback is not None and fallback not in known:
        raise UserError(f"config fallback_gpu = {fallback!r}: not a catalog GPU or shipped data; "
                        f"known: {', '.join(known)}")


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
        _check_slug(local_gpu.slug, "the local GPU")
        note = f"local GPU {local_gpu.name} ({local_gpu.slug})"
    elif not config.get("probe", True):
        note = "probing disabled in the config"
    testlists = list(config["testlists"])
    wanted = config.get("gpus", ["auto"])
    shipped = shipped_gpus(results)

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
        sd = shipped_dir(results, slug)
        if local_gpu is not None and slug == local_gpu.slug and config.get("measure", True):
            g, why = GPUPlan(slug, "measure", identity(local_gpu)), ""
        elif sd.is_dir():
            g = GPUPlan(slug, "shipped", identity(load_gpu(sd / "hardware.json")) if (sd / "hardware.json").is_file()
                        else {})
            why = "no GPU here to measure" if local_gpu is None else f"this machine has a {local_gpu.slug}, not this GPU"
        else:
            g = GPUPlan(slug, "catalog", identity(get_gpu(slug)) if slug in CATALOG else {})
            why = note if local_gpu is None else f"this machine has a {local_gpu.slug}"
        for dtype in config_dtypes(config):
            g.runs[dtype] = _run_plan(g, dtype, testlists, sd, why, config.get("residual", True),
                                      config.get("heldout_testlist"), list(config.get("families", [])))
        _teach(g, config.get("residual", True), list(config.get("families", [])))
        gpus[slug] = g
    return Plan(gpus=gpus, local=local_gpu.slug if local_gpu is not None else None, local_note=note)


def _teach(g: GPUPlan, residual: bool, families: list[str]) -> None:
    """Give each measured run of another dtype than BASE_DTYPE the GPU's measured
    BASE_DTYPE run as its teacher: its residual correction also learns from that run's
    ws-hopper rows and timed answers, each with their own constants (three times the rows
    of fp8's own; leave one testlist out, fp8's corrected MAPE fell about a point on both
    GPUs, benchmarks/MODEL_ACCURACY.md step 44)."""
    base = g.runs.get(BASE_DTYPE)
    if not residual or "ws-hopper" not in families or base is None or not base.testlists_measured:
        return
    for r in g.runs.values():
        if r is not base and r.testlists_measured:
            r.teacher = base.name


def _run_plan(g: GPUPlan, dtype: str, testlists: list[str], sd: Path, why: str, residual: bool,
              heldout: str | None = None, families: list[str] | None = None) -> RunPlan:
    """GPU ``g``'s run of ``dtype``: measured here, read from the shipped folder of that
    dtype (``sd``, or ``sd``/<dtype> for a dtype other than BASE_DTYPE), or without data;
    ``why`` says why nothing is measured here. The headline accuracy (leave one testlist
    out) needs ws-hopper among ``families`` and two development testlists measured."""
    name = run_name(g.slug, dtype)
    if g.source == "measure":
        r = RunPlan(name, g.slug, dtype, "measure", list(testlists), True)
    else:
        data = sd if dtype == BASE_DTYPE else sd / dtype
        measured = [t for t in testlists if (data / "measurements" / f"{t}.csv").is_file()]
        bench = (data / "microbench.csv").is_file()
        r = RunPlan(name, g.slug, dtype, "shipped" if measured or bench else "catalog", measured, bench)
        if r.source == "shipped":
            r.data = str(data)
            r.answers = [str(p) for p in sorted((data / "answers").glob("*.csv"))]
            r.skipped["collect"] = f"{why}; using the shipped measurements in {data}"
        elif g.source == "shipped":
            r.skipped["collect"] = f"{why} and no shipped {dtype} measurements (no {data}/)"
        else:
            r.skipped["collect"] = f"{why} and no shipped measurements for {g.slug}"
        r.skipped["microbench"] = r.skipped["collect"]
    if not r.has_microbench:
        r.skipped["fit"] = "no microbenchmarks: parameters are the descriptor defaults"
    if not r.testlists_measured:
        r.skipped["residual"] = "no measurements to learn from or score against"
        r.skipped["accuracy"] = r.skipped["residual"]
    elif not residual:
        r.skipped["residual"] = "residual: false in the config"
    if r.testlists_measured and not r.answers:
        r.skipped["answer band"] = ("no timed answers of shapes no testlist holds (shipped as "
                                    f"results/{g.slug}/shipped/answers/*.csv: benchmarks/optimizer_picks.py)")
    dev = [t for t in r.testlists_measured if t != heldout]
    if not r.testlists_measured:
        r.skipped["headline"] = r.skipped["accuracy"]
    elif "ws-hopper" not in (families or []) or len(dev) < 2:
        r.skipped["headline"] = ("leave-one-testlist-out needs ws-hopper measurements of two or more development "
                                 f"testlists (measured here, held-out one aside: {', '.join(dev) or 'none'})")
    return r
