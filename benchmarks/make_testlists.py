"""Write the two generated testlists, each from its recorded seed (issue 17).

testlists/random.csv: the broad development list. 240 shapes, M log-uniform in
    1..16384, N and K in 16..32768, each size rounded to a multiple of 64 or of 8, kept
    as drawn or moved to the next prime (gemmperf.shapegen.ROUNDINGS).
testlists/sealed.csv: the held-out list, generated before any model work of issue 17
    and scored once, at the end. 64 shapes from the same generator (another seed) and 32
    projections of models no other testlist holds (Gemma-2 9B/27B, Llama-3.1 405B,
    Phi-4, gpt-oss-120b, a 32001-token vocabulary), M log-uniform in 1..8192.

    PYTHONPATH=src python3 benchmarks/make_testlists.py [--out testlists] [--check]

--check: compare with the files instead of writing them (exit status 1 on a difference).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gemmperf.shapegen import model_shapes, random_shapes

RANDOM_SEED, RANDOM_COUNT = 17017, 240
SEALED_SEED, SEALED_RANDOM, SEALED_MODELS = 92863, 64, 32

# (name, N, K) of Y = X W^T per projection; fused gate+up where the model fuses them
UNSEEN_PROJECTIONS = [
    ("gemma2-9b qkv", 8192, 3584), ("gemma2-9b o", 3584, 4096), ("gemma2-9b gate_up", 28672, 3584),
    ("gemma2-9b down", 3584, 14336), ("gemma2-9b lm_head", 256000, 3584),
    ("gemma2-27b qkv", 8192, 4608), ("gemma2-27b o", 4608, 4096), ("gemma2-27b gate_up", 73728, 4608),
    ("gemma2-27b down", 4608, 36864),
    ("llama3.1-405b qkv", 18432, 16384), ("llama3.1-405b o", 16384, 16384), ("llama3.1-405b up", 53248, 16384),
    ("llama3.1-405b down", 16384, 53248),
    ("phi4 qkv", 7680, 5120), ("phi4 o", 5120, 5120), ("phi4 gate_up", 35840, 5120), ("phi4 down", 5120, 17920),
    ("gpt-oss-120b qkv", 5120, 2880), ("gpt-oss-120b o", 2880, 4096), ("gpt-oss-120b expert gate_up", 5760, 2880),
    ("gpt-oss-120b expert down", 2880, 2880), ("gpt-oss-120b router", 128, 2880),
    ("llama2-7b lm_head, 32001 tokens", 32001, 4096),
]


def random_text() -> str:
    lines = ["m,n,k",
             f"# Broad development list (issue 17): {RANDOM_COUNT} shapes from gemmperf.shapegen.random_shapes,",
             f"# seed {RANDOM_SEED}: M log-uniform 1..16384, N and K 16..32768, rounded to multiples of 64 or 8,",
             "# kept as drawn or moved to the next prime. Written by benchmarks/make_testlists.py."]
    lines += [f"{s.m},{s.n},{s.k}" for s in random_shapes(RANDOM_SEED, RANDOM_COUNT)]
    return "\n".join(lines) + "\n"


def sealed_text() -> str:
    lines = ["m,n,k",
             "# Sealed held-out list (issue 17), generated 2026-11-24 before any model work of issue 17:",
             "# never fitted, never looked at while deciding; scored once, at the end.",
             f"# {SEALED_RANDOM} shapes of gemmperf.shapegen.random_shapes, seed {SEALED_SEED}, then {SEALED_MODELS}",
             f"# of model_shapes, seed {SEALED_SEED + 1}, over models no other testlist holds.",
             "# Written by benchmarks/make_testlists.py."]
    lines += [f"{s.m},{s.n},{s.k}" for s in random_shapes(SEALED_SEED, SEALED_RANDOM)]
    for name, s in model_shapes(SEALED_SEED + 1, SEALED_MODELS, UNSEEN_PROJECTIONS):
        lines += [f"# {name}", f"{s.m},{s.n},{s.k}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "testlists"))
    p.add_argument("--check", action="store_true", help="compare with the files instead of writing them")
    args = p.parse_args(argv)
    differ = 0
    for name, text in (("random.csv", random_text()), ("sealed.csv", sealed_text())):
        path = Path(args.out) / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                print(f"{path}: differs from what seed and generator give", file=sys.stderr)
                differ = 1
        else:
            path.write_text(text)
            shapes = [line for line in text.splitlines()[1:] if not line.startswith("#")]
            print(f"{path}: {len(shapes)} shapes")
    return differ


if __name__ == "__main__":
    sys.exit(main())
