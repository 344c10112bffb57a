"""Transitional: the names ``optimize/cli.py`` still reads from here (``solve``). The
optimizer lives in the modules listed in ``gemmperf.optimize``; delete this module once
the command line calls ``gemmperf.optimize.solve`` (issue 13, helper "app")."""

from .solver import solve
from .space import MODELS

__all__ = ["MODELS", "solve"]
