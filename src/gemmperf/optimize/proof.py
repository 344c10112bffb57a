"""The closed form of ws-stage's stage recurrence, proved by Z3 for every S and B: the
encoding (encode.py) and the exact reference (exact.py) rely on it."""

from __future__ import annotations

import z3


def _z3max(a, b):
    return z3.If(a >= b, a, b)


def prove_closed_form() -> dict:
    """Prove with Z3 that the ws-stage closed form equals the stage recurrence, all S, B.

    Strong induction on the stage index i. Invariant Inv(j): Sm(j) = L + (j-1)P,
    D(j) := Sb(j) + T_LOAD_B <= Sm(j), with equality when L >= T_MATH and B >= 2, and
    the running wait Q(j) = sum_{i<=j} Wait(i) = L + (j-1)(P - T_MATH).
    Base: Inv(1) from Sa(1) = 0. Step: for symbolic real T_LOAD_A, T_LOAD_B, T_MATH >= 0
    and u = (i-2)P >= 0, t = (i-2)T_MATH, the recurrence's step from Inv(i-1) (and
    Inv(i-B), where Sm(i-B) = L + u - w with w = (B-1)P; B = 1: w = 0; B >= 2: any
    w >= P, covering every B >= 2 at once; or Sm(i-B) absent when i <= B) implies
    Inv(i). All linear real arithmetic: Z3 proves validity by refuting the negation.
    Returns {case: "proved"}; raises AssertionError with a counterexample otherwise.
    """
    la, lb, tm, u, t, w = z3.Reals("la lb tm u t w")
    L = la + lb
    results = {}

    def P_of(deep):
        return _z3max(L, tm) if deep else L + tm

    def check(name, hyp, goal):
        s = z3.Solver()
        s.add(hyp, z3.Not(goal))
        r = s.check()
        if r != z3.unsat:
            raise AssertionError(f"closed form: {name} not proved ({r}): {s.model() if r == z3.sat else ''}")
        results[name] = "proved"

    pos = z3.And(la >= 0, lb >= 0, tm >= 0)
    for deep in (False, True):
        P = P_of(deep)
        # base case i = 1
        sa1 = z3.RealVal(0)
        sb1 = sa1 + la  # Sm(1-B) absent
        sm1 = sb1 + lb
        d1 = sb1 + lb
        q1 = sb1 + lb
        inv1 = z3.And(sm1 == L, d1 <= sm1, z3.Implies(z3.And(L >= tm, deep), d1 == sm1), q1 == L)
        check(f"base B{'>=2' if deep else '=1'}", pos, inv1)
        # step i >= 2 from Inv(i-1)
        for absent in ((False, True) if deep else (False,)):
            sm_prev = L + u
            sb_prev, q_prev = z3.Reals("sb_prev q_prev")
            d_prev = sb_prev + lb
            hyp = [pos, u >= 0, t >= 0, d_prev <= sm_prev, q_prev == L + u - t]
            # u = (i-2)P and t = (i-2)Tm with the same i-2 >= 0
            hyp.append(z3.Implies(tm == 0, t == 0))
            if deep:
                hyp.append(z3.Implies(L >= tm, d_prev == sm_prev))
            if absent:
                free = None
            else:
                if deep:
                    hyp += [w >= P, u >= w - P]  # i - B >= 1
                else:
                    hyp.append(w == 0)
                free = L + u - w + tm  # Sm(i-B) + T_MATH
            a = sb_prev + lb if free is None else _z3max(sb_prev + lb, free)
            bb = a + la if free is None else _z3max(a + la, free)
            sm = _z3max(sm_prev + tm, bb + lb)
            d = bb + lb
            q = q_prev + sm - (sm_prev + tm)
            goal = z3.And(sm == L + u + P, d <= sm, q == L + (u + P) - (t + tm))
            if deep:
                goal = z3.And(goal, z3.Implies(L >= tm, d == sm))
            check(f"step B{'>=2' if deep else '=1'}{' i<=B' if absent else ''}", z3.And(hyp), goal)
    return results
