"""Third round of hostile scripts (issue 26): loops a script makes parallel meet the check
``sch.parallel`` makes; mistakes that were accepted or misdiagnosed. Each test failed on
the code before its fix."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError, ScriptError
from mlc.script import from_source

PARAMS = ('A: T.Buffer((64,), "int8"), B: T.Buffer((64,), "int32"), '
          'I: T.Buffer((64,), "int32")')


def _script(body: str, params: str = PARAMS) -> str:
    return ("@T.prim_func\ndef f(" + params + "):\n"
            + textwrap.indent(textwrap.dedent(body), "    "))


# -- item 1: one legality check for every way a loop becomes parallel --------------------------

def test_script_parallel_sum_into_one_element_is_refused_naming_loop_and_fix() -> None:
    # returned about half the sum, different on every call
    text = _script("""
        for i in T.parallel(64):
            B[0] = B[0] + T.Cast("int32", A[i])
    """)
    with pytest.raises(ScriptError) as info:
        from_source(text)
    msg = str(info.value)
    assert info.value.lineno == 4  # the header is lines 1-2, the body starts with a blank line
    assert "loop 'i' (T.parallel)" in msg and "B[0]" in msg and "race" in msg
    assert "T.serial" in msg and "T.axis.reduce" in msg and "rfactor" in msg


@pytest.mark.parametrize("body, access", [
    ("for i in T.parallel(63):\n    B[i] = B[i + 1]", "B[i + 1]"),
    ("for i in T.vectorized(8):\n    B[7 - i] = B[i]", "B[i]"),
    ("for i in T.parallel(64):\n    B[I[i]] = 1", "read from data"),
    ("for j in T.parallel(8):\n    for i in range(8):\n        B[i] = I[j * 8 + i]", "B[i]"),
    ("for ij in T.parallel(64):\n    B[ij // 2] = I[ij]", "B[ij // 2]"),
    # I[0] is -i, another value in each iteration: every iteration updates B[0]
    ("for i in T.parallel(8):\n    P = T.alloc_buffer((1,), 'int32')\n    P[0] = 0 - i\n"
     "    B[P[0] + i] = B[P[0] + i] + 1", "read from data"),
])
def test_script_racing_loops_are_refused(body: str, access: str) -> None:
    with pytest.raises(ScriptError, match="race") as info:
        from_source(_script(body))
    assert access in str(info.value)


@pytest.mark.parametrize("body", [
    "for i in T.parallel(64):\n    B[i] = T.Cast('int32', A[i]) * 2",
    "for i in T.parallel(32):\n    B[2 * i] = B[2 * i + 1]",
    "for i in T.parallel(64):\n    B[i] = I[I[i] % 64]",
    "for j in T.parallel(8):\n    for i in range(8):\n        B[i * 8 + j] = I[j * 8 + i]",
    "for ij in T.parallel(64):\n    B[ij // 8 * 8 + ij % 8] = I[ij]",
    "for i in T.parallel(64):\n    if i == 0:\n        B[0] = 7",
    "for i in T.parallel(8):\n    L = T.alloc_buffer((8,), 'int32')\n"
    "    for j in range(8):\n        L[j] = I[i * 8 + j]\n"
    "    for j in range(8):\n        B[i * 8 + j] = L[7 - j]",
    "for i in T.parallel(8):\n    for k in range(8):\n        B[i] = B[i] + I[i * 8 + k]",
])
def test_script_independent_parallel_loops_are_accepted(body: str) -> None:
    from_source(_script(body))


def test_script_parallel_loop_that_is_independent_runs_like_numpy() -> None:
    func = from_source(_script("""
        for j in T.parallel(8):
            for i in range(8):
                B[i * 8 + j] = I[j * 8 + i] + T.Cast("int32", A[i * 8 + j])
    """))
    a = np.arange(64, dtype="int8")
    idx = np.arange(64, dtype="int32") * 3
    b = np.zeros(64, "int32")
    mlc.build(func, target="llvm")(a, b, idx)
    np.testing.assert_array_equal(b, idx.reshape(8, 8).T.reshape(-1) + a)


def test_script_block_reversal_under_vectorized_is_refused_as_schedule_would() -> None:
    # a block that reverses B in place: sch.vectorize refused it, the script ran it
    text = _script("""
        for j in T.vectorized(8):
            with T.block("R"):
                vj = T.axis.spatial(8, j)
                B[vj] = B[7 - vj]
    """)
    with pytest.raises(ScriptError, match=r"block 'R' writes B\[vj\] and reads B\[7 - vj\]"):
        from_source(text)


def test_schedule_and_script_give_the_same_verdict() -> None:
    serial = from_source(_script("""
        for j in T.serial(8):
            with T.block("R"):
                vj = T.axis.spatial(8, j)
                B[vj] = B[7 - vj]
    """))
    sch = tir.Schedule(serial)
    (loop,) = sch.get_loops(sch.get_block("R"))
    with pytest.raises(ScheduleError, match=r"block 'R' writes B\[vj\] and reads B\[7 - vj\]"):
        sch.vectorize(loop)


def test_te_parallel_of_a_reduction_axis_is_still_refused() -> None:
    A = te.placeholder((64,), "float32", name="A")
    k = te.reduce_axis((0, 64), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="S")
    s = te.create_schedule(S.op)
    with pytest.raises(ScheduleError, match="reduce variable"):
        s[S].parallel(k)


# -- item 3: mistakes that were accepted ----------------------------------------------------

def test_two_functions_of_one_name_in_an_ir_module_are_refused() -> None:
    # the second silently replaced the first
    text = textwrap.dedent('''
        @I.ir_module
        class M:
            @T.prim_func
            def f(A: T.Buffer((4,), "float32")):
                for i in range(4):
                    A[i] = 1.0

            @T.prim_func
            def f(A: T.Buffer((4,), "float32")):
                for i in range(4):
                    A[i] = 2.0
    ''')
    with pytest.raises(ScriptError, match=r"defines 'f' twice \(first at line 5\)") as info:
        from_source(text)
    assert info.value.lineno == 10


def test_an_unknown_pragma_in_a_script_loop_is_refused() -> None:
    text = _script("""
        for i in T.serial(64, annotations={"pragma_bogus": 1}):
            B[i] = 1
    """)
    with pytest.raises(ScriptError, match="unknown pragma 'pragma_bogus'"):
        from_source(text)


def test_script_parallel_loop_of_symbolic_extent_is_judged_too() -> None:
    head = ('@T.prim_func\ndef f(a: T.handle, b: T.handle):\n    n = T.int32()\n'
            '    A = T.match_buffer(a, (n,), "float32")\n'
            '    B = T.match_buffer(b, (n,), "float32")\n    for i in T.parallel(n):\n')
    func = from_source(head + "        B[i] = A[i] * 2.0\n")
    a = np.arange(10, dtype="float32")
    b = np.zeros_like(a)
    mlc.build(func, target="llvm")(a, b)
    np.testing.assert_array_equal(b, a * 2)
    with pytest.raises(ScriptError, match="race"):
        from_source(head + "        B[0] = B[0] + A[i]\n")


def test_a_lowered_parallel_vectorized_program_reads_back_and_runs() -> None:
    # its ramp indices (D[ramp(i_0 * 512 + ..., 1, 8)]) were taken for one element per
    # iteration: the printed program was refused as a race
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((n, n), lambda i, j: te.max(C[i, j], 0.0), name="D")
    s = te.create_schedule(D.op)
    io, jo, _, ji = s[D].tile(*D.op.axis, 8, 8)
    s[C].compute_at(s[D], jo)
    s[D].parallel(io)
    s[D].vectorize(ji)
    text = str(mlc.lower(s, [A, B, D]))
    assert "in parallel(8)" in text and "ramp(" in text
    func = from_source(text)
    rng = np.random.default_rng(3)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    d = np.zeros((n, n), "float32")
    mlc.build(func, target="llvm")(a, b, d)
    np.testing.assert_allclose(d, np.maximum(a @ b, 0), rtol=1e-4)


@pytest.mark.parametrize("layout", ["rows", "columns", "tiles", "vectors"])
def test_lowered_parallel_programs_over_symbolic_sizes_read_back(layout: str) -> None:
    # B[int64(i) * int64(m) + int64(j)] under a parallel i: the coefficient m is a size,
    # so the affine reading gave up and the printed program was refused as a race
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    if layout == "rows":
        s[B].parallel(i)
    elif layout == "columns":
        s[B].reorder(j, i)
        s[B].parallel(j)
    elif layout == "tiles":
        io, _ = s[B].split(i, factor=4)
        s[B].parallel(io)
    else:  # a vector tail guarded by j_0 * 4 + 3 < m keeps each row's stores in its row
        _, ji = s[B].split(j, factor=4)
        s[B].parallel(i)
        s[B].vectorize(ji)
    func = from_source(str(mlc.lower(s, [A, B])))
    a = np.arange(35, dtype="float32").reshape(5, 7)
    b = np.zeros_like(a)
    mlc.build(func, target="llvm")(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_symbolic_rows_that_overlap_are_still_refused() -> None:
    head = ('@T.prim_func\ndef f(a: T.handle, b: T.handle):\n    n = T.int32()\n'
            '    m = T.int32()\n    A = T.match_buffer(a, (n * m,), "float32")\n'
            '    B = T.match_buffer(b, (n * m + 1,), "float32")\n'
            '    for i in T.parallel(n):\n        for j in range(m):\n')
    with pytest.raises(ScriptError, match="race"):
        from_source(head + "            B[i * m + j] = B[i * m + j + 1]\n")
    with pytest.raises(ScriptError, match="race"):
        from_source(head + "            B[i * (m - 1) + j] = A[j]\n")  # rows overlap by one


def test_every_thread_storing_one_element_is_refused_the_rest_left_to_cuda_sim() -> None:
    # B[0] = B[0] + A[tx] under threadIdx.x: cuda-sim raised RaceError at run time, the
    # real cuda target computed a wrong sum; no barrier can make it right, so it is refused
    params = 'A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")'
    head = "for tx in T.thread_binding(32, thread='threadIdx.x'):\n"
    with pytest.raises(ScriptError, match=r"every thread of 'tx' stores to B\[0\]"):
        from_source(_script(head + "    B[0] = B[0] + A[tx]\n", params))
    from_source(_script(head + "    if tx == 0:\n        B[0] = A[0]\n", params))
    from_source(_script(head + "    B[tx] = A[31 - tx]\n", params))
