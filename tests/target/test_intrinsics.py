"""Every row of the intrinsic table (mlc/tir/intrin.py) means the same on every back end:
compiled with LLVM, printed as C and CUDA, run in the interpreter and in numpy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc.errors import CodegenError
from mlc.target.c.codegen import codegen_c
from mlc.testing import eval_prim_func
from mlc.tir import Buffer, BufferStore, Call, For, ForKind, PrimFunc, Var, const, intrin

N = 8
MATH = [n for n in intrin.names() if intrin.INTRINSICS[n].llvm not in ("codegen", "dot")]
# the "dot" rows (dp4a...) take vectors of bytes: tests/topi/test_int8.py


def _func(op: str, dtype: str = "float32") -> PrimFunc:
    """``Y[i] = op(X0[i], X1[i]...)`` for ``i < N``."""
    ins = [Buffer(f"X{k}", (const(N, "int32"),), dtype) for k in range(intrin.INTRINSICS[op].arity)]
    out = Buffer("Y", (const(N, "int32"),), dtype)
    i = Var("i", "int32")
    body = BufferStore(out, Call(dtype, op, tuple(b[i] for b in ins)), (i,))
    loop = For(i, const(0, "int32"), const(N, "int32"), ForKind.SERIAL, body)
    return PrimFunc((*ins, out), loop, f"f_{op}")


def _inputs(op: str, dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(len(op))
    arity = intrin.INTRINSICS[op].arity
    # in (0.1, 0.9): inside the domain of every function (log, sqrt, atan...)
    return [(0.1 + 0.8 * rng.random(N)).astype(dtype) for _ in range(arity)]


@pytest.mark.parametrize("op", MATH)
def test_llvm_interpreter_and_numpy_agree(op: str) -> None:
    row = intrin.INTRINSICS[op]
    func = _func(op, "float32")
    xs = _inputs(op, "float32")
    want = np.asarray(row.numpy(*[x.astype("float64") for x in xs]), "float32")
    built, interpreted = np.zeros(N, "float32"), np.zeros(N, "float32")
    mlc.build(func, target="llvm")(*xs, built)
    eval_prim_func(func, *xs, interpreted)
    np.testing.assert_allclose(built, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(interpreted, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", MATH)
def test_c_and_cuda_print_the_tables_form(op: str) -> None:
    row = intrin.INTRINSICS[op]
    args = [f"X{k}[i]" for k in range(row.arity)]
    c_source = mlc.build(_func(op, "float32"), target="c").get_source()
    assert row.source("c", args, "float32") in c_source
    assert row.source("cuda", args, "float64") == row.source("c", args, "float64")


def test_an_unknown_function_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    func = _func("exp")
    monkeypatch.delitem(intrin.INTRINSICS, "exp")
    with pytest.raises(CodegenError, match="the C backend does not know the function 'exp'"):
        codegen_c(mlc.lower(func))
    with pytest.raises(CodegenError, match="unknown function 'exp' in a Call; the LLVM backend "
                       "knows abs, atan, ceil, cos, erf, exp2,"):
        mlc.build(func, target="llvm")
