"""What the GPU probes of benchmarks/ (cluster, oob_box, raster, ring_depth, zero_fill,
zero_fill_rows, footprint, stream_k, release_first, optimizer_picks, dispatch, schedule)
share: one run measured as a sweep measures it, the loop over a probe's runs (``run``; ``run_knobs`` where runs turn
ws-hopper's probe knobs), and their CSV; a plan's runs read back as tasks
(``read_tasks``); reading a run back beside the fitted model (``read_back``, ``read_csv``,
``measured``, ``predicted``). GPU-side: numpy + cuda-python only; the
gemmperf and polars imports are inside the functions, so a probe's task list loads
without them."""

from __future__ import annotations

import argparse
import csv

# the GPU whose shipped data the probes' read-backs fit on and whose limits their task
# lists respect, unless told another (--gpu SLUG where a probe takes one)
DEVELOPMENT_GPU = "h100-sxm5-80gb"


def start(doc: str, argv=None, flags: dict | None = None):
    """(arguments, GPU, Measurer) of a probe: ``--out`` (a CSV of every run, optional) and
    the on/off ``flags`` (name -> help), the local GPU probed, a Measurer that verifies
    full-mode runs and times each for up to a second."""
    from gemmperf.bench.measure import Measurer
    from gemmperf.hardware import probe

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", default=None, help="CSV of every run")
    for name, text in (flags or {}).items():
        ap.add_argument(f"--{name}", action="store_true", help=text)
    args = ap.parse_args(argv)
    gpu = probe(0)
    return args, gpu, Measurer(gpu, max_seconds=1.0)


def read_back(argv, read) -> tuple[int | None, list[str]]:
    """A probe's ``--read CSV [--gpu SLUG]``: (``read(CSV, SLUG)``'s exit code, the SLUG
    DEVELOPMENT_GPU unless given, and the other arguments) where ``argv`` asks for it,
    else (None, the other arguments) for the probe's own run."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--read", default=None)
    ap.add_argument("--gpu", default=None)
    known, rest = ap.parse_known_args(argv)
    return (read(known.read, known.gpu or DEVELOPMENT_GPU) if known.read else None), rest


def measure(meas, gpu, task: dict) -> dict:
    """One run of ``task`` (``m``, ``n``, ``k`` and the configuration's fields; other keys
    are ignored) by ``meas`` (a bench.measure.Measurer: verified against float64, then
    timed): status, time_us, reason and the SM clock before and after. A configuration
    the GPU cannot run is not launched: status "illegal" and why."""
    from gemmperf.kernels import check_legal
    from gemmperf.problem import KernelConfig

    config = {k: v for k, v in task.items() if k in KernelConfig.__dataclass_fields__}
    why = check_legal(KernelConfig(**config), gpu)
    if why is not None:
        return {"status": "illegal", "time_us": None, "reason": why}
    out = meas({**config, "m": task["m"], "n": task["n"], "k": task["k"]})
    return {"status": out.get("status"), "time_us": out.get("time_us"), "reason": out.get("reason", ""),
            "clock_start": out.get("sm_clock_start_mhz"), "clock_end": out.get("sm_clock_end_mhz")}


def write_csv(path, rows: list[dict]) -> None:
    """``rows`` to ``path``, every column any row has, in first-seen order."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(c for r in rows for c in r)))
        w.writeheader()
        w.writerows(rows)


def run(args, gpu, meas, tasks, label) -> list[dict]:
    """Every task of ``tasks`` measured in order (``measure``), its row ``label(task)`` (the
    columns that name the run) followed by the outcome; a progress line per run; the CSV of
    all of them at ``args.out`` when given. Returns the rows."""
    rows = []
    for task in tasks:
        named = label(task)
        row = {**named, **measure(meas, gpu, task)}
        rows.append(row)
        print(" ".join(f"{k}={v}" for k, v in named.items()),
              f"{row['status']:8s} {row['time_us'] or float('nan'):9.2f} us {row['reason'][:80]}", flush=True)
    if args.out:
        write_csv(args.out, rows)
    return rows


