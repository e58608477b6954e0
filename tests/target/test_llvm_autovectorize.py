"""LLVM's own loop vectorizer runs only where a schedule asked for vectors.

LLVM 22's loop vectorizer, run on every loop, miscompiled a guarded loop nest on CPUs with
AVX-512: ``B[bx * 4 + tx % 4]`` was loaded as 8 consecutive floats although ``tx % 4``
repeats every 4 lanes, and odd rows of the result were wrong without a word (a matmul bound
the GPU way, run on the CPU). mlc now leaves loops it did not vectorize to LLVM's scalar
optimizations and SLP; these programs are the reproducers, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc.script import from_source

COPY = '''
@T.prim_func
def main(B: T.Buffer((24,), "float32"), C: T.Buffer((20, 24), "float32")):
    for bx in range(6):
        for by in range(3):
            for tx in range(32):
                if by * 8 + tx // 4 < 20:
                    C[by * 8 + tx // 4, bx * 4 + tx % 4] = B[bx * 4 + tx % 4]
'''

MATMUL = '''
@T.prim_func
def main(A: T.Buffer((20, 18), "float32"), B: T.Buffer((18, 24), "float32"), C: T.Buffer((20, 24), "float32")):
    for bx in range(6):
        for by in range(3):
            for tx in range(32):
                if by * 8 + tx // 4 < 20:
                    C[by * 8 + tx // 4, bx * 4 + tx % 4] = T.float32(0)
                for k_0 in range(5):
                    for k_1 in range(4):
                        if by * 8 + tx // 4 < 20 and k_0 * 4 + k_1 < 18:
                            C[by * 8 + tx // 4, bx * 4 + tx % 4] = C[by * 8 + tx // 4, bx * 4 + tx % 4] + A[by * 8 + tx // 4, k_0 * 4 + k_1] * B[k_0 * 4 + k_1, bx * 4 + tx % 4]
'''  # noqa: E501


def _targets() -> list[str]:
    from mlc.target.llvm.dot import cpu_features
    from mlc.target.target import parse_target

    out = ["llvm", "c"]
    if "avx512f" in cpu_features(parse_target("llvm")):  # the CPUs the miscompile needs
        out.append("llvm -mcpu=skylake-avx512")
    return out


@pytest.mark.parametrize("target", _targets())
def test_a_guarded_copy_with_a_repeating_column_index(target: str) -> None:
    b = np.arange(24, dtype="float32")
    c = np.full((20, 24), np.nan, "float32")
    mlc.build(from_source(COPY), target=target)(b, c)
    np.testing.assert_array_equal(c, np.tile(b, (20, 1)))


@pytest.mark.parametrize("target", _targets())
def test_a_gpu_style_matmul_on_the_cpu(target: str) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((20, 18)).astype("float32")
    b = rng.standard_normal((18, 24)).astype("float32")
    c = np.full((20, 24), np.nan, "float32")
    mlc.build(from_source(MATMUL), target=target)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_a_loop_the_schedule_vectorized_still_becomes_vectors() -> None:
    from mlc import te

    n = 1000  # not a multiple of the vector width: left to LLVM with its vectorize hint
    x = te.placeholder((n,), name="x")
    y = te.compute((n,), lambda i: x[i] * 2.0, name="y")
    s = te.create_schedule(y.op)
    s[y].vectorize(s[y].op.axis[0])
    f = mlc.build(s, [x, y])
    a = np.random.rand(n).astype("float32")
    out = np.zeros(n, "float32")
    f(a, out)
    np.testing.assert_allclose(out, a * 2)
    assert "<" in f.get_source("ll") and " x float>" in f.get_source("ll")
