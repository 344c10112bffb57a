"""Command line: ``gemmperf <command> ...`` (also ``python -m gemmperf``).

Every command lives in one module of gemmperf.app (COMMANDS), which registers its
parser with ``add_parsers``; the workflow's rules call these same commands.
User errors print one line and exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from .. import __version__
from ..errors import UserError

# command -> (module of gemmperf.app that runs it, one line of help). The module is the
# command's entry point: its imports make the stage's code hash (stagehash).
COMMANDS = {
    "gpus": ("hardware", "list the GPU catalog and the probed local GPU"),
    "hardware": ("hardware", "write the descriptor of the local GPU (or a catalog or shipped one)"),
    "predict": ("predict", "predict kernel time: one configuration, a CSV of them, or a testlist"),
    "simulate": ("predict", "the ws-stage event timeline (Gantt bars) of one configuration"),
    "microbench": ("microbench", "T_INIT, T_EPILOGUE, load/math throughput and latency, DRAM and L2 bandwidth"),
    "collect": ("collect", "measure a testlist's configurations on the local GPU (appends, resumes)"),
    "merge": ("merge", "merge collect shards into one measurement CSV"),
    "fit": ("fit", "fit model parameters and the residual correction (one fit)"),
    "accuracy": ("fit", "out-of-sample accuracy: grouped CV by shape + held-out testlist"),
    "transfer": ("transfer", "one GPU's fit carried onto another GPU, scored on the other's measurements"),
    "optimize": ("optimize", "the best configuration of a shape in one line (Z3), or a testlist's tilings"),
    "answer-band": ("answerband", "how long the optimizer's answers ran against their prediction, on fresh shapes"),
    "report": ("report", "one GPU's report: linked offline HTML pages and PNGs of the key charts"),
    "index": ("report", "results/index.html: every GPU's report, linked"),
    "gpu-slot": ("gpuslot", "run a command on one free GPU of this node (sets CUDA_VISIBLE_DEVICES)"),
}


EPILOG = """examples:
  gemmperf gpus
  gemmperf optimize --gpu h100-sxm5-80gb --shape 4096x4096x4096
  gemmperf predict --gpu h100-sxm5-80gb --shape 4096x4096x4096 --tile 128x256x64 --explain
  gemmperf simulate --gpu h100-sxm5-80gb --shape 256x256x1024 --stages 3
  gemmperf <command> -h     what a command does, its options and examples

Parameters: results/<gpu>/params.json (written by `gemmperf fit`, or the workflow) when it
exists in the current folder, else the GPU descriptor's defaults; every answer says which.
User errors print one line and exit with status 2.
"""


class _Wide(argparse.RawDescriptionHelpFormatter):
    """Help with each command on one line: wide, and the help column after the longest
    command name (argparse does not measure the names of subcommands)."""

    def __init__(self, prog):
        super().__init__(prog, width=120, max_help_position=24)
        self._action_max_length = 4 + max(map(len, COMMANDS))


class Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (exit 2, as every user error), the
    usage itself left to ``-h``."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} -h)\n")


def entry_module(command: str) -> str:
    """The dotted name of the module that runs ``command``."""
    return f"{__package__}.{COMMANDS[command][0]}"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``command``'s module registers its full parser, every other command
    is listed by name and help only. Only the module of the command that runs is
    imported: the commands' imports (scikit-learn, altair, z3, cuda-python) take up
    to seconds, which ``gemmperf gpus`` should not wait for."""
    parser = Parser(prog="gemmperf", description="gemmperf: predict, explain and optimize "
                                     "GEMM kernel time on NVIDIA GPUs.", epilog=EPILOG,
                                     formatter_class=_Wide)
    parser.add_argument("--version", action="version", version=f"gemmperf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="<command>",
                                title="commands")
    loaded = set()
    if command in COMMANDS:
        module = importlib.import_module(entry_module(command))
        module.add_parsers(sub)
        loaded = {name for name, (mod, _) in COMMANDS.items() if mod == COMMANDS[command][0]}
    for name, (_, text) in COMMANDS.items():
        if name not in loaded:
            sub.add_parser(name, help=text)
    return parser


# options naming a file or a folder that a command writes: checked before any work, so a
# long fit or sweep never ends on an unwritable path (a missing folder is created)
OUTPUT_FILES = ("out", "output", "correction_out", "table", "predictions", "journal")
OUTPUT_DIRS = ("out_dir", "images_dir")


def check_outputs(args: argparse.Namespace) -> None:
    """Raise UserError for an output file that is a folder (or an output folder that is
    a file), or whose folder cannot be created."""
    wanted = [(d, False) for d in OUTPUT_FILES] + [(d, True) for d in OUTPUT_DIRS]
    for dest, is_dir in wanted:
        value = getattr(args, dest, None)
        if not isinstance(value, str) or not value:
            continue
        path = Path(value)
        flag = "--" + dest.replace("_", "-")
        if not is_dir and (path.is_dir() or value.endswith(("/", os.sep))):
            raise UserError(f"{flag} {value}: is a folder; give a file name")
        if is_dir and path.exists() and not path.is_dir():
            raise UserError(f"{flag} {value}: is a file; give a folder")
        try:
            (path if is_dir else path.parent).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UserError(f"{flag} {value}: cannot create its folder ({err.strerror})") from None


def _command(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command(argv)).parse_args(argv)
    try:
        check_outputs(args)
        return args.func(args)
    except UserError as err:
        print(f"gemmperf {args.command}: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
