"""The script parser reads every function of the intrinsic table (mlc.tir.intrin), the one
list of names: what the printer writes for any Call reads back to the same program."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScriptError
from mlc.script import from_source
from mlc.tir import intrin

FLOAT_ROWS = sorted(n for n, row in intrin.INTRINSICS.items() if row.float_only)


@pytest.mark.parametrize("name", FLOAT_ROWS)
def test_every_float_intrinsic_reads_back(name: str) -> None:
    row = intrin.INTRINSICS[name]
    args = ", ".join("A[vi]" if k == 0 else "T.float32(0.5)" for k in range(row.arity))
    text = f'''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = T.{name}({args})
'''
    func = from_source(text)
    back = from_source(func.script())
    tir.assert_structural_equal(func, back)
    a = np.array([0.25, 0.5, 1.0, 2.0], "float32")
    b = np.empty(4, "float32")
    mlc.build(func, target="llvm")(a, b)
    others = [np.float32(0.5)] * (row.arity - 1)
    np.testing.assert_allclose(b, row.numpy(a, *others).astype("float32"), rtol=1e-5)


def test_integer_and_codegen_rows_read_back_with_their_dtypes() -> None:
    # a lowered program with a per-dimension index check: check_index(i, n, "...")
    X = te.placeholder((3, 3), name="X")
    G = te.placeholder((4,), "int32", name="G")
    B = te.compute((4,), lambda i: X[1, G[i]], name="B")
    lowered = mlc.lower(te.create_schedule(B.op), [X, G, B])
    assert "check_index(T.int64(G[i]), 3," in lowered.script()
    back = from_source(lowered.script())
    tir.assert_structural_equal(lowered, back, map_free_vars=True)
    text = '''
@T.prim_func
def main(A: T.Buffer((4,), "uint16"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = T.bf16_to_f32(A[vi])
'''
    call = from_source(text).body
    assert "bf16_to_f32" in str(call)
    found = []
    tir.post_order_visit(call, lambda n: found.append(n) if isinstance(n, tir.Call) else None)
    assert found and found[0].dtype == "float32"


def test_unknown_function_lists_the_tables_names() -> None:
    text = '''
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("A"):
            vi = T.axis.spatial(4, i)
            A[vi] = T.expp(A[vi])
'''
    with pytest.raises(ScriptError, match=r"unknown function T.expp.*log1p.*tanh"):
        from_source(text)
