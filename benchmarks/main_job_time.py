"""How long the main job takes a newcomer: `snakemake --cores N` in a fresh clone.

Clones this repository's HEAD (committed work only) into a temporary folder, runs the
workflow there with N cores and this Python's snakemake and gemmperf (the clone's src/
first on PYTHONPATH), then prints the wall time, the CPU time of every process it ran,
each job's start and end (from Snakemake's log) and whether `snakemake -n` has nothing
left to do. Without a GPU it runs on the shipped data, as a newcomer's first run does.

    python benchmarks/main_job_time.py --cores 2

Measured figures and the machine they came from: benchmarks/README.md ("Main job time").
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]")


def jobs(log: str) -> list[tuple[int, int, str]]:
    """(start s, end s, rule and wildcards) of every job in a Snakemake log, by start."""
    lines = log.splitlines()
    t0 = now = None
    started, names, out = {}, {}, []
    for i, line in enumerate(lines):
        if m := STAMP.match(line):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            t0 = t0 or now
        elif m := re.match(r"(?:local)?rule (\w+):", line):
            block = lines[i + 1:i + 12]
            jobid = next(re.search(r"jobid: (\d+)", x).group(1) for x in block if "jobid:" in x)
            wildcards = next((x.split("wildcards:")[1].strip() for x in block if "wildcards:" in x), "")
            started[jobid], names[jobid] = now, f"{m.group(1)} {wildcards}".strip()
        elif (m := re.match(r"Finished jobid: (\d+)", line)) and m.group(1) in started:
            jobid = m.group(1)
            out.append(((started[jobid] - t0).seconds, (now - t0).seconds, names[jobid]))
    return sorted(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cores", type=int, default=2)
    a = p.parse_args()
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        env = {**os.environ, "PYTHONPATH": str(clone / "src"),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        start = time.perf_counter()
        run = subprocess.run([snakemake, "--cores", str(a.cores)], cwd=clone, env=env, capture_output=True,
                             text=True)
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        dry = subprocess.run([snakemake, "-n"], cwd=clone, env=env, capture_output=True, text=True)
    if run.returncode:
        print(run.stderr[-3000:], file=sys.stderr)
        return 1
    print(f"snakemake --cores {a.cores}: {wall:.0f} s wall, {usage.ru_utime + usage.ru_stime:.0f} s CPU "
          f"(load average before the end: {os.getloadavg()[0]:.1f})")
    for begin, end, name in jobs(run.stderr):
        print(f"  {begin:4d} -> {end:4d} s  {end - begin:4d} s  {name}")
    print("then snakemake -n:", "nothing to do" if "Nothing to be done" in dry.stdout + dry.stderr else "JOBS LEFT")
    return 0


if __name__ == "__main__":
    sys.exit(main())