# ws-hopper's probe knobs (kernels/hopper.py, WsHopper): a task may carry any of them
KNOBS = ("box_limit", "release_first")


def run_knobs(args, gpu, meas, tasks, label) -> list[dict]:
    """``run`` over ``tasks`` that carry ws-hopper probe knobs (KNOBS keys; one a task
    leaves out stays as it is): one knob setting at a time, in the order the tasks first
    name them, the Measurer's kernels dropped between settings (it keeps them by
    configuration, whatever the knobs); the knobs set back after, the CSV of every run at
    ``args.out`` when given. Returns the rows."""
    from gemmperf.kernels.hopper import WS_HOPPER

    before = {k: getattr(WS_HOPPER, k) for k in KNOBS}
    setting = lambda t: tuple(t.get(k, before[k]) for k in KNOBS)  # noqa: E731
    settings = list(dict.fromkeys(map(setting, tasks)))
    out, args.out = args.out, None
    rows = []
    try:
        for values in settings:
            for key, value in zip(KNOBS, values):
                setattr(WS_HOPPER, key, value)
            if len(settings) > 1:
                meas.kernels.clear()
            rows += run(args, gpu, meas, [t for t in tasks if setting(t) == values], label)
    finally:
        args.out = out
        for key, value in before.items():
            setattr(WS_HOPPER, key, value)
    if out:
        write_csv(out, rows)
    return rows


def read_csv(path) -> list[dict]:
    """The rows of a probe's CSV at ``path`` (``write_csv``'s), as strings."""
    with open(path) as f:
        return list(csv.DictReader(f))


INT_COLUMNS = ("m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "group_m",
               "persistent_ctas", "split_k")
BOOL_COLUMNS = ("persistent", "stream_k")


def typed(row: dict, floats: tuple[str, ...] = ()) -> dict:
    """A CSV row's values (strings) as a task wants them: the configuration's fields typed
    as KernelConfig wants, the ``floats`` columns as floats, the rest as written."""
    def one(c, v):
        if c in INT_COLUMNS:
            return int(v)
        if c in BOOL_COLUMNS:
            return v in ("True", "true")
        return float(v) if c in floats else v

    return {c: one(c, v) for c, v in row.items()}


def read_tasks(path, floats: tuple[str, ...] = ()) -> list[dict]:
    """A plan's runs written by ``write_csv`` (``m``, ``n``, ``k``, the configuration's
    fields, labels) as task rows (``typed``)."""
    return [typed(r, floats) for r in read_csv(path)]


def measured(rows: list[dict], columns: tuple[str, ...]) -> dict[tuple, float]:
    """The verified runs of a probe's ``rows`` (``read_csv``): their ``columns`` (as written,
    the run's label) -> time_us."""
    return {tuple(r[c] for c in columns): float(r["time_us"]) for r in rows if r["status"] == "ok"}


def predicted(tasks: list[dict], gpu: str = DEVELOPMENT_GPU, **switches) -> list[float]:
    """ws-pipelined's predicted time (us) of each of ``tasks`` (a probe's runs: ``m``, ``n``,
    ``k`` and the configuration's fields), its constants fitted on every development row
    of ``gpu``'s shipped bf16 data (model_ceiling.fit_in_sample; the held-out list never read). Needs
    polars: run on the development machine, not the GPU one. model_ceiling is probes'
    neighbour in benchmarks/, on the import path wherever probes is imported from there.
    ``switches``: ws-pipelined's effects turned on or off (``split_row_latency=False``)."""
    import polars as pl
    from model_ceiling import fit_in_sample

    from gemmperf.models import ws_pipelined as W

    _, fitted = fit_in_sample(gpu)
    return W.predict(pl.DataFrame(tasks), fitted, **switches).get_column("predicted_us").to_list()
