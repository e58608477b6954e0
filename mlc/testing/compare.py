"""Run two programs on the same random data and compare: the check behind every schedule and
lowering test ("does the transformed program still compute the same thing?").

    f = te.create_prim_func([A, B, C])
    sch = tir.Schedule(f); ...                       # transform
    assert_same_result(f, sch.mod, sizes={"n": 37})   # raises with the largest difference
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mlc.testing.interpreter import InterpreterError, eval_prim_func
from mlc.tir import dtype as dt
from mlc.tir.arith import evaluate_int
from mlc.tir.expr import Var
from mlc.tir.stmt import PrimFunc


def random_arrays(
    func: PrimFunc, sizes: Mapping[str, int] | None = None, seed: int = 0
) -> list[np.ndarray]:
    """One random array per parameter of ``func`` (floats in [-1, 1), small integers,
    random bools). Symbolic sizes come from ``sizes``, by name."""
    rng = np.random.default_rng(seed)
    env: dict[Var, int] = {}
    by_name = dict(sizes or {})
    for v in func.size_vars:
        if v.name not in by_name:
            raise InterpreterError(
                f"{func.name} has the symbolic size {v.name!r}: pass sizes={{'{v.name}': ...}}"
            )
        env[v] = by_name[v.name]
    out = []
    for b in func.params:
        shape = tuple(int(evaluate_int(s, env)) for s in b.shape)
        dtype = dt.element(b.dtype)
        if dt.is_float(dtype):
            arr = rng.uniform(-1, 1, shape).astype(dtype)
        elif dt.is_bool(dtype):
            arr = rng.integers(0, 2, shape).astype(bool)
        else:
            arr = rng.integers(0, 8, shape).astype(dtype)
        out.append(arr)
    return out


def assert_same_result(
    expected: PrimFunc,
    actual: PrimFunc,
    sizes: Mapping[str, int] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    seed: int = 0,
) -> None:
    """Run both functions with the interpreter on the same random arguments and check every
    argument array afterwards (outputs are written in place)."""
    args = random_arrays(expected, sizes, seed)
    want = [a.copy() for a in args]
    got = [a.copy() for a in args]
    eval_prim_func(expected, *want)
    eval_prim_func(actual, *got)
    for b, w, g in zip(expected.params, want, got):
        np.testing.assert_allclose(
            g, w, rtol=rtol, atol=atol, err_msg=f"buffer {b.name!r} differs"
        )
