"""Float -> integer conversion has one meaning everywhere (mlc.tir.float_int): toward zero,
saturating at the type's ends, NaN -> 0. LLVM's plain ``fptosi`` is poison out of range
(here it gave -128 for 1e10 -> int8 and 0 for -1.0 -> uint8, numpy 0 and 255, both with no
warning from mlc): the compiled code, the C and CUDA sources, the GPU simulator, the
constant folder and the reference evaluators must all agree."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.target.cuda import nvrtc as cuda_nvrtc
from mlc.testing.interpreter_runtime import cast as interpreter_cast
from mlc.testing.reference import _cast as reference_cast
from mlc.tir import const
from mlc.tir.arith import Analyzer
from mlc.tir.arith.evaluate import evaluate_known
from mlc.tir.float_int import float_array_to_int, float_to_int, int_range

INT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
VALUES = [np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -1.0, 255.5, 256.0, -129.0, 2.0**31,
          -(2.0**31), 0.0, -0.0, -0.7, 0.7, 2.0**63, 2.0**64, -(2.0**63), 127.9]
GCC = shutil.which("gcc")


def cast_program(src: str, dst: str, n: int, vectorize: bool = False):
    A = te.placeholder((n,), src, name="A")
    B = te.compute((n,), lambda i: A[i].astype(dst), name="B")
    s = te.create_schedule(B.op)
    if vectorize:
        _, inner = s[B].split(B.op.axis[0], factor=8)
        s[B].vectorize(inner)
    return s, [A, B]


def test_the_definition_on_its_edges() -> None:
    assert float_to_int(300.0, "int8") == 127
    assert float_to_int(-300.0, "int8") == -128
    assert float_to_int(-1.0, "uint8") == 0
    assert float_to_int(float("nan"), "int32") == 0
    assert float_to_int(float("inf"), "int64") == 2**63 - 1
    assert float_to_int(-2.7, "int32") == -2
    assert float_to_int(2.0**64, "uint64") == 2**64 - 1
    got = float_array_to_int(np.array([np.nan, np.inf, -np.inf, 2.0**63, -(2.0**63), -1.5]),
                             "int64")
    assert got.dtype == np.int64
    assert got.tolist() == [0, 2**63 - 1, -(2**63), 2**63 - 1, -(2**63), -1]
    for dtype in INT_TYPES:  # the scalar and array forms agree on every value
        lo, hi = int_range(dtype)
        arr = float_array_to_int(np.array(VALUES), dtype)
        assert arr.tolist() == [float_to_int(v, dtype) for v in VALUES]
        assert min(arr.tolist()) >= lo and max(arr.tolist()) <= hi


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", INT_TYPES)
def test_compiled_code_saturates(src: str, dst: str, vectorize: bool) -> None:
    s, args = cast_program(src, dst, len(VALUES), vectorize=False)
    if vectorize:
        s, args = cast_program(src, dst, 16, vectorize=True)
    n = args[0].shape[0]
    f = mlc.build(s, args)
    a = np.array(VALUES[:n], dtype=src)
    b = np.zeros(n, dst)
    f(a, b)
    np.testing.assert_array_equal(b, float_array_to_int(a, dst))


def test_float16_source_saturates() -> None:
    s, args = cast_program("float16", "int8", 8)
    f = mlc.build(s, args)
    a = np.array([np.nan, np.inf, -np.inf, 300, -300, 2.5, -2.5, 65504], dtype="float16")
    b = np.zeros(8, "int8")
    f(a, b)
    assert b.tolist() == [0, 127, -128, 127, -128, 2, -2, 127]


@pytest.mark.skipif(GCC is None, reason="gcc is not installed")
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_c_source_saturates_like_the_machine_code(src: str, tmp_path: Path) -> None:
    n = len(VALUES)
    a = np.array(VALUES, dtype=src)
    for dst in INT_TYPES:
        s, args = cast_program(src, dst, n)
        f = mlc.build(s, args, target="c", name=f"cast_{dst}")
        path = tmp_path / f"{dst}.c"
        path.write_text(f.get_source("c"))
        lib = tmp_path / f"lib{dst}.so"
        subprocess.run([GCC or "gcc", "-O2", "-shared", "-fPIC", "-std=c11", "-o", str(lib),
                        str(path), "-lm"], check=True, capture_output=True, text=True)
        b = np.zeros(n, dst)
        getattr(ctypes.CDLL(str(lib)), f"cast_{dst}")(ctypes.c_void_p(a.ctypes.data),
                                                       ctypes.c_void_p(b.ctypes.data))
        np.testing.assert_array_equal(b, float_array_to_int(a, dst), err_msg=dst)


def gpu_cast(dst: str):
    A = te.placeholder((64,), "float32", name="A")
    B = te.compute((64,), lambda i: A[i].astype(dst), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


@pytest.mark.parametrize("dst", ["int8", "uint8", "int16", "int32", "uint32", "int64"])
def test_cuda_source_uses_the_saturating_conversions(dst: str) -> None:
    s, args = gpu_cast(dst)
    src = mlc.build(s, args, target="cuda", name="cast").get_source("cuda")
    conversion = {"int8": "min(max(__float2int_rz(", "uint8": "min(__float2uint_rz(",
                  "int16": "min(max(__float2int_rz(", "int32": "__float2int_rz(",
                  "uint32": "__float2uint_rz(", "int64": "__float2ll_rz("}[dst]
    assert conversion in src
    if cuda_nvrtc.available():
        assert ".entry cast_kernel" in cuda_nvrtc.compile_to_ptx(src)


@pytest.mark.parametrize("dst", ["int8", "uint8", "int32", "uint32", "int64"])
def test_gpu_simulator_converts_as_the_gpu_does(dst: str) -> None:
    s, args = gpu_cast(dst)
    f = mlc.build(s, args, target="cuda-sim")
    a = np.resize(np.array(VALUES[:16], "float32"), 64)
    b = np.zeros(64, dst)
    f(a, b)
    np.testing.assert_array_equal(b, float_array_to_int(a, dst))


def test_constant_folding_and_evaluators_agree() -> None:
    ana = Analyzer()
    for value, dtype, want in [(300.0, "int8", 127), (-1.0, "uint8", 0), (1e10, "int32",
                               2**31 - 1), (float("nan"), "int16", 0), (-2.5, "int8", -2)]:
        e = const(value, "float32").astype(dtype)
        folded = ana.simplify(e)
        assert getattr(folded, "value", None) == want, (value, dtype, folded)
        assert evaluate_known(e, {}) == want
        assert int(reference_cast(np.float32(value), dtype)) == want
        assert int(interpreter_cast(np.array([value], "float32"), dtype)[0]) == want
