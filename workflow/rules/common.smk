import hashlib
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

from snakemake.utils import validate

from gemmperf.app.plan import check_config, make_plan, validate_config
from gemmperf.app.stagehash import code_hash
from gemmperf.errors import UserError

# A bad config value, testlist or GPU folder stops the workflow here with one line
# (the key or file and the value), before any rule runs.
SCHEMA = workflow.source_path("../schemas/config.schema.yaml")
try:
    validate_config(config, SCHEMA)
    validate(config, SCHEMA)  # fills the defaults
    check_config(config)
    PLAN = make_plan(config)
except UserError as err:
    print(f"gemmperf workflow: {err}", file=sys.stderr)
    sys.exit(2)
GPUS = list(PLAN.gpus)
# one chain per GPU and input dtype (a run): bf16's files under results/<gpu>/, those of
# another dtype D under results/<gpu>/D/ (gemmperf.app.plan); the rules after hardware
# are per run, the wildcard {run}
RUNS = list(PLAN.runs)
TESTLISTS = config["testlists"]
# runs whose fit also writes the residual correction (they have measurements)
CORRECTED_RUNS = [
    r for r in RUNS if config["residual"] and PLAN.runs[r].testlists_measured
]
# config model_params as the CLI's overrides (a list of words: rules quote each with
# {params.overrides:q}), for every stage that runs a model; the schema holds the names
# and the values (numbers)
SET_PARAMS = [
    word for k, v in config["model_params"].items() for word in ("--set", f"{k}={v}")
]
# the held-out testlist as CLI words: none when heldout_testlist is null
HELDOUT = (
    ["--heldout", config["heldout_testlist"]] if config["heldout_testlist"] else []
)


def one_of(names):
    """A wildcard constraint matching exactly these names (escaped: '.' is literal)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


# after a command: its output goes to the rule's log; when it fails, the log's last line
# (the CLI's one-line error) is printed above Snakemake's error block, which names the log
TO_LOG = " > {log:q} 2>&1 || {{ status=$?; tail -n 1 {log:q} >&2; exit $status; }}"


def logged(command):
    """A rule's shell line: ``command`` with TO_LOG after it."""
    return "".join((command, TO_LOG))


onstart:
    print(PLAN.summary())


wildcard_constraints:
    gpu=one_of(GPUS),
    run=one_of(RUNS),
    testlist=one_of(TESTLISTS),


def code_version(stage):
    """A hash of the gemmperf files the command ``stage`` imports: put it in a rule's
    params so that editing them reruns that stage (gemmperf.app.stagehash)."""
    return code_hash(stage)


def gpu_plan(wildcards):
    return PLAN.gpus[wildcards.gpu]


def run_plan(wildcards):
    return PLAN.runs[wildcards.run]


def run_dtype(wildcards):
    return run_plan(wildcards).dtype


def run_hardware(wildcards):
    """The descriptor of the run's GPU (one per GPU, whatever the dtype)."""
    return f"results/{run_plan(wildcards).gpu}/hardware.json"


def testlist_path(wildcards):
    return f"{config['testlist_dir']}/{wildcards.testlist}.csv"


def shipped(gpu, name):
    return f"results/{gpu}/shipped/{name}"


def measurement_path(run, testlist):
    """The measured table of one testlist in a run: collected here, shipped, or none."""
    r = PLAN.runs[run]
    if testlist not in r.testlists_measured:
        return []
    if r.source == "measure":
        return f"results/{run}/measurements/{testlist}.csv"
    return f"{r.data}/measurements/{testlist}.csv"


def measurements(wildcards):
    return measurement_path(wildcards.run, wildcards.testlist)


def all_measurements(wildcards):
    r = run_plan(wildcards)
    return [measurement_path(r.name, t) for t in r.testlists_measured]


def microbench(wildcards):
    r = run_plan(wildcards)
    if not r.has_microbench:
        return []
    if r.source == "measure":
        return f"results/{r.name}/microbench.csv"
    return f"{r.data}/microbench.csv"


def data_note(wildcards):
    r = run_plan(wildcards)
    notes = {
        "measure": f"Measured on this machine's GPU ({PLAN.local_note}).",
        "shipped": "No local measurements: using the shipped reference measurements "
        f"({r.data}/), described in its README.",
        "catalog": "No measurements: the GPU descriptor comes from the catalog and the "
        "model parameters are descriptor defaults; nothing here was measured.",
    }
    if r.source == "catalog" and PLAN.gpus[r.gpu].source == "shipped":
        notes["catalog"] = (
            f"No {r.dtype} measurements: the shipped data (results/{r.gpu}/shipped/) has none "
            "of this dtype, so the model parameters are descriptor defaults; nothing here was measured."
        )
    dtype = "" if r.name == r.gpu else f"{r.dtype} inputs. "
    return dtype + notes[r.source]


# runs whose shipped data has timed answers of fresh shapes, fitted with the residual
# correction and ws-hopper: the answer band (rule answer_band) that `gemmperf optimize`
# gives with its answer
BAND_RUNS = [
    r
    for r in CORRECTED_RUNS
    if PLAN.runs[r].answers and "ws-hopper" in config["families"]
]


def answer_runs(wildcards):
    return run_plan(wildcards).answers


