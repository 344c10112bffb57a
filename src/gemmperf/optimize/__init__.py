"""Best tilings: exhaustive search over predictions (and Z3, see optimize.z3)."""
