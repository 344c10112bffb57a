"""Best tilings: the Z3-optimal configuration of a shape under a model, and the
testlist tables built from it.

Modules, by job:

- ``space``: the models the optimizer supports (``MODELS``, ``DEFAULT_MODEL``), the
  configuration space of a family, exact constants, tile classes and the tie-break rank;
- ``evaluate``: the models' own float evaluate() over configurations of one shape;
- ``exact``: ws-stage and ws-persistent in exact rationals, per tile class;
- ``pipelined``: ws-pipelined's per-shape table, read off its evaluate();
- ``encode``: the SMT-LIB encoding of one shape;
- ``solver``: lexicographic minimization, decoding, runner-up, ``solve`` and ``Solution``;
- ``exhaustive``: the exhaustive references (exact and float) Z3 is tested against;
- ``proof``: the Z3 proof of ws-stage's closed form;
- ``tilings``: the tilings table of a testlist, with measured regret.
"""

from .exhaustive import exhaustive_exact, exhaustive_float
from .proof import prove_closed_form
from .solver import RunnerUp, Solution, solve
from .space import DEFAULT_MODEL, FIELDS, MODELS, family_space

__all__ = ["DEFAULT_MODEL", "FIELDS", "MODELS", "RunnerUp", "Solution", "exhaustive_exact", "exhaustive_float",
           "family_space", "prove_closed_form", "solve"]
