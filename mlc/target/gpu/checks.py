"""Checks that :func:`~mlc.target.gpu.split_host_device.split_host_device` makes on a GPU
program: the limits of a block (threads, shared memory), loops left unbound on the host, and
threads of different blocks exchanging data through global memory within one kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlc.errors import CodegenError, LoweringError
from mlc.tir import dtype as dt
from mlc.tir.arith import Analyzer, eval_region
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Mul,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Sub,
    Var,
    conjuncts,
    const,
)
from mlc.tir.functor import (
    IRMutator,
    IRVisitor,
    post_order_visit,
    substitute,
    uses_var,
)
from mlc.tir.stmt import (
    Buffer,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
)
from mlc.transform.flatten_buffers import without_index_widening

MAX_THREADS_PER_BLOCK = 1024
MAX_SHARED_BYTES = 48 * 1024
MAX_THREADS = {"threadIdx.x": 1024, "threadIdx.y": 1024, "threadIdx.z": 64}
"""Threads of a block along each axis (CUDA's ``maxThreadsDim``), besides 1024 in all."""
MAX_BLOCKS = {"blockIdx.x": 2**31 - 1, "blockIdx.y": 65535, "blockIdx.z": 65535}
"""Blocks of a grid along each axis (CUDA's ``maxGridSize``)."""


def launch_limit_message(name: str, tag: str, extent: int, sizes: str = "") -> str | None:
    """Why ``extent`` threads or blocks along ``tag`` cannot be launched (None if they can).
    ``sizes`` says which argument sizes gave a symbolic extent its value."""
    limit = {**MAX_THREADS, **MAX_BLOCKS}.get(tag)
    if limit is None or extent <= limit:
        return None
    what = "threads per block" if tag.startswith("threadIdx") else "blocks"
    if tag.startswith("threadIdx"):
        hint = ("split the loop bound to it and bind the outer part to a blockIdx axis"
                + (", or bind it to threadIdx.x or threadIdx.y (up to 1024)"
                   if tag == "threadIdx.z" else ""))
    else:
        hint = ("bind the larger loop to blockIdx.x (up to 2**31 - 1 blocks), or split it "
                "and bind the outer part to another blockIdx axis")
    return (f"kernel {name!r} would launch {extent} {what} along {tag}{sizes}; a GPU allows "
            f"at most {limit} along {tag}: {hint}")

BIND_HINT = (
    'bind the outer loop to blockIdx.x and the inner one to threadIdx.x, e.g. '
    'xo, xi = s[C].split(C.op.axis[0], factor=64); s[C].bind(xo, te.thread_axis("blockIdx.x")); '
    's[C].bind(xi, te.thread_axis("threadIdx.x")) (or sch.bind(loop, "blockIdx.x") with a '
    "tir.Schedule)"
)


def _unbound_message(func: PrimFunc, s: Stmt) -> str:
    if isinstance(s, For):
        what = f"the loop {s.loop_var.name!r}"
        if _contains_binding(s):
            return (
                f"{what} in {func.name!r} runs on the host around GPU loops; a kernel cannot "
                "be launched from inside a loop. Bind it to a blockIdx axis (or reorder so "
                "that the bound loops are outermost). Only a loop whose steps read what "
                "earlier steps wrote (the time loop of a te.scan) runs on the host, launching "
                "the kernels once per step"
            )
    elif isinstance(s, BufferStore):
        what = f"the store to {s.buffer.name!r}"
    else:
        what = f"a {type(s).__name__} statement"
    return (
        f"{what} in {func.name!r} is not inside any loop bound to a GPU thread axis, so it "
        f"would run on the host; for a GPU target, {BIND_HINT}"
    )


def _steps_depend(loop: For) -> bool:
    """Does ``loop`` launch kernels and read a global buffer that it also writes (a scan's
    step ``t`` reads row ``t - 1``)? Such a loop cannot be bound to blockIdx and runs on the
    host; one whose steps are independent should be bound instead."""
    if not _contains_binding(loop):
        return False
    loaded: set[int] = set()
    stored: set[int] = set()

    def check(n: object) -> None:
        if isinstance(n, (BufferLoad, BufferStore)) and n.buffer.scope == "global":
            (stored if isinstance(n, BufferStore) else loaded).add(id(n.buffer.data))

    post_order_visit(loop.body, check)
    return bool(loaded & stored)


def _contains_binding(s: Stmt) -> bool:
    found = False

    def check(n: object) -> None:
        nonlocal found
        if isinstance(n, For) and n.kind == ForKind.THREAD_BINDING:
            found = True

    post_order_visit(s, check)
    return found


def _refuse_global_exchange(name: str, body: Stmt, launch: dict[Var, Range]) -> None:
    """Refuse a kernel in which some threads read elements of a global buffer that other
    threads write (a global intermediate computed cooperatively and read back, say): the
    threads of a kernel do not wait for each other's global writes, and threads of different
    blocks cannot be made to. A read is accepted when some write of the same kernel covers
    exactly the same region in the same thread (``C[i] = C[i] + ...``, an unrolled tile
    written and read back element by element), or when no thread of the launch writes what
    it reads (a scan's step reads the row the previous launch wrote); local and shared
    buffers are the way to exchange values inside a kernel (with barriers for shared ones)."""
    accesses: dict[int, tuple[Buffer, list[_GlobalAccess]]] = {}
    dom: dict[Var, Range] = {}
    lets: dict[Var, PrimExpr] = {}
    guards: list[PrimExpr] = []
    ana = Analyzer()

    def note(buf: Buffer, kind: str, indices: tuple[PrimExpr, ...]) -> None:
        if buf.scope.partition(".")[0] in ("local", "shared", "warp") or len(indices) != 1:
            return
        index = _expand(_narrow(substitute(indices[0], lets)))
        if isinstance(index, Broadcast):
            index = index.value
        inner = dict(dom)
        if isinstance(index, Ramp):
            lane = Var("lane", index.base.dtype)
            inner[lane] = Range(const(0, index.base.dtype), const(index.lanes, index.base.dtype))
            index = index.base + lane * index.stride
        try:
            (r,) = eval_region([index], inner, None, ana)
            key = f"{ana.simplify(r.min)}|{ana.simplify(r.extent)}"
        except LoweringError:  # not affine: only the very same index counts as the same
            key = f"{index}|?"
        access = _GlobalAccess(kind, index, key, dict(inner), [_narrow(g) for g in guards])
        accesses.setdefault(id(buf.data), (buf, []))[1].append(access)

    class _Walk(IRVisitor):
        def visit_For(self, op: For) -> None:
            dom[op.loop_var] = Range(op.min, op.extent)
            self.visit(op.body)
            del dom[op.loop_var]

        def visit_LetStmt(self, op: LetStmt) -> None:
            lets[op.var] = substitute(op.value, lets)
            self.visit(op.body)
            del lets[op.var]

        def visit_IfThenElse(self, op: IfThenElse) -> None:
            self.visit(op.condition)
            guards.append(substitute(op.condition, lets))
            self.visit(op.then_case)
            guards.pop()
            if op.else_case is not None:
                self.visit(op.else_case)

        def visit_BufferLoad(self, op: BufferLoad) -> None:
            note(op.buffer, "read", op.indices)
            self.generic_visit(op)

        def visit_BufferStore(self, op: BufferStore) -> None:
            note(op.buffer, "write", op.indices)
            self.generic_visit(op)

    _Walk().visit(body)
    for buf, acc in accesses.values():
        writes = [a for a in acc if a.kind == "write"]
        keys = {a.key for a in writes}
        for a in acc:
            if a.kind != "read" or a.key in keys:
                continue
            if all(_apart(a, w, launch, ana) for w in writes):
                continue
            raise CodegenError(
                f"a GPU kernel of {name!r}: the global buffer {buf.name!r} is written by some "
                f"threads ({buf.name}[{writes[0].index}]) and read by others "
                f"({buf.name}[{a.index}]) in the same kernel; GPU threads do not wait for each "
                "other's writes to global memory, so the read may see old values. Give "
                f'{buf.name!r} the scope "shared" (sch.set_scope(block, 0, "shared"), or '
                'cache_read(..., "shared") and compute_at it under the blockIdx loop: the '
                "copy is then synchronised with __syncthreads()), or compute "
                f"{buf.name!r} in a kernel of its own (do not compute_at it inside this "
                "kernel; bind its own loops to blockIdx/threadIdx)"
            )


@dataclass
class _GlobalAccess:
    kind: str  # "read" or "write"
    index: PrimExpr  # flat, with the thread indices in place of their let variables
    key: str  # the region one thread touches, as text
    dom: dict[Var, Range]  # the serial loops around it
    guards: list[PrimExpr]  # the conditions of the ifs around it


def _apart(a: _GlobalAccess, b: _GlobalAccess, launch: dict[Var, Range], ana: Analyzer) -> bool:
    """Do ``a`` and ``b`` touch disjoint elements, whichever threads of the launch run them?"""
    spans = [_launch_span(x, launch, ana) for x in (a, b)]
    if spans[0] is None or spans[1] is None:
        return False
    (alo, ahi), (blo, bhi) = spans  # type: ignore[misc]
    return ana.can_prove(ahi < blo) or ana.can_prove(bhi < alo)


def _launch_span(
    a: _GlobalAccess, launch: dict[Var, Range], ana: Analyzer
) -> tuple[PrimExpr, PrimExpr] | None:
    """``(lowest, highest)`` element ``a`` touches over every thread and loop iteration; the
    highest is taken from a guard ``e < bound`` around it when ``index - e`` does not vary
    (the ``if i < n`` of a split that does not divide)."""
    inner = {**a.dom, **launch}
    try:
        (r,) = eval_region([a.index], inner, None, ana)
    except LoweringError:
        return None
    lo = ana.simplify(r.min)
    hi = ana.simplify(r.min + r.extent - 1)
    relaxed = list(inner)
    for g in a.guards:
        for part in conjuncts(g):
            if not isinstance(part, LT):
                continue
            shift = ana.simplify(a.index - part.a)
            if uses_var(shift, lambda v: any(v is x for x in relaxed)):
                continue
            hi = ana.simplify(part.b - 1 + shift)
    return lo, hi


def _expand(e: PrimExpr) -> PrimExpr:
    """Products distributed over sums (``(t - 1) * n`` -> ``t * n - n``), so that offsets of
    neighbouring rows of a symbolic width compare (the simplifier keeps products whole)."""

    class _Expand(IRMutator):
        def visit_Mul(self, op: Mul) -> PrimExpr:
            a, b = self.visit(op.a), self.visit(op.b)
            for x, y in ((a, b), (b, a)):
                if isinstance(x, (Add, Sub)) and dt.lanes(x.dtype) == 1:
                    left, right = self.visit(Mul(x.a, y)), self.visit(Mul(x.b, y))
                    return left + right if isinstance(x, Add) else left - right
            return a * b if (a is not op.a or b is not op.b) else op

    try:
        return _Expand().visit(e)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - keep the original when it cannot be rebuilt
        return e


def _narrow(e: PrimExpr) -> PrimExpr:
    """``e`` without the int64 casts flatten_buffers puts on offsets (for comparing them with
    the int32 guards around them; the analysis assumes no overflow) and without the
    ``check_index`` around indices (an index out of range skips the access)."""

    try:
        return _rebuild(without_index_widening(e))
    except Exception:  # noqa: BLE001 - mixed types it cannot rebuild: keep the original
        return e


def _rebuild(e: PrimExpr) -> PrimExpr:
    """Binary nodes rebuilt from their (narrowed) operands, so their dtypes agree."""

    class _Retype(IRMutator):
        def generic_visit(self, node: Any) -> Any:
            node = super().generic_visit(node)
            if isinstance(node, BinaryOp) and node.a.dtype != node.dtype and not isinstance(
                node, (LT, LE, GT, GE, EQ, NE, And, Or)
            ):
                return type(node)(node.a, node.b)
            return node

    return _Retype().visit(e)  # type: ignore[no-any-return]
