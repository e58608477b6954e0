"""Large scratch blocks (packed panels) are kept from one call to the next
(mlc.target.llvm.workspace): no fresh pages, so no page faults, on every call; each
thread of a parallel loop, and each Python thread calling the same module at once, gets
its own block; the blocks are freed when the module is collected."""

from __future__ import annotations

import gc
import resource
import threading

import numpy as np
import pytest
from llvm_helpers import build, loop

from mlc.runtime import parallel
from mlc.target.llvm import workspace
from mlc.tir import Allocate, Buffer, BufferStore, ForKind, Var, seq

ROWS, COLS = 4, 1 << 19  # each row's scratch: 2 MiB


def _rows_through_scratch(kind: ForKind = ForKind.PARALLEL):
    """``B[r, :] = 2 * A[r, :] + r`` through a 2 MiB scratch block per row (per thread)."""
    A = Buffer("A", (ROWS, COLS), "float32")
    B = Buffer("B", (ROWS, COLS), "float32")
    flat_a = Buffer("A_flat", (ROWS * COLS,), "float32", data=A.data)
    flat_b = Buffer("B_flat", (ROWS * COLS,), "float32", data=B.data)
    tmp = Buffer("tmp", (COLS,), "float32")
    r, i = Var("r", "int32"), Var("i", "int32")
    body = Allocate(tmp, seq(
        loop(i, COLS, BufferStore(tmp, flat_a[r * COLS + i] * 2.0, (i,))),
        loop(i, COLS, BufferStore(flat_b, tmp[i] + r.astype("float32"), (r * COLS + i,))),
    ))
    return build((A, B), loop(r, ROWS, body, kind))


def _want(a: np.ndarray) -> np.ndarray:
    return a * 2 + np.arange(ROWS, dtype=np.float32)[:, None]


def test_a_kept_block_gives_the_right_answer_call_after_call():
    f = _rows_through_scratch()
    ir = f.get_source("ll-unopt")
    assert '@"__mlc_ws_take64"' in ir and f'@"{workspace.RELEASE}"' in ir
    rng = np.random.default_rng(0)
    for _ in range(4):
        a = rng.random((ROWS, COLS), dtype=np.float32)
        b = np.zeros_like(a)
        f(a, b)
        np.testing.assert_array_equal(b, _want(a))


@pytest.mark.skipif(not parallel.available(warn=False), reason="libgomp is not installed")
def test_calls_after_the_first_take_no_page_faults():
    # aligned_alloc + free per call took ~340 faults per call on two threads (glibc gave
    # the pages back); a kept block is touched once
    f = _rows_through_scratch()
    a = np.ones((ROWS, COLS), np.float32)
    b = np.zeros_like(a)
    for _ in range(3):
        f(a, b)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        f(a, b)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert faults < 100, f"{faults} page faults in 5 calls (a fresh 2 MiB block is 512)"


def test_python_threads_calling_one_module_at_once_never_share_a_block():
    f = _rows_through_scratch(ForKind.SERIAL)
    errors: list[str] = []

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(6):
            a = rng.random((ROWS, COLS), dtype=np.float32)
            b = np.zeros_like(a)
            f(a, b)  # ctypes lets go of the GIL: the threads run the kernel together
            if not np.array_equal(b, _want(a)):
                errors.append(f"thread {seed}: wrong result")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_kept_blocks_are_freed_with_the_module():
    f = _rows_through_scratch()
    a = np.ones((ROWS, COLS), np.float32)
    f(a, np.zeros_like(a))
    release = f._compiled.workspace
    assert release is not None and release.alive
    del f
    gc.collect()
    assert not release.alive


def test_small_and_symbolic_blocks_are_not_kept():
    assert workspace.KEEP_MIN == 128 * 1024
    n = 1 << 10  # 4 KiB: the stack
    A = Buffer("A", (n,), "float32")
    tmp = Buffer("tmp", (n,), "float32")
    i = Var("i", "int32")
    f = build((A,), Allocate(tmp, seq(loop(i, n, BufferStore(tmp, A[i], (i,))),
                                      loop(i, n, BufferStore(A, tmp[i] + 1.0, (i,))))))
    assert "__mlc_ws" not in f.get_source("ll-unopt")
    assert f._compiled.workspace is None
