"""A vectorized loop longer than MAX_LANES runs as vectors of MAX_LANES lanes. Vectorizing a
65536-long axis made LLVM abort the process (an assertion in instruction selection: the
Jupyter kernel died); 16384 lanes took 150 s to compile."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.transform.vectorize import MAX_LANES


def doubled(n: int, dtype: str = "float32"):
    A = te.placeholder((n,), dtype, name="A")
    B = te.compute((n,), lambda i: A[i] * 3 + A[i] // 7 if dtype.startswith("int")
                   else A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    return s, [A, B]


def test_a_long_vectorized_loop_becomes_chunks_of_max_lanes() -> None:
    assert MAX_LANES == 256
    text = str(mlc.lower(*doubled(1000)))
    assert "for i_chunk in range(3):" in text
    assert "B[ramp(i_chunk * 256, 1, 256)] = A[ramp(i_chunk * 256, 1, 256)]" in text
    assert "B[ramp(768, 1, 232)] = A[ramp(768, 1, 232)]" in text


def test_up_to_max_lanes_stays_one_vector() -> None:
    text = str(mlc.lower(*doubled(256)))
    assert "chunk" not in text and "ramp(0, 1, 256)" in text


@pytest.mark.parametrize("n, dtype", [(65536, "float32"), (100003, "float32"),
                                      (65541, "int32")])
def test_very_long_vectors_build_and_compute(n: int, dtype: str) -> None:
    f = mlc.build(*doubled(n, dtype))
    a = (np.arange(n) % 100).astype(dtype)
    b = np.zeros(n, dtype)
    f(a, b)
    want = a * 3 + a // 7 if dtype.startswith("int") else a * 2 + 1
    np.testing.assert_array_equal(b, want)


def test_the_process_survives_a_65536_lane_vector() -> None:
    """In a process of its own: before the fix LLVM aborted it."""
    code = textwrap.dedent("""
        import numpy as np, mlc
        from mlc import te
        A = te.placeholder((65536,), name="A")
        B = te.compute((65536,), lambda i: A[i] * 2.0 + te.exp(A[i]), name="B")
        s = te.create_schedule(B.op)
        s[B].vectorize(B.op.axis[0])
        f = mlc.build(s, [A, B])
        a = np.zeros(65536, "float32"); b = np.empty_like(a); f(a, b)
        print("ok", float(b.sum()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", "65536.0"]


def test_a_wide_vector_with_a_loop_inside() -> None:
    n, k = 600, 5
    A = te.placeholder((k, n), name="A")
    r = te.reduce_axis((0, k), "r")
    B = te.compute((n,), lambda i: te.sum(A[r, i], axis=r), name="B")
    s = te.create_schedule(B.op)
    (i,) = B.op.axis
    s[B].vectorize(i)
    f = mlc.build(s, [A, B])
    a = np.random.default_rng(0).random((k, n), dtype=np.float32)
    b = np.zeros(n, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, a.sum(0), rtol=1e-5)
