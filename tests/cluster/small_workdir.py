"""A small workflow folder on shipped measurements, and the comparison of two runs.

    python tests/cluster/small_workdir.py DIR            # config/, lists/, results/<gpu>/shipped/
    python tests/cluster/small_workdir.py --compare A B  # same outputs? (exit 1 if not)

The folder is the one tests/test_incremental.py uses (two short testlists, the shipped
H100 rows of their shapes). Compared: params.json, accuracy.json, every predictions
Parquet and CSV (as frames, exactly), every JSON (floats to 1e-9 relative). Reports are
HTML with dates in them and are only checked to exist.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from test_incremental import SLUG, make_workflow, write_shipped  # noqa: E402


def build(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    wf = make_workflow(root)
    write_shipped(root / "results", SLUG)
    print(f"{root}: {wf.config['testlists']} on shipped {SLUG}")


def _json(path: Path):
    data = json.loads(path.read_text())

    def strip(value):  # wall-clock fields differ between any two runs
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not any(t in k for t in ("seconds", "time_s", "date", "fitted_at"))}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(data)


def _json_diff(x, y, path: str = "") -> str | None:
    """Where two JSON values differ; floats agree to 1e-9 relative (a mean over groups
    may be summed in another order: the last digit differs between two runs)."""
    if isinstance(x, dict) and isinstance(y, dict):
        if x.keys() != y.keys():
            return f"{path} keys {sorted(set(x) ^ set(y))}"
        return next((d for k in x if (d := _json_diff(x[k], y[k], f"{path}/{k}"))), None)
    if isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            return f"{path} length"
        return next((d for i, (u, v) in enumerate(zip(x, y)) if (d := _json_diff(u, v, f"{path}[{i}]"))), None)
    if isinstance(x, float) or isinstance(y, float):
        ok = isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
        return None if ok else f"{path}: {x} vs {y}"
    return None if x == y else f"{path}: {x!r} vs {y!r}"


def _provenance(df) -> list[str]:
    """Columns that say when and from which file the parameters came (the fit's date
    differs between any two runs)."""
    return [c for c in df.columns if c == "params_source"]


def compare(a: Path, b: Path) -> list[str]:
    import polars as pl
    from polars.testing import assert_frame_equal

    problems, checked = [], 0
    ra, rb = a / "results" / SLUG, b / "results" / SLUG
    files = sorted(p.relative_to(ra) for p in ra.rglob("*") if p.is_file() and "shipped" not in p.parts)
    for rel in files:
        fa, fb = ra / rel, rb / rel
        if not fb.is_file():
            problems.append(f"{rel}: missing in {b}")
            continue
        try:
            if rel.suffix == ".json":
                where = _json_diff(_json(fa), _json(fb))
                if where:
                    problems.append(f"{rel}: JSON differs at {where}")
            elif rel.suffix == ".parquet":
                ta, tb = pl.read_parquet(fa), pl.read_parquet(fb)
                assert_frame_equal(ta.drop(_provenance(ta)), tb.drop(_provenance(tb)))
            elif rel.suffix == ".csv" and not rel.parts[0] == "report":
                ta, tb = pl.read_csv(fa), pl.read_csv(fb)
                drop = [c for c in ta.columns if "seconds" in c or c.endswith("_s")] + _provenance(ta)
                assert_frame_equal(ta.drop(drop), tb.drop(drop))
            else:
                continue
        except AssertionError as err:
            problems.append(f"{rel}: {str(err).splitlines()[0]}")
        checked += 1
    for rel in ("params.json", "accuracy.json", "report/index.html"):
        if not (rb / rel).is_file():
            problems.append(f"{rel}: not written by {b}")
    print(f"compared {checked} files of {ra} and {rb}: {len(problems)} differ")
    return problems


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        issues = compare(Path(sys.argv[2]), Path(sys.argv[3]))
        for line in issues:
            print("  " + line)
        sys.exit(1 if issues else 0)
    build(Path(sys.argv[1]))
