"""The model parameters a command runs with: params.json (or descriptor defaults) and
the ``--set NAME=VALUE`` overrides (the workflow passes config ``model_params`` so)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..fit.microbench import fit_paramset
from ..fit.residual import Correction, load_correction
from ..fit.transfer import microbench_figures, transfer
from ..hardware import GPU
from ..models.ws_pipelined import CONSTANTS, RETIRED
from ..params import PARAM_NAMES, ParamSet, file_gpu
from ..tables import MICROBENCH_REQUIRED, read_measurements
from .resolve import RESULTS, resolve_gpu, run_name, shipped_data_dir


def parse_overrides(items: list[str] | None) -> dict[str, float]:
    """``--set NAME=VALUE`` items -> {name: value}; names are PARAM_NAMES."""
    out: dict[str, float] = {}
    for item in items or []:
        name, _, value = item.partition("=")
        if name not in PARAM_NAMES:
            raise UserError(f"--set {item!r}: unknown parameter; known: {', '.join(PARAM_NAMES)}")
        try:
            out[name] = float(value)
        except ValueError:
            raise UserError(f"--set {item!r}: {value!r} is not a number") from None
    return out


def default_params_path(gpu: GPU, dtype: str = "bf16") -> Path:
    """The workflow's params.json of ``gpu`` for input dtype ``dtype``: results/<gpu>/ for
    bf16, results/<gpu>/<dtype>/ for another (resolve.run_name) where the workflow ran that
    dtype, else results/<gpu>/params.json (whose entries of other dtypes, simt's fp32
    among them, still apply; the dtype's own are then descriptor defaults, said so)."""
    own = RESULTS / run_name(gpu.slug, dtype) / "params.json"
    return own if own.is_file() else RESULTS / gpu.slug / "params.json"


def resolve_params(gpu: GPU, params_path: str | None, overrides: list[str] | None = None,
                   any_gpu: bool = False, dtype: str = "bf16") -> ParamSet:
    """Fitted parameters from --params or the workflow's params.json of ``dtype``
    (``default_params_path``), else descriptor defaults; ``--set`` overrides on top. A
    file fitted for another GPU (its ``gpu`` field) is refused unless ``any_gpu``; a
    stored constant no model knows is an error."""
    path = Path(params_path) if params_path else default_params_path(gpu, dtype)
    if params_path and not path.is_file():
        raise UserError(f"{path}: parameters file not found")
    if path.is_file():
        fitted_for = file_gpu(path)
        if fitted_for not in (None, gpu.slug) and not any_gpu:
            raise UserError(f"{path}: fitted for {fitted_for}, not {gpu.slug}; "
                            "--params-any-gpu uses it anyway")
        pset = ParamSet.load(path, gpu)
        for (family, dtype), p in pset.entries.items():
            retired = sorted(set(p.constants) & set(RETIRED))
            if retired:
                raise UserError(f"{path}: {family} {dtype}: fitted by an earlier model (constant(s) "
                                f"{', '.join(retired)} retired: {RETIRED[retired[0]]}); fit it again (gemmperf fit)")
            unknown = sorted(set(p.constants) - set(CONSTANTS))
            if unknown:
                raise UserError(f"{path}: {family} {dtype}: unknown constant(s) {', '.join(unknown)}")
    else:
        pset = ParamSet(gpu)
    pset.overrides.update(parse_overrides(overrides))
    return pset


def microbench_file(slug: str, dtype: str = "bf16") -> Path | None:
    """A GPU's microbenchmarks of ``dtype``: the shipped ones, else the workflow's own
    measurement (results/<run>/microbench.csv); None if neither exists."""
    for path in (shipped_data_dir(slug, dtype) / "microbench.csv", RESULTS / run_name(slug, dtype) / "microbench.csv"):
        if path.is_file():
            return path
    return None


def transferred_params(gpu: GPU, source: str, params_path: str | None, overrides: list[str] | None = None,
                       dtype: str = "bf16") -> tuple[ParamSet, ParamSet]:
    """(``gpu``'s parameters carried over from the fit of GPU ``source`` (``fit.transfer``),
    that fit): its params.json (``--params``, else the workflow's of ``dtype``) expressed
    against its microbenchmarks, applied to ``gpu``'s, where both GPUs have them
    (``microbench_file``); else against both descriptors. No GEMM measured on ``gpu``
    enters; ``--set`` on top."""
    try:
        src_gpu = resolve_gpu(source)
    except UserError as err:
        raise UserError(f"--transfer-from {source}: {err}") from None
    fitted = fitted_of(src_gpu, params_path, dtype, f"--transfer-from {source}")
    files = {g.slug: microbench_file(g.slug, dtype) for g in (src_gpu, gpu)}
    if all(files.values()):
        onto = f"{gpu.slug}'s microbenchmarks ({files[gpu.slug]})"
    else:
        onto = f"{gpu.slug}'s descriptor (no microbenchmarks of {', '.join(s for s, f in files.items() if not f)})"
        files = {}
    pset, _, _ = carried(fitted, gpu, files.get(src_gpu.slug), files.get(gpu.slug), dtype)
    pset.origin = (f"the fit of {src_gpu.slug} ({fitted.origin}) carried onto {onto}; no GEMM measured on "
                   f"{gpu.slug} (unverified)")
    pset.overrides.update(parse_overrides(overrides))
    return pset, fitted


def fitted_of(src_gpu: GPU, params_path: str | None, dtype: str, flag: str) -> ParamSet:
    """The fitted entries of ``src_gpu``'s params.json (``params_path`` or the workflow's);
    none is one line naming ``flag``."""
    fitted = resolve_params(src_gpu, params_path, dtype=dtype)
    fitted.entries = {key: p for key, p in fitted.entries.items() if p.source == "fitted"}
    if not fitted.entries:
        where = params_path or default_params_path(src_gpu, dtype)
        raise UserError(f"{flag}: no fitted parameters in {where} (run the workflow on "
                        f"{src_gpu.slug}'s data, or gemmperf fit, first)")
    return fitted


def carried(fitted: ParamSet, gpu: GPU, source_microbench, target_microbench, dtype: str):
    """(the transfer onto ``gpu``, its (source, target) base parameters): against both GPUs'
    microbenchmark files where both are given, else against both descriptors."""
    families = sorted({family for family, _ in fitted.entries})
    if source_microbench and target_microbench:
        pairs = ((fitted.gpu, source_microbench), (gpu, target_microbench))
        bases = [fit_paramset(g, str(f), families, dtype, log=lambda *_: None) for g, f in pairs]
        rates = [microbench_figures(read_measurements(f, required=MICROBENCH_REQUIRED)) for _, f in pairs]
    else:
        bases, rates = [ParamSet(fitted.gpu), ParamSet(gpu)], [{}, {}]
    return transfer(fitted, bases[0], bases[1], rates[0], rates[1]), bases[0], bases[1]


def add_gpu_flags(p) -> None:
    p.add_argument("--gpu", default="auto",
                   help="catalog slug (gemmperf gpus lists them), a hardware.json, or auto: probe the "
                   "local GPU (default); e.g. --gpu h100-sxm5-80gb")
    p.add_argument("--params", help="parameters JSON written by gemmperf fit (default "
                   "results/<gpu>/params.json if present, results/<gpu>/<dtype>/params.json for a dtype "
                   "other than bf16, else descriptor defaults); "
                   "e.g. --params results/h100-sxm5-80gb/params.json")
    p.add_argument("--params-any-gpu", action="store_true",
                   help="use --params even if it was fitted for another GPU than --gpu")
    add_set_flag(p)


def resolve_correction(path: str | None, corrected: bool, gpu: GPU, dtype: str, carried_from: GPU | None = None):
    """The residual correction of --correction FILE, else with --corrected the workflow's
    correction.json of ``gpu`` (under --transfer-from, of the GPU ``carried_from`` whose fit
    is carried); None with neither. A carried correction counts ``gpu``'s SMs
    (``Correction.onto``)."""
    if path:
        correction = Correction.load(path)
    elif corrected:
        correction = load_correction(RESULTS, run_name((carried_from or gpu).slug, dtype))
    else:
        return None
    return correction.onto(gpu.sms) if carried_from is not None else correction


def carried_correction(carried_from: GPU, gpu: GPU) -> str:
    """What an answer corrected under --transfer-from is corrected by, in words."""
    return (f"by the residual correction learned on {carried_from.slug}'s GEMMs, carried with its fit "
            f"(none measured on {gpu.slug})")


def add_transfer_flag(p, what: str) -> None:
    """--transfer-from GPU: ``what`` (predict, optimize for) --gpu from another GPU's fit."""
    p.add_argument("--transfer-from", metavar="GPU",
                   help=f"{what} --gpu from another GPU's fit (its params.json, or --params), carried over by "
                   "the units of each value onto --gpu's microbenchmarks (else its descriptor), and with "
                   "--corrected by that GPU's residual correction: no GEMM measured on --gpu, e.g. --gpu "
                   "h200-sxm-141gb --transfer-from h100-sxm5-80gb")


def add_set_flag(p) -> None:
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override one model parameter (every family and dtype); repeatable; "
                   "e.g. --set t_init_us=1.5")
