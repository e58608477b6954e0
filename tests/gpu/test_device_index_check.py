"""The real ``cuda`` target checks indices read from data on the device: a thread whose
index leaves its array records it in ``mlc_error`` and skips the access, and the module
raises GPUIndexError after the launch (before, the GPU read or wrote whatever lay at the
address: garbage, silently, where cuda-sim raised). Without a GPU the generated CUDA C is
checked, and compiled by NVRTC when NVRTC is installed (compiling needs no GPU)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import mlc
from mlc.errors import GPUIndexError, IndexOutOfBoundsError
from mlc.runtime import cuda_driver
from mlc.script import from_source
from mlc.target.cuda import nvrtc
from mlc.target.cuda.device_errors import index_error

SCATTER = """
    @T.prim_func
    def scatter(A: T.Buffer((256,), "float32"), I: T.Buffer((256,), "int32"),
                B: T.Buffer((256,), "float32"), G: T.Buffer((4, 8), "float32")):
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[I[bx * 32 + tx]] = A[I[bx * 32 + tx]] + G[I[tx] % 8, 1]
"""


def _scatter(target: str) -> mlc.runtime.Module:
    return mlc.build(from_source(textwrap.dedent(SCATTER)), target=target)


def _kernel(source: str) -> str:
    return source[source.index("// grid"):]


def test_indices_read_from_data_are_checked_on_the_device() -> None:
    f = _scatter("cuda")
    src = f.get_source("cuda")
    assert "__device__ unsigned long long mlc_error[4];" in src
    kernel = _kernel(src)
    # the store is skipped when its index leaves B; each load reads element 0 instead
    assert "if (mlc_inside(((int64_t)I[((bx * 32) + tx)]), 256, 0)) {" in kernel
    assert "A[mlc_index(((int64_t)I[((bx * 32) + tx)]), 256, 1)]" in kernel
    assert "mlc_index(" in kernel.split("G[", 1)[1]  # the first dimension of G, from I
    accesses = [c.access for c in f.source.checks]
    assert accesses[0].startswith("writes B[") and accesses[1].startswith("reads A[")
    assert accesses[2].startswith("indexes G[")
    assert [c.size for c in f.source.checks] == ["256", "256", "4"]
    # the index I[...] itself is not read from data: it is not checked
    assert "I[mlc_index" not in kernel


def test_a_kernel_without_such_indices_carries_no_check() -> None:
    func = from_source(textwrap.dedent("""
        @T.prim_func
        def copy(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
            for bx in T.thread_binding(8, thread="blockIdx.x"):
                for tx in T.thread_binding(32, thread="threadIdx.x"):
                    B[bx * 32 + tx] = A[bx * 32 + tx]
    """))
    f = mlc.build(func, target="cuda")
    assert "mlc_error" not in f.get_source("cuda") and f.source.checks == ()


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC is not installed (the gpu extra)")
def test_nvrtc_compiles_the_checked_kernel() -> None:
    ptx = _scatter("cuda").ptx("compute_80")
    assert "mlc_error" in ptx and ".entry scatter_kernel(" in ptx
    assert "atom.global.cas.b64" in ptx  # the first failing thread wins


def test_the_record_becomes_an_error_naming_the_thread_and_access() -> None:
    f = _scatter("cuda")
    # check 1 (A's load) failed in block 5, thread 7, with index 300
    err = index_error(f.source, [2, 300, 5, 7], {"scatter_kernel": [8, 1, 1]})
    assert isinstance(err, IndexOutOfBoundsError)
    assert str(err).startswith("kernel scatter_kernel: blockIdx (5), threadIdx (7) reads "
                               "A[int64(I[bx * 32 + tx])] with index 300, outside its 256 "
                               "elements")
    negative = index_error(f.source, [1, 2**64 - 3, 0, 31], {"scatter_kernel": [8, 1, 1]})
    assert "threadIdx (31) writes B[" in str(negative) and "with index -3," in str(negative)


def test_a_2d_grid_is_named_by_its_axes() -> None:
    func = from_source(textwrap.dedent("""
        @T.prim_func
        def gather(A: T.Buffer((64,), "float32"), I: T.Buffer((64,), "int32"),
                   B: T.Buffer((64,), "float32")):
            for by in T.thread_binding(2, thread="blockIdx.y"):
                for bx in T.thread_binding(2, thread="blockIdx.x"):
                    for ty in T.thread_binding(4, thread="threadIdx.y"):
                        for tx in T.thread_binding(4, thread="threadIdx.x"):
                            B[by * 32 + bx * 16 + ty * 4 + tx] = A[I[by * 32 + bx * 16 + ty * 4 + tx]]
    """))  # noqa: E501
    f = mlc.build(func, target="cuda")
    # block (x=1, y=1) is linear 3; thread (x=2, y=3) is linear 14
    err = index_error(f.source, [1, 64, 3, 14], {"gather_kernel": [2, 2, 1]})
    assert "blockIdx (1, 1), threadIdx (2, 3) reads A[" in str(err)


def test_cuda_sim_raises_for_the_same_call() -> None:
    f = _scatter("cuda-sim")
    idx = np.arange(256, dtype="int32")
    idx[77] = 300
    with pytest.raises(GPUIndexError, match=r"blockIdx \(2\), threadIdx \(13\)"):
        f(np.ones(256, "float32"), idx, np.zeros(256, "float32"), np.ones((4, 8), "float32"))


@pytest.mark.skipif(not cuda_driver.available(), reason="no NVIDIA GPU / CUDA driver here")
def test_a_real_gpu_raises_after_the_launch() -> None:
    f = _scatter("cuda")
    a = np.arange(256, dtype="float32")
    g = np.ones((4, 8), "float32")
    good = np.arange(256, dtype="int32")[::-1].copy()
    b = np.zeros(256, "float32")
    f(a, good, b, g)
    np.testing.assert_allclose(b[good], a[good] + 1.0)
    bad = good.copy()
    bad[77] = 300
    with pytest.raises(GPUIndexError, match=r"blockIdx \(2\), threadIdx \(13\) writes B\["
                                            r".*with index 300"):
        f(a, bad, np.zeros(256, "float32"), g)
    b = np.zeros(256, "float32")
    f(a, good, b, g)  # the record was cleared: the next call runs
    np.testing.assert_allclose(b[good], a[good] + 1.0)
