"""Write the three generated testlists, each from its recorded seed (issue 17).

testlists/random.csv: the broad development list. 240 shapes, M log-uniform in
    1..16384, N and K in 16..32768, each size rounded to a multiple of 64 or of 8, kept
    as drawn or moved to the next prime (gemmperf.shapegen.ROUNDINGS).
testlists/sealed.csv: the first held-out list, generated before any model work of issue 17
    and scored once, at the end. 64 shapes from the same generator (another seed) and 32
    projections of models no other testlist holds (Gemma-2 9B/27B, Llama-3.1 405B,
    Phi-4, gpt-oss-120b, a 32001-token vocabulary), M log-uniform in 1..8192. Scored once
    on each GPU (H100 2026-11-25, H200 2026-12-05) and development data since.
testlists/holdout.csv: the second held-out list, generated 2026-12-05 when both GPUs had
    scored the first: 40 shapes from the same generator (a third seed) and 24 projections
    of models no other testlist holds (Mistral-Large-2, Yi-34B, Qwen2.5-32B, Qwen3-30B-A3B,
    Falcon-40B, Command-R, GPT-2, ViT-H/14), M log-uniform in 1..8192. No shape of another
    testlist. Measured, never read by a fit or a decision; scored once, at the end.

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
HOLDOUT_SEED, HOLDOUT_RANDOM, HOLDOUT_MODELS = 51217, 40, 24

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
# the same for the second held-out list: models neither the testlists nor UNSEEN_PROJECTIONS hold
HOLDOUT_PROJECTIONS = [
    ("mistral-large-2 qkv", 14336, 12288), ("mistral-large-2 o", 12288, 12288),
    ("mistral-large-2 gate_up", 57344, 12288), ("mistral-large-2 down", 12288, 28672),
    ("yi-34b qkv", 9216, 7168), ("yi-34b gate_up", 40960, 7168), ("yi-34b down", 7168, 20480),
    ("qwen2.5-32b qkv", 7168, 5120), ("qwen2.5-32b gate_up", 55296, 5120), ("qwen2.5-32b down", 5120, 27648),
    ("qwen3-30b-a3b qkv", 5120, 2048), ("qwen3-30b-a3b o", 2048, 4096),
    ("qwen3-30b-a3b expert gate_up", 1536, 2048), ("qwen3-30b-a3b expert down", 2048, 768),
    ("falcon-40b qkv", 9216, 8192), ("falcon-40b up", 32768, 8192), ("falcon-40b down", 8192, 32768),
    ("command-r qkv", 24576, 8192), ("command-r gate_up", 45056, 8192), ("command-r down", 8192, 22528),
    ("gpt2 qkv", 2304, 768), ("gpt2 fc", 3072, 768), ("gpt2 proj", 768, 3072),
    ("gpt2 lm_head, 50257 tokens", 50257, 768),
    ("vit-h14 qkv", 3840, 1280), ("vit-h14 fc1", 5120, 1280), ("vit-h14 fc2", 1280, 5120),
]


def random_text() -> str:
    lines = ["m,n,k",
             f"# Broad development list (issue 17): {RANDOM_COUNT} shapes from gemmperf.shapegen.random_shapes,",
             f"# seed {RANDOM_SEED}: M log-uniform 1..16384, N and K 16..32768, rounded to multiples of 64 or 8,",
             "# kept as drawn or moved to the next prime. Written by benchmarks/make_testlists.py."]
    lines += [f"{s.m},{s.n},{s.k}" for s in random_shapes(RANDOM_SEED, RANDOM_COUNT)]
    return "\n".join(lines) + "\n"


def held_out_rows(seed: int, drawn: int, models: int, projections: list[tuple[str, int, int]]) -> list[str]:
    """A held-out list's rows: ``drawn`` shapes of random_shapes (``seed``), then ``models``
    of model_shapes (``seed + 1``) over ``projections``, each after a comment naming it."""
    lines = [f"{s.m},{s.n},{s.k}" for s in random_shapes(seed, drawn)]
    for name, s in model_shapes(seed + 1, models, projections):
        lines += [f"# {name}", f"{s.m},{s.n},{s.k}"]
    return lines


def sealed_text() -> str:
    lines = ["m,n,k",
             "# Sealed held-out list (issue 17), generated 2026-11-24 before any model work of issue 17 and",
             "# scored once on each GPU (H100 2026-11-25, H200 2026-12-05): a development list since.",
             f"# {SEALED_RANDOM} shapes of gemmperf.shapegen.random_shapes, seed {SEALED_SEED}, then {SEALED_MODELS}",
             f"# of model_shapes, seed {SEALED_SEED + 1}, over models no other testlist holds.",
             "# Written by benchmarks/make_testlists.py."]
    lines += held_out_rows(SEALED_SEED, SEALED_RANDOM, SEALED_MODELS, UNSEEN_PROJECTIONS)
    return "\n".join(lines) + "\n"


def holdout_text() -> str:
    lines = ["m,n,k",
             "# Second sealed held-out list (issue 17), generated 2026-12-05 after both GPUs had scored the",
             "# first (sealed.csv, development data since): never fitted, never looked at while deciding;",
             f"# scored once, at the end. {HOLDOUT_RANDOM} shapes of gemmperf.shapegen.random_shapes, seed",
             f"# {HOLDOUT_SEED}, then {HOLDOUT_MODELS} of model_shapes, seed {HOLDOUT_SEED + 1}, over models no other testlist holds.",
             "# Written by benchmarks/make_testlists.py."]
    lines += held_out_rows(HOLDOUT_SEED, HOLDOUT_RANDOM, HOLDOUT_MODELS, HOLDOUT_PROJECTIONS)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "testlists"))
    p.add_argument("--check", action="store_true", help="compare with the files instead of writing them")
    args = p.parse_args(argv)
    differ = 0
    for name, text in (("random.csv", random_text()), ("sealed.csv", sealed_text()), ("holdout.csv", holdout_text())):
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
