"""Probe: how does a k-block's time fall with the ring depth B, at fixed tiles and CTAs?

When this probe was written the model's ring took max(Tc, x, (lat + x + Tc) / B) a
k-block. The kernel's consumer releases a slot one k-block late (it waits for the previous
k-block's wgmma after issuing the next one), which as a max-plus cycle would give
(lat + x) / (B - 1); the development data then preferred B, the zero-fill-rows probe's
in-bounds rows sit between the two (benchmarks/MODEL_ACCURACY.md, "Tried in the twelfth
session"). Since step 25 the latency term is (lat + Tc) * (1 / (B - h) + 1 / B_sat): h
held slots, a deep ring saturating (MODEL_ACCURACY.md, step 25). This times every ring
depth from 2 up to the deepest the shared memory holds, for 128x64, 128x128, 128x256 and
64x128 tiles (1x1 clusters, cooperative, TMA-store epilogue, persistent), nothing
overhanging M or N, K = 8192 (TK = 64: 128 k-blocks), with 32 CTAs (one tile row, 32
tiles) and with a full wave of 132, so the per-k-block time shows how many loads a ring
of B slots keeps in flight. Each run is verified against float64 as in a sweep. It prints
the time per k-block, by tile and CTAs, the ring depths across. With ``--schedules`` it
times instead the rings of clusters and of ping-pong consumers: 128x64 and 128x128 tiles,
clusters 1x1, 2x1, 1x2 and 2x2 (a cluster of cm x cn CTAs takes cm tile rows: M = cm*TM),
cooperative and ping-pong, the same CTA counts and depths (a cluster shares every
multicast slot; ping-pong's two consumers take turns with whole tiles). With ``--wide``
it times the tiles of 256 rows or columns (256x128, 128x256, 256x64, 64x256), 1x1
clusters, both schedules where they are legal: a 256-row tile gives each cooperative
consumer warpgroup two m64 wgmma rows per k16 step, a 256-column tile one of n256. With
``--modes`` each run is timed also as the load-only kernel (its consumers release a slot
as it lands: the ring without the multiply) and the math-only one (no loads), which time
the two halves of the ring apart (not verifiable: their C is not a product). With
``--boxes`` it times the wide tiles (cooperative, 1x1, two to four stages) as measured,
each 256-row operand slice one TMA box, and again with that slice loaded as two 128-row
boxes (``WsHopper.box_limit``): whether a slow two-stage ring is the 256-row box. With
``--columns`` it times the same wide rings with the CTAs in one tile row (M = TM: every
CTA reads the same A box, each its own B box) and in one tile column (N = TN: the same B
box, each its own A box): whether the slow ring is the operand all CTAs share. With
``--release`` it times the wide tiles' and 128x128's cooperative rings (two to four
stages) as measured, a consumer freeing k-block j - 1's slot once j - 1's wgmmas are done
and j's issued, and again freeing it before j's issue (``WsHopper.release_first``):
whether the slow ring is the time the consumers take to issue a k-block. With ``--rate``
it times load-only rings of 128x64, 128x128, 128x256 and 256x128 tiles with 1 and 8 CTAs
at every depth: the bytes a CTA's slots bring in a microsecond grow with the slots in
flight until one SM's rate from memory caps them (the fitted ``sm_load_bytes_per_us``).
With ``--ctas`` it times the round trip against the load on the memory system instead:
128x64, 128x128 and 64x128 tiles (1x1, cooperative) at 2, 3 and 4 stages, with 1, 2, 4,
8, 16, 32, 64 and 132 CTAs of one tile row. With ``--pitch`` it times the rows on and off
their 32-byte sector: 128x64 and 128x128 tiles, 1x1 and 2x1 clusters, 2 to 4 stages, 2 to
132 CTAs, each at K = 8192 (a 16384-byte row pitch) and K = 8184 (16368 bytes, 16 off the
sector; the same 128 k-blocks, the last 56 wide): whether a ring slot's round trip waits
for its SM to issue the split rows' extra requests (``split_row_latency``, issue 17's step
23). A GPU-side script: numpy + cuda-python only. With ``--predict probe.csv`` and the
run's selection flags (no GPU; polars) it reads a run back and prints the fitted model's
time over the measured one for each full-mode run (ws-pipelined fitted on every
development row of ``--gpu``'s shipped data, the H100's by default; model_ceiling.py),
the stages across; with ``--pitch``, each ring's time
at K = 8184 over its time at K = 8192, measured and as the model predicts it with and
without ``split_row_latency``.

    PYTHONPATH=src python3 benchmarks/ring_depth_probe.py [--out probe.csv]
        [--schedules | --wide | --ctas | --boxes | --columns | --release | --rate | --pitch] [--modes]
    python benchmarks/ring_depth_probe.py --predict probe.csv [--gpu h200-sxm-141gb]
        [--schedules | --wide | --ctas | --boxes | --columns | --release | --pitch] [--modes]
    python benchmarks/ring_depth_probe.py --compare A.csv B.csv

``--compare`` reads two runs of the same selection (two GPUs, say; no GPU needed) and
prints each verified run's time in B over its time in A, the stages across.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from probes import DEVELOPMENT_GPU

TILES = ((128, 64), (128, 128), (128, 256), (64, 128))
STAGES = (2, 3, 4, 5, 6, 7, 8)
CTAS = (32, 132)  # one tile row of 32 tiles; a full wave on the H100
K = 8192
TILE_K = 64
SCHEDULE_TILES = ((128, 64), (128, 128))  # --schedules
CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
SCHEDULES = ("cooperative", "pingpong")
WIDE_TILES = ((256, 128), (128, 256), (256, 64), (64, 256))  # --wide, --boxes, --columns
MODES = ("full", "load-only", "math-only")  # --modes
CTA_TILES = ((128, 64), (128, 128), (64, 128))  # --ctas
CTA_COUNTS = (1, 2, 4, 8, 16, 32, 64, 132)
SHALLOW = (2, 3, 4)  # --ctas, --boxes, --columns, --release
RELEASE_TILES = WIDE_TILES + ((128, 128),)  # --release: the wide tiles and a fast ring beside them
RATE_TILES = ((128, 64), (128, 128), (128, 256), (256, 128))  # --rate: one SM's load rate
PANELS = ("row", "column")  # --columns: the CTAs' tiles in one tile row, then in one tile column
PITCH_KS = (K, K - 8)  # --pitch: rows on their sector, then 16 bytes off it (the same k-blocks)
# WsHopper's probe knobs as the kernels were measured; --boxes and --release time each run
# as measured, then with one knob turned
AS_MEASURED = {"box_limit": 256, "release_first": False}
COOPERATIVE = (((1, 1), "cooperative"),)


@dataclass(frozen=True)
class Selection:
    """One selection's runs: ``variants`` x ``panels`` x ``tiles`` x ``ctas`` x ``kinds``
    (cluster, schedule) x ``depths`` x ``ks`` x modes, in that order. ``modes``: the modes every run
    takes (None: full, or MODES with --modes); ``variants``: the WsHopper knobs turned
    (over AS_MEASURED); ``panels``: the CTAs' tiles in one tile row or one tile column;
    ``label``: the task key that tells the runs apart, its CSV column."""

    tiles: tuple
    ctas: tuple = CTAS
    kinds: tuple = COOPERATIVE
    depths: tuple = STAGES
    modes: tuple | None = None
    variants: tuple = ({},)
    panels: tuple = PANELS[:1]
    ks: tuple = (K,)
    label: tuple = ()  # (task key, CSV column)


SELECTIONS = {
    "": Selection(TILES),
    "schedules": Selection(SCHEDULE_TILES, kinds=tuple((c, s) for c in CLUSTERS for s in SCHEDULES)),
    "wide": Selection(WIDE_TILES, kinds=tuple(((1, 1), s) for s in SCHEDULES)),
    "ctas": Selection(CTA_TILES, ctas=CTA_COUNTS, depths=SHALLOW),
    # 256-row operand slices as two 128-row TMA boxes
    "boxes": Selection(WIDE_TILES, depths=SHALLOW, variants=({}, {"box_limit": 128}), label=("box_limit", "box")),
    "columns": Selection(WIDE_TILES, depths=SHALLOW, panels=PANELS, label=("panel", "panel")),
    # a consumer freeing the previous k-block's slot before issuing the next one's wgmmas
    "release": Selection(RELEASE_TILES, depths=SHALLOW, variants=({}, {"release_first": True}),
                         label=("release_first", "release")),
    "rate": Selection(RATE_TILES, ctas=(1, 8), modes=("load-only",)),
    "pitch": Selection(CTA_TILES[:2], ctas=(2, 8, 32, 132), kinds=(((1, 1), "cooperative"), ((2, 1), "cooperative")),
                       depths=SHALLOW, ks=PITCH_KS, label=("k", "k")),
}
FLAGS = {"schedules": "the rings of clusters and ping-pong consumers",
         "wide": "tiles of 256 rows or columns, both schedules",
         "ctas": "the round trip against the CTAs in flight, 1 to 132",
         "boxes": "the wide tiles' 256-row slices as one TMA box, then two",
         "columns": "the wide tiles' rings in one tile row, then one tile column",
         "release": "the rings with each slot freed before the next issue",
         "rate": "one SM's load rate: load-only rings of 1 and 8 CTAs, every depth",
         "pitch": "rows on and off their 32-byte sector (K = 8192 and 8184), 1x1 and 2x1 clusters"}


def selected(flags: dict) -> str:
    """The selection the on/off ``flags`` (name -> bool; ``modes`` aside) name: "" for none."""
    on = [name for name, value in flags.items() if value and name != "modes"]
    unknown = sorted(set(on) - set(FLAGS))
    if unknown or len(on) > 1:
        raise ValueError(f"one selection at most, of {', '.join(FLAGS)}: got {', '.join(on)}")
    return on[0] if on else ""


def tasks(modes: bool = False, **flags) -> list[dict]:
    """The runs, in order, of the selection ``flags`` name (``schedules=True``, ...; none:
    the default tiles): each a task row (``m``, ``n``, ``k``, the configuration, the
    WsHopper knobs it runs with and its panel); ring depths the H100's shared memory cannot
    hold are left out. ``modes``: each run also as the load-only kernel (the consumers
    release each slot as it lands: the ring without the multiply) and the math-only one (no
    loads). SELECTIONS has each selection's runs."""
    from gemmperf.hardware import get_gpu
    from gemmperf.kernels import check_legal
    from gemmperf.problem import KernelConfig

    gpu = get_gpu(DEVELOPMENT_GPU)
    sel = SELECTIONS[selected(flags)]
    out = []
    for knobs, panel in [({**AS_MEASURED, **v}, p) for v in sel.variants for p in sel.panels]:
        for tile_m, tile_n in sel.tiles:
            for n_ctas in sel.ctas:
                for (cm, cn), schedule in sel.kinds:
                    for stages in sel.depths:
                        cfg = KernelConfig(family="ws-hopper", dtype="bf16", tile_m=tile_m, tile_n=tile_n,
                                           tile_k=TILE_K, stages=stages, cluster_m=cm, cluster_n=cn,
                                           persistent=True, schedule=schedule, epilogue="tma")
                        if check_legal(cfg, gpu) is None:  # a row: cm tile rows, ctas / cm tile columns
                            m, n = ((cm * tile_m, n_ctas // cm * tile_n) if panel == "row" else
                                    (n_ctas // cn * tile_m, cn * tile_n))
                            for k in sel.ks:
                                for mode in sel.modes or (MODES if modes else ("full",)):
                                    out.append({"m": m, "n": n, "k": k, **{**cfg.as_dict(), "mode": mode},
                                                **knobs, "panel": panel})
    return out


def label(task: dict, named: bool, selection: str = "") -> dict:
    """The columns that name a run: tile, CTAs, M, N, stages (and, ``named``, the cluster,
    the schedule and the mode, for runs that differ in them; the ``selection``'s own
    column where its runs differ in a knob or a panel)."""
    ctas = task["m"] // task["tile_m"] * (task["n"] // task["tile_n"])
    kind = {"cluster": f"{task['cluster_m']}x{task['cluster_n']}", "schedule": task["schedule"],
            "mode": task["mode"]} if named else {}
    if SELECTIONS[selection].label:
        key, column = SELECTIONS[selection].label
        value = task[key]
        kind[column] = ("first" if value else "after-issue") if key == "release_first" else value
    return {"tile": f"{task['tile_m']}x{task['tile_n']}", "ctas": ctas, **kind, "m": task["m"], "n": task["n"],
            "stages": task["stages"]}


NAMES = ("tile", "ctas", "cluster", "schedule", "box", "panel", "release", "k")  # a --predict line's name


def predict(path, gpu: str = DEVELOPMENT_GPU, **flags) -> list[str]:
    """The run at ``path`` (this probe's CSV of ``tasks(**flags)``, rows in task order)
    beside the fitted model: one line a tile, CTA count (cluster, schedule, knob, panel) of
    the full-mode runs, predicted over measured at each ring depth, then the MAPE over them."""
    from probes import predicted, read_csv

    todo = tasks(**flags)
    try:
        runs = read_csv(path)
    except OSError as err:
        raise SystemExit(f"{path}: {err.strerror}") from None
    # the runs before --pitch have no K column: all at K
    if len(runs) != len(todo) or any((int(r["m"]), int(r["n"]), int(r.get("k", K)), int(r["stages"]))
                                     != (t["m"], t["n"], t["k"], t["stages"]) for r, t in zip(runs, todo)):
        raise SystemExit(f"{path}: not a run of this selection ({', '.join(k for k, v in flags.items() if v)})")
    full = [(t, r) for t, r in zip(todo, runs) if t["mode"] == "full" and r["status"] == "ok"]
    if selected(flags) == "pitch":
        return pitch_ratios(full, gpu)
    pred = predicted([t for t, _ in full], gpu)
    ratio = {}
    for (t, r), p in zip(full, pred):
        name = " ".join(str(v) for k, v in label(t, True, selected(flags)).items() if k in NAMES)
        ratio.setdefault(name, []).append((t["stages"], p / float(r["time_us"])))
    out = [f"{name}  " + " ".join(f"{s}: {x:.2f}" for s, x in values) for name, values in ratio.items()]
    ape = [abs(x - 1.0) for values in ratio.values() for _, x in values]
    out.append(f"predicted / measured over {len(ape)} runs: MAPE {100 * sum(ape) / len(ape):.1f}%")
    return out


def pitch_ratios(full: list, gpu: str = DEVELOPMENT_GPU) -> list[str]:
    """--pitch's read-back: for each ring (tile, CTAs, cluster) and depth, its time at K =
    8184 (rows 16 bytes off their sector) over its time at K = 8192, measured, and as the
    fitted model predicts with ``split_row_latency`` and without it; then the mean
    absolute error of each prediction of that ratio over the rings."""
    from probes import predicted

    tasks = [t for t, _ in full]
    on, off = predicted(tasks, gpu), predicted(tasks, gpu, split_row_latency=False)
    at = {(t["tile_m"], t["tile_n"], t["m"], t["n"], t["cluster_m"], t["stages"], t["k"]): (float(r["time_us"]), p, q)
          for (t, r), p, q in zip(full, on, off)}
    out, err = [], {"with": [], "without": []}
    for (tm, tn, m, n, cm, stages, k), (meas, p, q) in at.items():
        if k != PITCH_KS[1] or (tm, tn, m, n, cm, stages, PITCH_KS[0]) not in at:
            continue
        meas0, p0, q0 = at[(tm, tn, m, n, cm, stages, PITCH_KS[0])]
        ratio, with_s, without = meas / meas0, p / p0, q / q0
        err["with"].append(abs(with_s / ratio - 1.0))
        err["without"].append(abs(without / ratio - 1.0))
        ctas = m // tm * (n // tn)
        out.append(f"{tm}x{tn} {ctas} CTAs {cm}x1 {stages} stages  K {k} / {PITCH_KS[0]}: measured {ratio:.3f}, "
                   f"predicted {with_s:.3f} (without split_row_latency {without:.3f})")
    for name, e in err.items():
        if e:
            out.append(f"the ratio predicted {name} split_row_latency over {len(e)} rings: "
                       f"mean error {100 * sum(e) / len(e):.1f}%")
    return out


RUN_COLUMNS = ("status", "time_us", "reason", "clock_start", "clock_end")  # what a run measured, not its label


def compare(path_a, path_b) -> list[str]:
    """The runs two probe CSVs of the same selection both verified (on two GPUs, say): the
    time in ``path_b`` over the time in ``path_a``, one line a ring (tile, CTAs, cluster,
    schedule, mode), the stages across, then the median by CTAs and stages. Raises
    ValueError where their columns differ or they share no verified run."""
    from probes import measured, read_csv

    rows_a, rows_b = read_csv(path_a), read_csv(path_b)
    labels = tuple(c for c in (rows_a[0] if rows_a else {}) if c not in RUN_COLUMNS)
    if not rows_b or set(labels) != {c for c in rows_b[0] if c not in RUN_COLUMNS}:
        raise ValueError(f"{path_a} and {path_b} are not runs of the same selection (their columns differ)")
    a, b = measured(rows_a, labels), measured(rows_b, labels)
    both = [key for key in a if key in b]
    if not both:
        raise ValueError(f"{path_a} and {path_b} share no verified run")
    at = {c: i for i, c in enumerate(labels)}
    ring = [c for c in ("tile", "ctas", "cluster", "schedule", "mode") if c in at]
    ratio = {key: b[key] / a[key] for key in both}
    out = [f"time in {Path(path_b).name} over {Path(path_a).name}; {' '.join(ring)}, then stages: ratio"]
    for name in dict.fromkeys(tuple(key[at[c]] for c in ring) for key in both):
        runs = [key for key in both if tuple(key[at[c]] for c in ring) == name]
        out.append(" ".join(name) + "  " + " / ".join(f"{key[at['stages']]}: {ratio[key]:.3f}" for key in runs))
    out.append("median by CTAs and stages (runs): " + ", ".join(
        f"{ctas} CTAs {stages} stages {statistics.median(r):.3f} ({len(r)})"
        for (ctas, stages), r in _by(both, ratio, at).items()))
    return out


def _by(keys, ratio, at) -> dict[tuple[int, int], list[float]]:
    groups: dict[tuple[int, int], list[float]] = {}
    for key in sorted(keys, key=lambda k: (int(k[at["ctas"]]), int(k[at["stages"]]))):
        groups.setdefault((int(key[at["ctas"]]), int(key[at["stages"]])), []).append(ratio[key])
    return groups


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--compare":
        if len(argv) != 3:
            raise SystemExit("usage: ring_depth_probe.py --compare A.csv B.csv")
        try:
            print("\n".join(compare(argv[1], argv[2])))
        except (OSError, ValueError) as err:
            raise SystemExit(f"ring_depth_probe.py --compare: {err}") from None
        return 0
    usage = (f"usage: ring_depth_probe.py --predict probe.csv [--gpu SLUG] [{' | '.join('--' + f for f in FLAGS)}]"
             " [--modes]")
    if "--predict" in argv:
        argv, gpu = list(argv), DEVELOPMENT_GPU
        if "--gpu" in argv:  # the shipped data the constants are fitted on
            j = argv.index("--gpu")
            if j + 1 >= len(argv):
                raise SystemExit(usage)
            gpu = argv.pop(j + 1)
            argv.pop(j)
        i = argv.index("--predict")
        flags = {f.lstrip("-"): True for f in argv[:i] + argv[i + 2:]}
        if i + 1 >= len(argv) or set(flags) - set(FLAGS) - {"modes"} or flags.get("rate"):
            raise SystemExit(usage)
        try:
            print("\n".join(predict(argv[i + 1], gpu, **flags)))
        except ValueError as err:
            raise SystemExit(f"ring_depth_probe.py: {err}") from None
        return 0
    from probes import run_knobs, start

    a, gpu, meas = start(__doc__, argv, {**FLAGS, "modes": "every run also as the load-only and the math-only kernel"})
    flags = {name: getattr(a, name) for name in FLAGS}
    try:
        selection = selected(flags)
    except ValueError as err:
        raise SystemExit(f"ring_depth_probe.py: {err}") from None
    named = a.modes or selection not in ("", "ctas")  # runs that differ in more than size
    rows = run_knobs(a, gpu, meas, tasks(a.modes, **flags), lambda t: label(t, named, selection))
    kblocks = -(-K // TILE_K)
    print(f"\nus per k-block ({kblocks} k-blocks), stages: time")
    columns = ("tile", "ctas", "cluster", "schedule", "mode", *NAMES[4:])
    kind = lambda r: tuple(r[c] for c in columns if c in r)  # noqa: E731
    for name in dict.fromkeys(kind(r) for r in rows):  # one line a tile, CTA count (cluster, schedule, mode)
        t = [(r["stages"], r["time_us"] / kblocks) for r in rows if r["status"] == "ok" and kind(r) == name]
        print(" ".join(str(v) for v in name) + "  " + " / ".join(f"{s}: {x:.3f}" for s, x in t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
