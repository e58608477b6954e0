"""mlc.build / mlc.lower: every kind of input, names and targets, end to end with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import MLCTypeError
from mlc.target.target import Target, TargetError, parse_target
from mlc.tir import Block, BlockRealize, PrimFunc

RNG = np.random.default_rng(3)


def _matmul(n: int = 64):
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return X, W, Y


def _check_matmul(f: mlc.runtime.Module, n: int = 64) -> None:
    x = RNG.random((n, n), dtype=np.float32)
    w = RNG.random((n, n), dtype=np.float32)
    y = np.empty((n, n), np.float32)
    f(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4)


def test_build_a_list_of_tensors_with_symbolic_size() -> None:
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: te.exp(A[i]) + B[i], name="C")
    f = mlc.build([A, B, C], name="expadd")
    assert f.entry_name == "expadd"
    a, b = RNG.random(33, dtype=np.float32), RNG.random(33, dtype=np.float32)
    c = np.empty(33, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, np.exp(a) + b, rtol=1e-6)


def test_build_the_tutorial_te_schedule() -> None:
    """The DESIGN example: tile, split, reorder, vectorize, parallel, unroll."""
    X, W, Y = _matmul()
    s = te.create_schedule(Y.op)
    i, j = Y.op.axis
    yo, xo, yi, xi = s[Y].tile(i, j, 16, 16)
    ko, ki = s[Y].split(Y.op.reduce_axis[0], factor=4)
    s[Y].reorder(yo, xo, ko, yi, ki, xi)
    s[Y].vectorize(xi)
    s[Y].parallel(yo)
    s[Y].unroll(ki)
    f = mlc.build(s, [X, W, Y], target="llvm", name="matmul")
    _check_matmul(f)
    assert "fma" in f.get_source("asm") or "fmadd" in f.get_source("asm")
    lowered = mlc.lower(s, [X, W, Y])
    assert isinstance(lowered, PrimFunc)
    assert "parallel" in str(lowered)


def test_build_a_tir_schedule_and_its_mod() -> None:
    X, W, Y = _matmul(32)
    sch = tir.Schedule(te.create_prim_func([X, W, Y]))
    _check_matmul(mlc.build(sch), 32)
    _check_matmul(mlc.build(sch.mod, target={"kind": "llvm"}), 32)


def test_lower_removes_blocks() -> None:
    X, W, Y = _matmul(8)
    lowered = mlc.lower([X, W, Y], name="mm")
    assert lowered.name == "mm"
    found: list[object] = []
    tir.post_order_visit(lowered.body, lambda node: found.append(node)
                         if isinstance(node, (Block, BlockRealize)) else None)
    assert found == []


def test_target_strings() -> None:
    assert parse_target("llvm -mcpu=skylake") == Target("llvm", "skylake", None)
    assert parse_target({"kind": "llvm", "mcpu": "haswell"}) == Target("llvm", "haswell")
    assert parse_target(None) == Target() == parse_target("llvm -mcpu=native")
    assert str(Target("llvm", "skylake", "+avx2")) == "llvm -mcpu=skylake -mattr=+avx2"
    with pytest.raises(TargetError, match="unknown target kind 'cuda-ish'"):
        parse_target("cuda-ish")
    with pytest.raises(TargetError, match="unknown target option\\(s\\) mcu"):
        parse_target("llvm -mcu=skylake")
    with pytest.raises(TargetError, match="cannot read 'skylake'"):
        parse_target("llvm skylake")


def test_build_for_an_older_cpu_runs_here() -> None:
    X, W, Y = _matmul(16)
    f = mlc.build([X, W, Y], target="llvm -mcpu=x86-64")
    _check_matmul(f, 16)
    assert "zmm" not in f.get_source("asm")  # no AVX-512 for a baseline x86-64


def test_wrong_inputs_to_build() -> None:
    X, W, Y = _matmul(8)
    s = te.create_schedule(Y.op)
    with pytest.raises(MLCTypeError, match=r"mlc.build\(s, \[A, B, C\]\)"):
        mlc.build(s)
    with pytest.raises(MLCTypeError, match="got int"):
        mlc.build(42)
