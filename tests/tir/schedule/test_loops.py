"""Loop primitives: the IR they produce, what the result computes, and their refusals."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.testing import eval_prim_func
from mlc.tir.stmt import For, ForKind


def _matmul(m: int = 6, n: int = 4, k: int = 8):  # type: ignore[no-untyped-def]
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def _vadd(n: int | None = 10):  # type: ignore[no-untyped-def]
    size = te.var("n") if n is None else n
    A = te.placeholder((size,), name="A")
    B = te.compute((size,), lambda i: A[i] + 1.0, name="B")
    return te.create_prim_func([A, B])


def _body(sch: tir.Schedule) -> str:
    """The printed program without the signature line."""
    return "\n".join(str(sch.mod).splitlines()[2:])


def _expect(text: str) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n"), "    ")


def _check_matmul(sch: tir.Schedule, m: int = 6, n: int = 4, k: int = 8) -> None:
    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    eval_prim_func(sch.mod, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def _check_vadd(sch: tir.Schedule, n: int = 10) -> None:
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, np.nan, dtype=np.float32)
    eval_prim_func(sch.mod, a, b)
    np.testing.assert_allclose(b, a + 1)


# ---------------------------------------------------------------------------------------------
# split


def test_split_non_dividing_adds_predicate() -> None:
    sch = tir.Schedule(_vadd(10))
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 4])
    assert _body(sch) == _expect(
        """
        for i_0 in range(3):
            for i_1 in range(4):
                with block("B"):
                    vi = axis.spatial(10, i_0 * 4 + i_1)
                    where(i_0 * 4 + i_1 < 10)
                    reads(A[vi])
                    writes(B[vi])
                    B[vi] = A[vi] + 1.0
        """
    )
    assert [h.rv_id for h in sch.get_loops(sch.get_block("B"))] == [i0.rv_id, i1.rv_id]
    _check_vadd(sch)


def test_split_dividing_three_ways_has_no_predicate() -> None:
    sch = tir.Schedule(_matmul(m=8))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[2, None, 2])
    text = _body(sch)
    assert "for i_0 in range(2):" in text and "for i_1 in range(2):" in text
    assert "vi = axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)" in text
    assert "where(" not in text
    _check_matmul(sch, m=8)


def test_split_symbolic_extent() -> None:
    sch = tir.Schedule(_vadd(None))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 8])
    text = _body(sch)
    assert "for i_0 in range((n + 7) // 8):" in text
    assert "where(i_0 * 8 + i_1 < n)" in text
    for size in (1, 8, 13):
        _check_vadd(sch, size)


def test_split_unit_factor_not_preserved() -> None:
    sch = tir.Schedule(_vadd(8))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[1, 8], preserve_unit_iters=False)
    assert "vi = axis.spatial(8, i_1)" in _body(sch)
    _check_vadd(sch, 8)


def test_split_reduction_loop_then_old_handle_is_gone() -> None:
    sch = tir.Schedule(_matmul())
    _, _, k = sch.get_loops(sch.get_block("C"))
    sch.split(k, factors=[None, 3])
    assert "vk = axis.reduce(8, k_0 * 3 + k_1)" in _body(sch)
    _check_matmul(sch)
    with pytest.raises(ScheduleError, match="loop 'k' is no longer in the program"):
        sch.split(k, factors=[2, 4])


@pytest.mark.parametrize(
    ("factors", "message"),
    [
        ([None, None], "at most one factor may be None"),
        ([0, None], "factors must be positive"),
        ([-2, 5], "factors must be positive"),
        ([2, 4], r"multiply to 8, but the loop has 10 iterations"),
        ([2.5, None], "must be a positive int or None"),
        ([], "non-empty list"),
    ],
)
def test_split_errors(factors: list, message: str) -> None:
    sch = tir.Schedule(_vadd(10))
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=message) as err:
        sch.split(i, factors=factors)
    assert "for i in range(10):  # <-- here" in str(err.value)
    assert len(sch.trace) == 2  # nothing recorded for the refused split


def test_split_symbolic_needs_an_inferred_factor() -> None:
    sch = tir.Schedule(_vadd(None))
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="give one factor as None"):
        sch.split(i, factors=[4, 4])


# ---------------------------------------------------------------------------------------------
# fuse


def test_fuse_two_loops() -> None:
    sch = tir.Schedule(_matmul())
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.fuse(i, j)
    assert _body(sch) == _expect(
        """
        for i_j_fused in range(24):
            for k in range(8):
                with block("C"):
                    vi = axis.spatial(6, i_j_fused // 4)
                    vj = axis.spatial(4, i_j_fused % 4)
                    vk = axis.reduce(8, k)
                    reads(A[vi, vk], B[vk, vj])
                    writes(C[vi, vj])
                    with init():
                        C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        """
    )
    _check_matmul(sch)


def test_fuse_three_and_split_back() -> None:
    sch = tir.Schedule(_matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    f = sch.fuse(i, j, k)
    assert "vj = axis.spatial(4, i_j_k_fused // 8 % 4)" in _body(sch)
    _check_matmul(sch)
    sch.split(f, factors=[None, 8])
    # the simplifier undoes the fuse: (f0 * 8 + f1) // 8 % 4 == f0 % 4
    assert "vk = axis.reduce(8, i_j_k_fused_1)" in _body(sch)
    _check_matmul(sch)


def test_fuse_split_loops_of_symbolic_extent() -> None:
    sch = tir.Schedule(_vadd(None))
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.fuse(i0, i1)
    for size in (3, 8, 9):
        _check_vadd(sch, size)


def test_fuse_not_nested_refused() -> None:
    sch = tir.Schedule(_matmul())
    i, _, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(
        ScheduleError, match="loop 'k' must be the only statement directly inside loop 'i'"
    ):
        sch.fuse(i, k)


def test_fuse_inner_first_refused() -> None:
    sch = tir.Schedule(_matmul())
    i, j, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="perfectly nested chain, outermost first"):
        sch.fuse(j, i)


def test_fuse_of_loops_with_two_blocks_refused() -> None:
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 4), lambda i, j: B[i, j] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    (bi, _) = sch.get_loops(sch.get_block("B"))
    (ci, _) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="perfectly nested"):
        sch.fuse(bi, ci)


# ---------------------------------------------------------------------------------------------
# reorder


def test_reorder_keeps_unnamed_loops_in_place() -> None:
    sch = tir.Schedule(_matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(k, i)
    text = _body(sch)
    assert text.splitlines()[:3] == [
        "    for k in range(8):",
        "        for j in range(4):",
        "            for i in range(6):",
    ]
    _check_matmul(sch)


def test_reorder_after_split_tiles_matmul() -> None:
    sch = tir.Schedule(_matmul(m=8, n=8))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 3])
    sch.reorder(i0, j0, k, i1, j1)
    names = [line.strip() for line in _body(sch).splitlines()[:5]]
    assert names == [
        "for i_0 in range(2):",
        "for j_0 in range(3):",
        "for k in range(8):",
        "for i_1 in range(4):",
        "for j_1 in range(3):",
    ]
    _check_matmul(sch, m=8, n=8)


def test_reorder_not_one_nest_refused() -> None:
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((4,), lambda i: B[i] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    (bi,) = sch.get_loops(sch.get_block("B"))
    (ci,) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="not in one loop nest"):
        sch.reorder(ci, bi)


def test_reorder_imperfect_nest_refused() -> None:
    import dataclasses

    from mlc.tir.functor import substitute
    from mlc.tir.stmt import SeqStmt

    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 4), lambda i, j: B[i, j] + 1.0, name="C")
    func = te.create_prim_func([A, C])
    root = func.body.block  # type: ignore[attr-defined]
    b_nest, c_nest = root.body.seq
    # for i: (for j: B) ; (for j: C)   -- C's outer loop merged into B's
    c_inner = substitute(c_nest.body, {c_nest.loop_var: b_nest.loop_var})
    merged = dataclasses.replace(b_nest, body=SeqStmt((b_nest.body, c_inner)))
    func = func.with_body(
        dataclasses.replace(func.body, block=dataclasses.replace(root, body=merged))
    )
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(
        ScheduleError, match="not perfectly nested: there is a sequence of statements"
    ):
        sch.reorder(j, i)
    with pytest.raises(ScheduleError, match="given twice"):
        sch.reorder(i, i)


def test_reorder_loop_bound_depends_on_moved_loop_refused() -> None:
    sch = tir.Schedule(_vadd(None))
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[4, None])
    # i_1's extent is (n + 3) // 4: no dependence; build one by hand instead
    func = sch.mod
    outer: For = func.body.block.body  # type: ignore[attr-defined]
    inner: For = outer.body  # type: ignore[assignment]
    import dataclasses

    bad_inner = dataclasses.replace(inner, extent=outer.loop_var + 1)
    bad = func.with_body(
        dataclasses.replace(
            func.body,
            block=dataclasses.replace(
                func.body.block, body=dataclasses.replace(outer, body=bad_inner)
            ),  # type: ignore[attr-defined]
        )
    )
    sch2 = tir.Schedule(bad)
    a, b = sch2.get_loops(sch2.get_block("B"))
    with pytest.raises(ScheduleError, match="use a loop that would be moved inside it"):
        sch2.reorder(b, a)


# ---------------------------------------------------------------------------------------------
# loop kinds


def _kinds(sch: tir.Schedule) -> dict[str, ForKind]:
    out: dict[str, ForKind] = {}
    from mlc.tir.schedule import state

    for loc in state.walk(sch.mod.body):
        if isinstance(loc.stmt, For):
            out[loc.stmt.loop_var.name] = loc.stmt.kind
    return out


def test_parallel_vectorize_unroll() -> None:
    sch = tir.Schedule(_matmul(m=8, n=8))
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, k, j)
    sch.parallel(i)
    sch.unroll(k)
    sch.vectorize(j)
    assert _kinds(sch) == {"i": ForKind.PARALLEL, "k": ForKind.UNROLLED, "j": ForKind.VECTORIZED}
    text = _body(sch)
    assert "for i in parallel(8):" in text
    assert "for k in unroll(8):" in text
    assert "for j in vectorized(8):" in text
    _check_matmul(sch, m=8, n=8)


def test_parallel_on_reduce_loop_refused() -> None:
    sch = tir.Schedule(_matmul())
    _, _, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError) as err:
        sch.parallel(k)
    msg = str(err.value)
    assert "the loop 'k' is bound to the reduce variable vk of block 'C'" in msg
    assert "use rfactor" in msg.lower()
    assert "# <-- parallel" in msg and "vk is reduce" in msg


def test_vectorize_on_reduce_loop_refused() -> None:
    sch = tir.Schedule(_matmul())
    _, _, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="bound to the reduce variable vk"):
        sch.vectorize(k)


def test_nested_parallel_refused() -> None:
    sch = tir.Schedule(_matmul())
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.parallel(j)
    with pytest.raises(ScheduleError, match="contains the parallel loop 'j'"):
        sch.parallel(i)
    sch2 = tir.Schedule(_matmul())
    i, j, _ = sch2.get_loops(sch2.get_block("C"))
    sch2.parallel(i)
    with pytest.raises(ScheduleError, match="inside the parallel loop 'i'"):
        sch2.parallel(j)


def test_vectorize_refusals() -> None:
    sch = tir.Schedule(_vadd(None))
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="symbolic extent n"):
        sch.vectorize(i)
    sch2 = tir.Schedule(_matmul())
    i, j, _ = sch2.get_loops(sch2.get_block("C"))
    sch2.parallel(j)
    with pytest.raises(ScheduleError, match="contains the parallel loop 'j'; the lanes"):
        sch2.vectorize(i)


def test_vectorize_accepts_an_outer_loop() -> None:
    sch = tir.Schedule(_matmul())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.vectorize(i)
    assert "vectorized(" in _body(sch)


def test_vectorize_split_symbolic_inner() -> None:
    sch = tir.Schedule(_vadd(None))
    (i,) = sch.get_loops(sch.get_block("B"))
    _, i1 = sch.split(i, factors=[None, 4])
    sch.vectorize(i1)
    assert "for i_1 in vectorized(4):" in _body(sch)
    for size in (5, 8):
        _check_vadd(sch, size)


def test_bind() -> None:
    sch = tir.Schedule(_vadd(64))
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx = sch.split(i, factors=[None, 32])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, te.thread_axis("threadIdx.x"))
    text = _body(sch)
    assert 'for i_0 in thread_binding(2, "blockIdx.x"):' in text
    assert 'for i_1 in thread_binding(32, "threadIdx.x"):' in text
    assert sch.trace.as_json()[-1] == [
        "bind",
        {"loop": "$" + tx.rv_id, "thread_axis": "threadIdx.x"},
        [],
    ]
    _check_vadd(sch, 64)
    with pytest.raises(ScheduleError, match="'threadIdx.w' is not a thread axis"):
        sch.bind(bx, "threadIdx.w")


def test_bind_reduce_refused() -> None:
    sch = tir.Schedule(_matmul())
    _, _, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(
        ScheduleError, match="bind to blockIdx.x: the loop 'k' is bound to the reduce"
    ):
        sch.bind(k, "blockIdx.x")  # threadIdx.x is a cross-thread reduction (gpu_schedules)


# ---------------------------------------------------------------------------------------------
# annotations


def test_annotate_and_unannotate() -> None:
    sch = tir.Schedule(_matmul())
    blk = sch.get_block("C")
    i, _, _ = sch.get_loops(blk)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    sch.annotate(blk, "meta", "x")
    sch.annotate(i, "pragma_auto_unroll_max_step", 32)  # replaces
    outer: For = sch.mod.body.block.body  # type: ignore[attr-defined]
    assert outer.annotations == (("pragma_auto_unroll_max_step", 32),)
    assert "annotations={" in _body(sch)
    sch.unannotate(i, "pragma_auto_unroll_max_step")
    assert sch.mod.body.block.body.annotations == ()  # type: ignore[attr-defined]
    with pytest.raises(ScheduleError, match="no annotation 'nope'"):
        sch.unannotate(blk, "nope")
    with pytest.raises(ScheduleError, match="must be an int, float, str or bool"):
        sch.annotate(blk, "bad", [1, 2])
    _check_matmul(sch)


@pytest.mark.parametrize("factors", [[None, 10**12], [2**16, 2**16], [None, 2**31]])
def test_split_factors_past_the_loop_variable_are_refused(factors) -> None:
    """[None, 10**12] on a 64-iteration int32 loop wrapped the factor and computed garbage."""
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (loop,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="past what its int32 variable can count"):
        sch.split(loop, factors=factors)


def test_a_factor_larger_than_the_loop_still_computes() -> None:
    import mlc

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (loop,) = sch.get_loops(sch.get_block("B"))
    sch.split(loop, factors=[None, 2**20])
    a, b = np.arange(64, dtype="float32"), np.zeros(64, "float32")
    mlc.build(sch.mod)(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_fusing_past_the_loop_variable_is_refused() -> None:
    """70000 x 70000 fused into one int32 loop of 4.9e9 iterations wrapped."""
    A = te.placeholder((70000, 70000), "int8", name="A")
    B = te.compute((70000, 70000), lambda i, j: A[i, j], name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="4900000000 iterations together, past what a int32"):
        sch.fuse(i, j)
