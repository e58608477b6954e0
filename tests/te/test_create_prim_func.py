"""The shape of the PrimFunc that te.create_prim_func builds."""

from __future__ import annotations

from mlc import te, tir
from mlc.tir.expr import IterKind

MATMUL_TEXT = '''\
@prim_func
def main(A: Buffer((m, h), "float32"), B: Buffer((n, h), "float32"), C: Buffer((m, n), "float32")):
    for i in range(m):
        for j in range(n):
            for k in range(h):
                with block("C"):
                    vi = axis.spatial(m, i)
                    vj = axis.spatial(n, j)
                    vk = axis.reduce(h, k)
                    reads(A[vi, vk], B[vj, vk])
                    writes(C[vi, vj])
                    with init():
                        C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]'''


def transposed_matmul() -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    m, n, h = te.var("m"), te.var("n"), te.var("h")
    A = te.placeholder((m, h), name="A")
    B = te.placeholder((n, h), name="B")
    k = te.reduce_axis((0, h), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


def test_matmul_printed_form():
    A, B, C = transposed_matmul()
    assert str(te.create_prim_func([A, B, C])).strip() == MATMUL_TEXT


def test_loop_vars_are_the_op_axis_vars():
    A, B, C = transposed_matmul()
    func = te.create_prim_func([A, B, C])
    loops = []
    node = func.body.block.body
    while isinstance(node, tir.For):
        loops.append(node)
        node = node.body
    assert [lp.loop_var for lp in loops] == [*(a.var for a in C.op.axis), C.op.reduce_axis[0].var]
    assert isinstance(node, tir.BlockRealize)
    block = node.block
    assert [iv.kind for iv in block.iter_vars] == [IterKind.SPATIAL] * 2 + [IterKind.REDUCE]
    assert list(node.iter_values) == [lp.loop_var for lp in loops]
    assert [iv.var.name for iv in block.iter_vars] == ["vi", "vj", "vk"]
    # block iteration variables are fresh, not the loop variables
    assert all(iv.var is not lp.loop_var for iv, lp in zip(block.iter_vars, loops))
    assert [b for b in func.params] == [A.buffer, B.buffer, C.buffer]
    assert func.body.block.name == "root" and func.body.block.alloc_buffers == ()


def test_block_names_are_unique():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0)
    C = te.compute((4,), lambda i: B[i] * 2.0)
    D = te.compute((4,), lambda i: C[i] - 1.0)
    func = te.create_prim_func([A, D])
    names = []

    def visit(node):
        if isinstance(node, tir.Block):
            names.append(node.name)

    tir.post_order_visit(func.body, visit)
    assert names == ["compute", "compute_1", "compute_2", "root"]
    assert [b.name for b in func.body.block.alloc_buffers] == ["compute", "compute"]


def test_regions_merge_neighbouring_accesses_and_widen_others():
    A = te.placeholder((8,), name="A")
    B = te.compute((6,), lambda i: A[i] + A[i + 2] + A[i + 1], name="B")
    C = te.compute((6,), lambda i: A[i * 2 % 8] + A[i], name="C")
    text = str(te.create_prim_func([A, B, C]))
    assert "reads(A[vi:vi + 3])" in text
    assert "reads(A[0:8])" in text


def test_reducer_where_wraps_update_in_if():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    S = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, where=A[i, k] > 0.0), name="S")
    text = str(te.create_prim_func([A, S]))
    assert "if A[vi, vk] > 0.0:\n" in text
    assert "S[vi] = S[vi] + A[vi, vk]" in text


def test_scan_blocks():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    Y = te.scan(s_init, s_update, s_state, inputs=[X])
    func = te.create_prim_func([X, Y])
    text = str(func)
    assert 'with block("scan_init")' in text
    assert 'with block("scan_update")' in text
    assert "scan[vt, vi_1] = scan[vt - 1, vi_1] + X[vt, vi_1]" in text
    assert [b.name for b in func.params] == ["X", "scan"]


def test_tensor_and_op_attributes():
    A, B, C = transposed_matmul()
    assert C.ndim == 2 and C.dtype == "float32" and C.name == "C"
    assert C.op.name == "C" and C.op.output(0) is C
    assert C.op.input_tensors == [A, B]
    assert [a.var.name for a in C.op.axis] == ["i", "j"]
    assert C.op.reduce_axis[0].var.name == "k"
    assert isinstance(C.op.body[0], tir.Reduce)
    assert A.op.input_tensors == []
    R = te.compute(C.shape, lambda *i: te.max(C[i], 0.0), name="R")
    assert [a.var.name for a in R.op.axis] == ["i0", "i1"]
