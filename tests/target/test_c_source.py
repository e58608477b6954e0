"""The C backend: readable source that, compiled with gcc, computes what numpy computes."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from llvm_helpers import loop

import mlc
from mlc import te
from mlc.target.c.codegen import codegen_c
from mlc.tir import (
    Allocate,
    Broadcast,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    PrimFunc,
    Ramp,
    Select,
    SizeVar,
    Var,
    const,
    seq,
)

RNG = np.random.default_rng(4)
GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed")


def _compile(source: str, name: str, tmp_path: Path) -> ctypes.CDLL:
    src = tmp_path / f"{name}.c"
    lib = tmp_path / f"lib{name}.so"
    src.write_text(source)
    subprocess.run(
        [GCC or "gcc", "-O2", "-fopenmp", "-shared", "-fPIC", "-std=c11", "-Werror=implicit",
         "-o", str(lib), str(src), "-lm"],
        check=True, capture_output=True, text=True,
    )
    return ctypes.CDLL(str(lib))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def test_build_for_c_shows_the_source() -> None:
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.sigmoid(A[i]) * 2.0, name="B")
    f = mlc.build([A, B], target="c", name="sig2")
    src = f.get_source()
    assert src == f.get_source("c")
    assert "void sig2(float* restrict A, float* restrict B, int64_t n)" in src
    assert "expf(" in src
    a = RNG.random(10, dtype=np.float32)
    b = np.empty_like(a)
    f(a, b)  # the module runs (with the LLVM machine code)
    np.testing.assert_allclose(b, 2 / (1 + np.exp(-a)), rtol=1e-6)


@needs_gcc
def test_te_schedule_in_c_compiles_and_matches_numpy(tmp_path: Path) -> None:
    N = 32
    X = te.placeholder((N, N), name="X")
    W = te.placeholder((N, N), name="W")
    k = te.reduce_axis((0, N), name="k")
    Y = te.compute((N, N), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    s = te.create_schedule(Y.op)
    i, j = Y.op.axis
    yo, xo, yi, xi = s[Y].tile(i, j, 8, 8)
    s[Y].reorder(yo, xo, Y.op.reduce_axis[0], yi, xi)
    s[Y].vectorize(xi)
    s[Y].parallel(yo)
    src = mlc.build(s, [X, W, Y], target="c", name="mm").get_source()
    assert "#pragma omp parallel for" in src
    lib = _compile(src, "mm", tmp_path)
    x = RNG.random((N, N), dtype=np.float32)
    w = RNG.random((N, N), dtype=np.float32)
    y = np.empty((N, N), np.float32)
    lib.mm(_ptr(x), _ptr(w), _ptr(y))
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)


@needs_gcc
def test_hand_written_kernel_in_c(tmp_path: Path) -> None:
    """Floor division, a lazy select, a gather, a local array and a symbolic size."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), "int32")
    B = Buffer("B", (n,), "int32")
    G = Buffer("G", (8,), "int32")
    acc = Buffer("acc", (1,), "int32")
    i, j = Var("i", "int32"), Var("j", "int32")
    body = seq(
        loop(i, n, BufferStore(B, Select(i + 1 < n, A[i + 1] // const(-3), A[i] % const(4)),
                               (i,))),
        BufferStore(G, BufferLoad(A, (Ramp(const(0), const(2), 8),)) + Broadcast(const(1), 8),
                    (Ramp(const(0), const(1), 8),)),
        Allocate(acc, seq(
            BufferStore(acc, const(0), (const(0),)),
            loop(j, n, BufferStore(acc, acc[0] + A[j], (const(0),))),
            BufferStore(G, acc[0], (const(0),)),
        )),
    )
    func = PrimFunc((A, B, G), body, "mix")
    src = codegen_c(func)
    assert "mlc_floordiv" in src and "int32_t acc[1]" in src
    lib = _compile(src, "mix", tmp_path)
    a = np.arange(-10, 10, dtype=np.int32)
    b = np.empty_like(a)
    g = np.empty(8, np.int32)
    lib.mix(_ptr(a), _ptr(b), _ptr(g), ctypes.c_int64(len(a)))
    np.testing.assert_array_equal(b[:-1], a[1:] // -3)
    assert b[-1] == a[-1] % 4
    np.testing.assert_array_equal(g[1:], a[0:16:2][1:] + 1)
    assert g[0] == a.sum()


def test_c_source_prints_math_and_constants() -> None:
    A = Buffer("A", (4,), "float64")
    i = Var("i", "int32")
    value = Call("float64", "tanh", (A[i],)) + Call("float64", "rsqrt", (A[i],)) + float("inf")
    src = codegen_c(PrimFunc((A,), loop(i, 4, BufferStore(A, value, (i,))), "m"))
    assert "tanh(A[i])" in src and "(1.0 / sqrt(A[i]))" in src and "INFINITY" in src


@needs_gcc
def test_c_max_and_min_keep_a_nan_from_either_side(tmp_path: Path) -> None:
    """``a > b ? a : b`` drops a NaN ``a``; numpy (and the LLVM build) keep it."""
    n = 6
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: te.max(A[i], B[i]) + te.min(A[i], B[i]), name="C")
    lib = _compile(mlc.build([A, B, C], target="c", name="mx").get_source(), "mx", tmp_path)
    a = np.array([np.nan, 1, np.nan, 2, -1, 0], np.float32)
    b = np.array([1, np.nan, np.nan, -3, 5, 0], np.float32)
    c = np.empty(n, np.float32)
    lib.mx(_ptr(a), _ptr(b), _ptr(c))
    np.testing.assert_array_equal(c, np.maximum(a, b) + np.minimum(a, b))
