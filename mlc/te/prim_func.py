"""``te.create_prim_func``: from tensor expressions to a loop program of blocks.

Each ``te.compute`` becomes one loop nest around one block (TensorIR style)::

    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    te.create_prim_func([A, B, C])

gives (printed)::

    for i in range(m):
        for j in range(n):
            for k in range(h):
                with block("C"):
                    vi = axis.spatial(m, i)
                    vj = axis.spatial(n, j)
                    vk = axis.reduce(h, k)
                    reads(A[vi, vk], B[vk, vj])
                    writes(C[vi, vj])
                    with init():
                        C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

The loop variables are the op's own axis variables (``C.op.axis[0].var`` is the loop ``i``),
so the te-style schedule can find a loop from a te axis. The block has fresh iteration
variables ``vi, vj, vk`` bound to the loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mlc.errors import TEError
from mlc.te.external import describe
from mlc.te.operation import ComputeOp, ExternOp, PlaceholderOp, ScanOp, Tensor
from mlc.te.region import collect_regions
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    BufferLoad,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    SizeVar,
    Var,
    const,
)
from mlc.tir.functor import IRMutator, collect, substitute
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    Stmt,
    seq,
)


def _topo_order(outputs: Sequence[Tensor]) -> list[Tensor]:
    """Every tensor the outputs depend on, producers first."""
    order: list[Tensor] = []
    seen: set[int] = set()
    for out in outputs:  # depth first, without recursion: a chain of 10,000 stages is fine
        stack: list[tuple[Tensor, bool]] = [(out, False)]
        while stack:
            t, inputs_done = stack.pop()
            if id(t.op) in seen:
                continue
            if inputs_done:
                seen.add(id(t.op))
                order.append(t.op.output(0))
                continue
            stack.append((t, True))
            stack.extend((inp, False) for inp in reversed(t.op.input_tensors)
                         if id(inp.op) not in seen)
    return order


class _UniqueNames:
    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, name: str) -> str:
        if name not in self.used:
            self.used.add(name)
            return name
        k = 1
        while f"{name}_{k}" in self.used:
            k += 1
        self.used.add(f"{name}_{k}")
        return f"{name}_{k}"


class _RetargetBuffer(IRMutator):
    """Loads of ``old`` become loads of ``new`` (the scan state becomes the output)."""

    def __init__(self, old: Buffer, new: Buffer) -> None:
        self.old, self.new = old, new

    def visit_BufferLoad(self, op: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in op.indices)
        buf = self.new if op.buffer is self.old else op.buffer
        if buf is op.buffer and all(a is b for a, b in zip(indices, op.indices)):
            return op
        return BufferLoad(buf, indices)


def _block_var(iv: IterVar, kind: IterKind) -> IterVar:
    return IterVar(Var("v" + iv.var.name, iv.var.dtype), iv.dom, kind)


def _loop(var: Var, dom: Range, body: Stmt) -> For:
    return For(var, dom.min, dom.extent, ForKind.SERIAL, body)


def _compute_nest(
    op: ComputeOp,
    out: Buffer,
    block_name: str,
    axes: Sequence[IterVar] | None = None,
    kinds: Sequence[IterKind] | None = None,
    retarget: tuple[Buffer, Buffer] | None = None,
) -> Stmt:
    """Loops over ``axes`` (default ``op.axis``) and the reduce axes around one block that
    stores ``op.body`` into ``out``."""
    axes = list(axes if axes is not None else op.axis)
    kinds = list(kinds if kinds is not None else [IterKind.SPATIAL] * len(axes))
    body = op.body[0]
    if retarget is not None:
        body = _RetargetBuffer(*retarget).visit(body)
    reduce = body if isinstance(body, Reduce) else None
    raxes = list(reduce.axis) if reduce is not None else []
    iter_vars = [_block_var(a, k) for a, k in zip(axes, kinds)]
    iter_vars += [_block_var(r, IterKind.REDUCE) for r in raxes]
    loop_axes = axes + raxes
    mapping: dict[Var, PrimExpr] = {a.var: v.var for a, v in zip(loop_axes, iter_vars)}
    spatial = tuple(v.var for v in iter_vars[: len(axes)])
    write = BufferRegion(out, tuple(Range(v, const(1, v.dtype)) for v in spatial))

    init: Stmt | None = None
    if reduce is None:
        value = substitute(body, mapping)
        reads = collect_regions(value)
        stmt: Stmt = BufferStore(out, value, spatial)
    else:
        src = substitute(reduce.source, mapping)
        cond = substitute(reduce.condition, mapping)
        comb = reduce.combiner
        current = BufferLoad(out, spatial)
        combined = substitute(comb.result, {comb.lhs: current, comb.rhs: src})
        stmt = BufferStore(out, combined, spatial)
        if not (isinstance(cond, IntImm) and cond.value == 1):
            stmt = IfThenElse(cond, stmt)
            reads = collect_regions((src, cond))
        else:
            reads = collect_regions(src)
        init = BufferStore(out, comb.identity, spatial)

    block = Block(block_name, tuple(iter_vars), tuple(reads), (write,), stmt, init)
    nest: Stmt = BlockRealize(tuple(a.var for a in loop_axes), const(True), block)
    for a in reversed(loop_axes):
        nest = _loop(a.var, a.dom, nest)
    return nest


def _scan_nest(op: ScanOp, names: _UniqueNames) -> Stmt:
    """Rows ``[0, k)`` from the init block, then a loop over the scan axis (from ``k``) with
    the update block inside; the update reads earlier rows of the output buffer."""
    out = op.output(0).buffer
    init_op, upd_op = op.init.op, op.update.op
    assert isinstance(init_op, ComputeOp) and isinstance(upd_op, ComputeOp)
    state = op.state_placeholder.buffer
    init_nest = _compute_nest(init_op, out, names(op.name + "_init"), retarget=(state, out))
    time = op.scan_axis
    steps: list[Stmt] = []
    for body_op in [*op.body_ops, upd_op]:
        # each stage of the body computes its row ``t`` inside the one time loop
        first = IterVar(body_op.axis[0].var, time.dom, IterKind.ORDERED)
        axes = [first, *body_op.axis[1:]]
        kinds = [IterKind.ORDERED] + [IterKind.SPATIAL] * (len(axes) - 1)
        if body_op is upd_op:
            buf, name = out, names(op.name + "_update")
        else:
            buf, name = body_op.output(0).buffer, names(body_op.name)
        nest = _compute_nest(body_op, buf, name, axes=axes, kinds=kinds, retarget=(state, out))
        if not isinstance(nest, For):  # pragma: no cover - _compute_nest starts with a loop
            raise TEError(f"te.scan: the stage {body_op.name!r} has no time axis")
        steps.append(substitute(nest.body, {first.var: time.var}))
    return seq(init_nest, _loop(time.var, time.dom, seq(*steps)))


def _extern_block(op: ExternOp, block_name: str) -> Stmt:
    """One block, no loops: reads every input whole, writes every output whole."""
    def whole(buf: Buffer) -> BufferRegion:
        return BufferRegion(buf, tuple(Range(const(0, s.dtype), s) for s in buf.shape))

    assert op.body is not None  # te.extern sets it
    reads = tuple(whole(t.buffer) for t in op.input_tensors)
    writes = tuple(whole(t.buffer) for t in op.outputs)
    block = Block(block_name, (), reads, writes, op.body, annotations=(("extern", describe(op)),))
    return BlockRealize((), const(True), block)


def create_prim_func(tensors: Sequence[Tensor | Var], name: str = "main") -> PrimFunc:
    """A PrimFunc computing ``tensors``: its parameters are their buffers in this order
    (inputs and outputs alike); tensors that are computed on the way but not listed become
    intermediate buffers of the root block. A variable in the list (``te.var("bias",
    "float32")``) is a scalar parameter, passed by value at its place in the call."""
    found, scalars = split_arguments(tensors, "te.create_prim_func")
    func = prim_func_of(found, name, scalars)
    check_free_vars(func, "te.create_prim_func")
    return func


def prim_func_of(
    tensors: Sequence[Tensor], name: str = "main", scalars: tuple[tuple[int, Var], ...] = ()
) -> PrimFunc:
    """:func:`create_prim_func` without the check that every variable has a value (a te
    schedule starts from this and learns its scalar parameters from ``mlc.build``)."""
    param_ids = {id(t.op) for t in tensors}
    param_bufs = {id(t.buffer) for t in tensors}
    names = _UniqueNames()
    stmts: list[Stmt] = []
    allocs: list[Buffer] = []
    for t in _topo_order(tensors):
        op = t.op
        if isinstance(op, PlaceholderOp):
            if id(op) not in param_ids:
                listed = ", ".join(x.name for x in tensors)
                raise TEError(
                    f"te.create_prim_func: the computation reads placeholder {t.name!r}, "
                    f"which is not in the argument list [{listed}]; add it"
                )
            continue
        if isinstance(op, ExternOp):  # several outputs: each is a parameter or allocated
            allocs.extend(o.buffer for o in op.outputs if id(o.buffer) not in param_bufs)
            stmts.append(_extern_block(op, names(op.name)))
            continue
        if id(op) not in param_ids:
            allocs.append(t.buffer)
        if isinstance(op, ComputeOp):
            stmts.append(_compute_nest(op, t.buffer, names(op.name)))
        elif isinstance(op, ScanOp):
            allocs.extend(b.output(0).buffer for b in op.body_ops)
            stmts.append(_scan_nest(op, names))
        else:  # pragma: no cover - only te's own ops exist
            raise TEError(f"te.create_prim_func: cannot handle {type(op).__name__}")
    root = Block("root", (), (), (), seq(*stmts), alloc_buffers=tuple(allocs))
    return PrimFunc(tuple(t.buffer for t in tensors), BlockRealize((), const(True), root), name,
                    scalars=scalars)


SCALAR_PARAM_DTYPES = tuple(d for d in dt.SCALAR_DTYPES if d != "float16")


def split_arguments(
    args: Sequence[Any], where: str
) -> tuple[list[Tensor], tuple[tuple[int, Var], ...]]:
    """The tensors of an argument list, and its scalar variables with their positions:
    ``[A, B, D, bias]`` -> ``([A, B, D], ((3, bias),))``."""
    tensors: list[Tensor] = []
    scalars: list[tuple[int, Var]] = []
    for k, a in enumerate(args):
        if isinstance(a, Tensor):
            if any(t.buffer is a.buffer for t in tensors):
                raise TEError(f"{where}: the tensor {a.name!r} is in the argument list twice; "
                              "list each tensor once (a function's arrays are distinct)")
            tensors.append(a)
        elif isinstance(a, Var):
            if any(v is a for _, v in scalars):
                raise TEError(f"{where}: the variable {a.name!r} is in the argument list twice")
            if a.dtype not in SCALAR_PARAM_DTYPES:
                raise TEError(
                    f"{where}: the scalar parameter {a.name!r} has dtype {a.dtype}; a scalar "
                    f"parameter is one of {', '.join(SCALAR_PARAM_DTYPES)} (for float16, "
                    "pass a float32 and te.cast it)"
                )
            scalars.append((k, a))
        else:
            raise TEError(
                f"{where} takes a list of tensors (placeholders and outputs) and scalar "
                f"variables (te.var(\"alpha\", \"float32\")), got {a!r}"
            )
    return tensors, tuple(scalars)


def check_free_vars(func: PrimFunc, where: str) -> None:
    """Refuse a program that uses a ``te.var`` that is neither a size of a parameter (in a
    shape) nor a scalar parameter: nothing would give it a value."""
    known = {id(v) for v in func.size_vars} | {id(v) for _, v in func.scalars}
    free = collect(func.body, lambda n: isinstance(n, SizeVar) and id(n) not in known)
    if free:
        names = ", ".join(sorted({v.name for v in free}))
        raise TEError(
            f"{where}: the computation uses the variable(s) {names}, which are neither a "
            "size in some argument's shape nor in the argument list; pass each as an "
            f"argument (mlc.build(s, [A, ..., {free[0].name}])) so the call gives it a value"
        )
