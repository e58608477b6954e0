"""An intermediate buffer the machine cannot hold: its size is computed in 64 bits (a
100000 x 100000 buffer's 10**10 elements wrapped in int32 to a smaller block, and the stores
past it killed the process), a failed allocation is an AllocationError after the call (the
code wrote through a null pointer: a segmentation fault, the notebook's kernel dead), and a
buffer past a 64-bit index is refused when lowering."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import AllocationError, LoweringError


def _through_intermediate(n: int):
    A = te.placeholder((4,), name="A")
    B = te.compute((n, n), lambda i, j: A[i % 4] * 2.0, name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((4,), lambda i: te.sum(B[i, k], axis=k), name="C")
    return te.create_prim_func([A, C])


def test_the_size_of_a_large_intermediate_is_computed_in_64_bits():
    text = str(mlc.lower(_through_intermediate(100_000)))
    assert "B = alloc_buffer((int64(10000000000),)" in text
    ll = mlc.build(_through_intermediate(100_000)).get_source("ll")
    assert "@aligned_alloc(i64 64, i64 40000000000)" in ll


def test_an_intermediate_the_machine_cannot_hold_is_an_allocation_error():
    # 10**12 floats (4 TB): no machine gives that; the call fails with the buffer's name
    f = mlc.build(_through_intermediate(1_000_000))
    c = np.full(4, 7.0, "float32")
    with pytest.raises(AllocationError, match=r"no memory for the intermediate buffer B "
                                              r"\(4000000000000 bytes"):
        f(np.ones(4, "float32"), c)
    small = mlc.build(_through_intermediate(8))  # the process lives on and computes
    small(np.ones(4, "float32"), c)
    np.testing.assert_allclose(c, 16.0)


def test_a_kept_workspace_block_that_cannot_be_had_is_an_allocation_error():
    # 32 MiB, kept from one call to the next (mlc.target.llvm.workspace), under an
    # address-space limit that leaves no room for it: in a process of its own
    code = textwrap.dedent("""
        import resource
        import numpy as np
        import mlc
        from mlc import te
        from mlc.errors import AllocationError
        n = 2896  # 2896**2 floats: 32 MiB
        A = te.placeholder((4,), name="A")
        B = te.compute((n, n), lambda i, j: A[i % 4] * 2.0, name="B")
        k = te.reduce_axis((0, n), "k")
        C = te.compute((4,), lambda i: te.sum(B[i, k], axis=k), name="C")
        f = mlc.build(te.create_prim_func([A, C]))
        a, c = np.ones(4, "float32"), np.zeros(4, "float32")
        size = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) << 10
        resource.setrlimit(resource.RLIMIT_AS, (size + (4 << 20), size + (4 << 20)))
        try:
            f(a, c)
            print("ran")
        except AllocationError as err:
            print("refused:", str(err).split(":")[1].strip()[:40])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "refused: no memory for the intermediate buffer B"


def test_a_buffer_past_a_64_bit_index_is_refused_when_lowering():
    with pytest.raises(LoweringError, match="past what a 64-bit index can address"):
        mlc.lower(_through_intermediate(10**10))
