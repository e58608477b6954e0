"""Run two programs on the same random data and compare: the check behind every schedule and
lowering test ("does the transformed program still compute the same thing?").

    f = te.create_prim_func([A, B, C])
    sch = tir.Schedule(f); ...                       # transform
    assert_same_result(f, sch.mod, sizes={"n": 37})   # raises with the largest difference
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mlc.testing.interpreter import InterpreterError, eval_prim_func
from mlc.tir import dtype as dt
from mlc.tir.arith import evaluate_int
from mlc.tir.expr import Var
from mlc.tir.stmt import PrimFunc


def random_arrays(
    func: PrimFunc, sizes: Mapping[str, int | float] | None = None, seed: int = 0
) -> list[Any]:
    """One random array per parameter of ``func`` (floats in [-1, 1), small integers,
    random bools), in the order of the call. Symbolic sizes come from ``sizes``, by name;
    so do the values of scalar parameters (random where ``sizes`` leaves one out)."""
    rng = np.random.default_rng(seed)
    env: dict[Var, int] = {}
    by_name = dict(sizes or {})
    scalars: dict[int, Any] = {}
    for position, v in func.scalars:
        if v.name in by_name:
            value: Any = by_name[v.name]
        elif dt.is_float(v.dtype):
            value = float(rng.uniform(-1, 1))
        elif dt.is_bool(v.dtype):
            value = bool(rng.integers(0, 2))
        else:
            value = int(rng.integers(0, 8))
        scalars[position] = value
        by_name.setdefault(v.name, value)
    for v in func.size_vars:
        if v.name not in by_name:
            raise InterpreterError(
                f"{func.name} has the symbolic size {v.name!r}: pass sizes={{'{v.name}': ...}}"
            )
        env[v] = int(by_name[v.name])
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
    for position in sorted(scalars):
        out.insert(position, scalars[position])
    return out


def assert_same_result(
    expected: PrimFunc,
    actual: PrimFunc,
    sizes: Mapping[str, int | float] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    seed: int = 0,
) -> None:
    """Run both functions with the interpreter on the same random arguments and check every
    argument array afterwards (outputs are written in place)."""
    args = random_arrays(expected, sizes, seed)
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    eval_prim_func(expected, *want)
    eval_prim_func(actual, *got)
    buffers = [k for k, a in enumerate(expected.arguments) if not isinstance(a, Var)]
    for b, k in zip(expected.params, buffers):
        w, g = want[k], got[k]
        np.testing.assert_allclose(
            g, w, rtol=rtol, atol=atol, err_msg=f"buffer {b.name!r} differs"
        )