def fit_answers(wildcards):
    """The timed answers a run's residual correction also learns from (gemmperf fit
    --answers): those of a run with an answer band, else its teacher's, else none."""
    r = run_plan(wildcards)
    if wildcards.run in BAND_RUNS:
        return r.answers
    return PLAN.runs[r.teacher].answers if r.teacher else []


def teacher_measurements(wildcards):
    """The measurements of the run's teacher (gemmperf fit --teacher-measurements: the
    GPU's bf16 tables for its fp8 run), else none."""
    r = run_plan(wildcards)
    if not r.teacher:
        return []
    return [
        measurement_path(r.teacher, t) for t in PLAN.runs[r.teacher].testlists_measured
    ]


def report_answer_band(wildcards):
    """The run's answer band for its report, where it has one."""
    return (
        f"results/{wildcards.run}/answer_band.json"
        if wildcards.run in BAND_RUNS
        else []
    )


def all_outputs():
    out = ["results/index.html"]
    for run, r in PLAN.runs.items():
        out.append(f"results/{run}/report/index.html")
        if r.testlists_measured:
            out.append(f"results/{run}/accuracy.json")
    out += [f"results/{run}/answer_band.json" for run in BAND_RUNS]
    return out + (ablation_outputs() if config["ablations"] else [])


def ablation_outputs():
    """The ablation scores of every run with measurements (the target `ablations`)."""
    return [
        f"results/{run}/ablations.json"
        for run, r in PLAN.runs.items()
        if r.testlists_measured
    ]


# GPUs whose bf16 run has microbenchmarks and measurements: each one's fit is carried
# onto each other one and scored there (rule transfer_pair, the target `transfer`)
TRANSFER_GPUS = [
    g
    for g in GPUS
    if g in PLAN.runs
    and PLAN.runs[g].has_microbench
    and PLAN.runs[g].testlists_measured
]


def transfer_outputs():
    """Every ordered pair of TRANSFER_GPUS (the target `transfer`)."""
    return [
        f"results/transfer/{a}/to-{b}.json"
        for a in TRANSFER_GPUS
        for b in TRANSFER_GPUS
        if a != b
    ]


def of_gpu(input_function, side):
    """``input_function`` (of a run's wildcards) for the bf16 run of the GPU in the
    wildcard ``side`` (src or dst) of rule transfer_pair."""
    return lambda wildcards: input_function(
        SimpleNamespace(run=getattr(wildcards, side))
    )


def report_ablations(wildcards):
    """The ablation table for the report, when the config asks for ablations."""
    if not (config["ablations"] and run_plan(wildcards).testlists_measured):
        return []
    return f"results/{wildcards.run}/ablations.csv"


def report_headline(name):
    """An input function: results/{run}/<name> of the headline accuracy (leave one
    testlist out), where the plan has one."""

    def inputs(wildcards):
        if "headline" in run_plan(wildcards).skipped:
            return []
        return f"results/{wildcards.run}/{name}"

    return inputs


def kernel_speed(wildcards):
    """benchmarks/results/kernel_speed_<prefix>.json whose prefix starts the GPU slug
    (bf16 runs only: the kernels were timed against cuBLAS in bf16)."""
    r = run_plan(wildcards)
    if r.dtype != "bf16":
        return []
    for path in sorted(Path("benchmarks/results").glob("kernel_speed_*.json")):
        if r.gpu.startswith(path.stem.removeprefix("kernel_speed_")):
            return str(path)
    return []


def identity_json(wildcards):
    """The plan's identity of the GPU, for `gemmperf hardware --expect-identity`."""
    return json.dumps(gpu_plan(wildcards).identity)


def shipped_readme(wildcards):
    """The shipped data's README, for a run that reads shipped measurements."""
    r = run_plan(wildcards)
    path = shipped(r.gpu, "README.md")
    return path if r.source == "shipped" and Path(path).is_file() else []


def if_measured(path):
    return lambda w: path.format(run=w.run) if run_plan(w).testlists_measured else []


def collect_preset(wildcards):
    """The collect preset of a testlist: its own (collect.presets), else collect.preset."""
    c = config["collect"]
    return c["presets"].get(wildcards.testlist, c["preset"])


def collect_sample_count(wildcards):
    """Configurations per shape and family of preset sample for a testlist."""
    s = config["collect"]["sample"]
    return s["counts"].get(wildcards.testlist, s["count"])


def collect_journal(wildcards):
    """A collect shard's journal: every measured row, appended as measured. It is not an
    output of the rule, so Snakemake never deletes it: a killed or failed collect job
    resumes from it, and the declared output is written from it at the end. Its name
    carries a hash of what makes old rows stale (the collect code, the timing settings,
    the GPU's identity), so a change there starts a new journal."""
    c = config["collect"]
    r = run_plan(wildcards)
    stale_if = [
        code_version("collect"),
        r.dtype,
        c["warm_l2"],
        c["rel_spread"],
        c["max_seconds"],
        json.dumps(PLAN.gpus[r.gpu].identity),
    ]
    tag = hashlib.sha256(json.dumps(stale_if, sort_keys=True).encode()).hexdigest()[:12]
    w = wildcards
    return f"results/{w.run}/journal/{w.testlist}/{w.shard}-of-{w.shards}.{tag}.csv"
