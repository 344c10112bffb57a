"""Best tilings: the Z3-optimal configuration of a shape under a model, and the
testlist tables built from it.

Modules, by job:

- ``space``: the models the optimizer supports (``MODELS``, ``DEFAULT_MODEL``), the
  configuration space of a family, exact constants, tile classes and the tie-break rank;
- ``evaluate``: the models' own float evaluate() over configurations of one shape;
- ``exact``: ws-stage and ws-persistent in exact rationals, per tile class;
- ``pipelined``: ws-pipelined's per-shape table, read off its evaluate() (a testlist's
  tables from one call: ``pipelined_tables``);
- ``encode``: the SMT-LIB encoding of one shape (of every configuration, or of those
  ``prune`` keeps);
- ``prune``: the configurations a closed-form bound rules out before Z3 sees them, and
  the exhaustive choice among the rest that Z3 is asked to certify (soundness argued there);
- ``solver``: lexicographic minimization, decoding, runner-up, ``solve`` and ``Solution``;
- ``exhaustive``: the exhaustive references (exact and float) Z3 is tested against;
- ``proof``: the Z3 proof of ws-stage's closed form;
- ``tilings``: the tilings table of a testlist, with measured regret and a progress bar;
- ``shortlist``: a shape's answer and the model's next best configurations, to time.
"""

from .exhaustive import exhaustive_exact, exhaustive_float
from .proof import prove_closed_form
from .shortlist import shortlist
from .solver import RunnerUp, Solution, solve
from .space import DEFAULT_MODEL, FIELDS, MODELS, family_space

__all__ = ["DEFAULT_MODEL", "FIELDS", "MODELS", "RunnerUp", "Solution", "exhaustive_exact", "exhaustive_float",
           "family_space", "prove_closed_form", "shortlist", "solve"]
