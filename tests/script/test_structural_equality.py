"""structural_equal agrees with printing and parsing: nested statement sequences compare as the
printer shows them, IRModules compare function by function, and the assertion names the
first difference."""

from __future__ import annotations

import pytest

from mlc import te, tir
from mlc.script import R, T, from_source, ir_module
from mlc.tir import SeqStmt


def _schedule() -> tir.Schedule:
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((16, 16), lambda i, j: C[i, j] + 1, name="D")
    return tir.Schedule(te.create_prim_func([A, B, D]))


@pytest.mark.parametrize("position", [0, 1, 2])
def test_decompose_reduction_round_trips_through_the_printer(position: int) -> None:
    sch = _schedule()
    blk = sch.get_block("C")
    sch.decompose_reduction(blk, sch.get_loops(blk)[position])
    f = sch.mod
    for text in (f.script(), str(f)):
        g = from_source(text)
        assert tir.structural_equal(f, g)
        tir.assert_structural_equal(f, g)
        assert tir.structural_hash(f) == tir.structural_hash(g)


def test_nested_and_single_sequences_equal_their_flat_forms() -> None:
    A = tir.Buffer("A", (4,), "float32")
    s1 = tir.BufferStore(A, tir.FloatImm(1.0), (tir.IntImm(0),))
    s2 = tir.BufferStore(A, tir.FloatImm(2.0), (tir.IntImm(1),))
    s3 = tir.BufferStore(A, tir.FloatImm(3.0), (tir.IntImm(2),))
    nested = SeqStmt((SeqStmt((s1, s2)), s3))
    flat = SeqStmt((s1, s2, s3))
    assert tir.structural_equal(nested, flat)
    assert tir.structural_hash(nested) == tir.structural_hash(flat)
    assert tir.structural_equal(SeqStmt((s1,)), s1)
    assert not tir.structural_equal(SeqStmt((s1, s2)), flat)
    with pytest.raises(AssertionError, match=r"seq\[2\].*\n  lhs: \(nothing"):
        tir.assert_structural_equal(SeqStmt((s1, s2)), flat)


MODULE = '''
@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + SHIFT

    @R.function
    def main(x: R.Tensor((8,), "float32")):
        with R.dataflow():
            gv = R.add(x, x)
            R.output(gv)
        return gv
'''


def _module(shift: str = "T.float32(1)"):
    return from_source(MODULE.replace("SHIFT", shift))


def test_ir_modules_compare_function_by_function() -> None:
    a, b = _module(), _module()
    assert a is not b
    assert tir.structural_equal(a, b)
    tir.assert_structural_equal(a, b)
    assert tir.structural_hash(a) == tir.structural_hash(b)
    c = _module("T.float32(2)")
    assert not tir.structural_equal(a, c)
    with pytest.raises(AssertionError, match=r"function 'add'.*\n  lhs: 1\.0.*\n  rhs: 2\.0"):
        tir.assert_structural_equal(a, c)
    d = _module()
    del d.functions["main"]
    assert not tir.structural_equal(a, d)
    with pytest.raises(AssertionError, match="functions"):
        tir.assert_structural_equal(a, d)
    assert not tir.structural_equal(a, a["add"])
    _ = R, T, ir_module
