"""Visitors walk the expressions inside buffer definitions (issue 25).

A buffer's shape and strides are expressions that code generation emits as run-time code
(an ``Allocate`` of ``n * 4`` elements computes ``n * 4`` when it runs). A visitor that skipped
them let a check (``autograder.program``: "no call_extern in the graded program") miss a call
hidden in ``T.alloc_buffer((T.call_extern("int32", "getpid") * 0 + 2,), ...)``.
"""

from __future__ import annotations

import pytest

from mlc.script import from_source
from mlc.tir import Call, IRVisitor, post_order_visit
from mlc.tir.functor import collect, contains

CALL = 'T.call_extern("int32", "getpid") * 0'

PROGRAMS = {
    "Allocate shape": f"""
@T.prim_func
def main(A: T.Buffer((2, 9), "float32"), B: T.Buffer((2, 9), "float32")):
    tmp = T.alloc_buffer(({CALL} + 2,), "float32")
    for i, j in T.grid(2, 9):
        B[i, j] = A[i, j]
""",
    "Allocate strides": f"""
@T.prim_func
def main(A: T.Buffer((2, 9), "float32"), B: T.Buffer((2, 9), "float32")):
    tmp = T.alloc_buffer((2, 9), "float32", strides=({CALL} + 9, 1))
    for i, j in T.grid(2, 9):
        tmp[i, j] = A[i, j]
    for i, j in T.grid(2, 9):
        B[i, j] = tmp[i, j]
""",
    "block alloc_buffers": f"""
@T.prim_func
def main(A: T.Buffer((2, 9), "float32"), B: T.Buffer((2, 9), "float32")):
    with T.block("root"):
        tmp = T.alloc_buffer(({CALL} + 2, 9), "float32")
        for i, j in T.grid(2, 9):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]
""",
    "match_buffer strides": f"""
@T.prim_func
def main(a: T.handle, B: T.Buffer((2, 9), "float32")):
    A = T.match_buffer(a, (2, 9), "float32", strides=({CALL} + 9, 1))
    for i, j in T.grid(2, 9):
        B[i, j] = A[i, j]
""",
    "decl_buffer shape": f"""
@T.prim_func
def main(A: T.Buffer((2, 9), "float32"), B: T.Buffer((2, 9), "float32")):
    tmp = T.decl_buffer(({CALL} + 18,), "float32")
    for i, j in T.grid(2, 9):
        B[i, j] = A[i, j]
""",
}


def _is_extern(node: object) -> bool:
    return isinstance(node, Call) and node.op == "call_extern"


@pytest.mark.parametrize("where", sorted(PROGRAMS))
def test_a_call_in_a_buffer_definition_is_seen(where):
    func = from_source(PROGRAMS[where])
    seen: list[str] = []
    post_order_visit(func, lambda n: seen.append(n.op) if _is_extern(n) else None)
    assert seen == ["call_extern"], where
    assert contains(func, _is_extern)
    assert len(collect(func, _is_extern)) == 1


def test_a_subclass_that_only_defines_visit_call_sees_it():
    class Calls(IRVisitor):
        def __init__(self) -> None:
            self.names: list[str] = []

        def visit_Call(self, node: Call) -> None:
            self.names.append(str(node.args[0]) if node.args else node.op)
            self.generic_visit(node)

    visitor = Calls()
    visitor.visit(from_source(PROGRAMS["Allocate shape"]).body)
    assert any("getpid" in n for n in visitor.names), visitor.names


def test_a_buffer_used_many_times_is_walked_once_where_it_is_defined():
    """Loads and stores refer to a buffer; only its definition owns the shape."""
    func = from_source("""
@T.prim_func
def main(A: T.Buffer((2, 9), "float32"), B: T.Buffer((2, 9), "float32")):
    tmp = T.alloc_buffer((2, 9), "float32")
    for i, j in T.grid(2, 9):
        tmp[i, j] = A[i, j]
    for i, j in T.grid(2, 9):
        B[i, j] = tmp[i, j] + tmp[i, j]
""")

    class Definitions(IRVisitor):
        def __init__(self) -> None:
            self.names: list[str] = []

        def visit_buffer_definition(self, buf) -> None:
            self.names.append(buf.name)
            super().visit_buffer_definition(buf)

    body = Definitions()
    body.visit(func.body)
    assert body.names == ["tmp"]
    whole = Definitions()
    whole.visit(func)
    assert whole.names == ["A", "B", "tmp"]


def test_a_mutator_rewrites_a_defined_buffers_shape_and_its_references_follow():
    """substitute(n -> 8) on a body whose intermediate is n long: the Allocate's buffer gets
    the new shape and every load and store refers to that same new buffer."""
    from mlc.tir import Var
    from mlc.tir.expr import BufferLoad
    from mlc.tir.functor import substitute
    from mlc.tir.stmt import Allocate, BufferStore

    func = from_source("""
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), n: T.int32):
    tmp = T.alloc_buffer((n * 2,), "float32")
    for i in range(16):
        tmp[i] = A[i]
    for i in range(16):
        B[i] = tmp[i]
""")
    alloc = collect(func.body, lambda x: isinstance(x, Allocate))[0]
    (n,) = [v for _, v in func.scalars]
    assert isinstance(n, Var)
    body = substitute(func.body, {n: 8})
    new_alloc = collect(body, lambda x: isinstance(x, Allocate))[0]
    assert str(new_alloc.buffer.shape[0]) in ("8 * 2", "16")
    assert new_alloc.buffer is not alloc.buffer and new_alloc.buffer.data is alloc.buffer.data
    uses = collect(body, lambda x: isinstance(x, (BufferLoad, BufferStore))
                   and x.buffer.name == "tmp")
    assert len(uses) == 2 and all(u.buffer is new_alloc.buffer for u in uses)
    # nothing to change: the same objects come back
    assert substitute(func.body, {Var("other", "int32"): 1}) is func.body
