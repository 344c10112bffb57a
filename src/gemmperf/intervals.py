"""How far measured times fall from predicted ones, as a band: the median of the ratios
measured / predicted and a split-conformal interval around it.

For n ratios and a level 1 - a, the interval runs from the floor((n + 1) a / 2)-th to the
ceil((n + 1) (1 - a / 2))-th smallest ratio. Where the next ratio is exchangeable with
those n (drawn as they were: the same kind of prediction, of the same kind of kernel), it
falls inside with probability at least the level, whatever their distribution. The
optimizer's answer band (optimize.band) and the leave-one-testlist-out band of a single
prediction (fit.protocol.bands) are both this.
"""

from __future__ import annotations

import math

import numpy as np

LEVEL = 0.9  # a band's coverage: 90% of ratios inside it


BAND_KEYS = ("n", "median", "low", "high", "level")


def is_band(band) -> bool:
    """Whether ``band`` (read back from a file) is what ``conformal_band`` writes: a dict
    with a positive number for each of BAND_KEYS."""
    return isinstance(band, dict) and all(isinstance(band.get(k), (int, float)) and band[k] > 0 for k in BAND_KEYS)


def conformal_band(ratios, level: float = LEVEL) -> dict | None:
    """Measured / predicted ``ratios`` -> {"n", "median", "low", "high", "level"}; None
    where there are too few for an interval at ``level`` (n + 1 < 2 / (1 - level): 19
    ratios at 90%). What is not a positive finite number is not counted."""
    r = np.sort(np.asarray([x for x in ratios if x is not None and math.isfinite(x) and x > 0], dtype=float))
    n = len(r)
    eps = 1e-9  # (n + 1) x 0.05 is 0.9999... in floating point where it is 1
    lo, hi = math.floor((n + 1) * (1 - level) / 2 + eps), math.ceil((n + 1) * (1 + level) / 2 - eps)
    if n == 0 or lo < 1 or hi > n:
        return None
    return {"n": n, "median": float(np.median(r)), "low": float(r[lo - 1]), "high": float(r[hi - 1]), "level": level}
