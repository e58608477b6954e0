"""Features of a scheduled loop program, for the cost model (AutoTVM's "itervar" features).

For each loop of the program's deepest nest we record, log-scaled:

* its extent, nesting level, the product of the extents above it (top-down) and below it
  (bottom-up), and a one-hot of its kind (serial, parallel, vectorized, unrolled, bound to a
  GPU thread);
* the arithmetic inside it (float adds/muls/divs, math calls, integer ops) times how often
  it runs;
* for each buffer the innermost block touches: the stride of the access along this loop,
  the bytes the loop touches, and the reuse (iterations per distinct element).

``loop_context(func)`` returns these per-loop rows (the TVM paper's "loop context vectors")
as dataclasses, innermost loop first; ``itervar_features(func)`` flattens them, log-scaled,
into a fixed-length list of floats, so programs with different nests can feed one xgboost
model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlc.errors import MLCTypeError
from mlc.tir import dtype as dt
from mlc.tir.arith import evaluate_int
from mlc.tir.deep import retry_deeper
from mlc.tir.expr import (
    Add,
    BufferLoad,
    Call,
    Div,
    IntImm,
    Mul,
    PrimExpr,
    Sub,
    Var,
)
from mlc.tir.functor import post_order_visit, substitute
from mlc.tir.stmt import BlockRealize, Buffer, BufferStore, For, ForKind, PrimFunc, Stmt

MAX_LOOPS = 8
MAX_BUFFERS = 3
KINDS = (ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED,
         ForKind.THREAD_BINDING)
PER_BUFFER = 3
PER_LOOP = 4 + len(KINDS) + 4 + PER_BUFFER * MAX_BUFFERS
LENGTH = MAX_LOOPS * PER_LOOP + 2


def _log(x: float) -> float:
    return math.log2(1.0 + max(x, 0.0))


@dataclass
class _Access:
    buffer: Buffer
    indices: tuple[PrimExpr, ...]


@dataclass
class _Nest:
    loops: list[For]
    accesses: list[_Access]
    ops: dict[str, int]


def _extent(loop: For) -> int:
    return loop.extent.value if isinstance(loop.extent, IntImm) else 64


def _nests(func: PrimFunc) -> list[_Nest]:
    """Every block with the loops around it and its accesses, bindings substituted."""
    found: list[_Nest] = []

    def walk(stmt: Stmt, loops: list[For]) -> None:
        if isinstance(stmt, For):
            walk(stmt.body, [*loops, stmt])
        elif isinstance(stmt, BlockRealize):
            block = stmt.block
            if block.iter_vars:
                mapping = {iv.var: val for iv, val in zip(block.iter_vars, stmt.iter_values)}
                body = substitute(block.body, mapping)
                found.append(_Nest(loops, _accesses(body), _op_counts(body)))
            walk(block.body, loops)
        else:
            for name in ("body", "then_case", "else_case"):
                child = getattr(stmt, name, None)
                if isinstance(child, Stmt):
                    walk(child, loops)
            for child in getattr(stmt, "seq", ()):
                walk(child, loops)

    walk(func.body, [])
    return found


def _accesses(body: Stmt) -> list[_Access]:
    out: list[_Access] = []

    def visit(n: object) -> None:
        if isinstance(n, (BufferLoad, BufferStore)):
            if all(a.buffer is not n.buffer for a in out):
                out.append(_Access(n.buffer, n.indices))

    post_order_visit(body, visit)
    return out


def _op_counts(body: Stmt) -> dict[str, int]:
    counts = {"fadd": 0, "fmul": 0, "fdiv": 0, "call": 0, "int": 0}

    def visit(n: object) -> None:
        if isinstance(n, (Add, Sub, Mul, Div)):
            is_float = dt.is_float(n.dtype)
            if isinstance(n, (Add, Sub)):
                counts["fadd" if is_float else "int"] += 1
            elif isinstance(n, Mul):
                counts["fmul" if is_float else "int"] += 1
            else:
                counts["fdiv" if is_float else "int"] += 1
        elif isinstance(n, Call):
            counts["call"] += 1

    post_order_visit(body, visit)
    return counts


def _flat_index(access: _Access) -> PrimExpr | None:
    shape = access.buffer.shape
    if not all(isinstance(s, IntImm) for s in shape):
        return None
    index: PrimExpr = IntImm(0)
    for idx, size in zip(access.indices, shape):
        index = index * size + idx
    return index


def _stride(flat: PrimExpr | None, var: Var, others: list[Var]) -> float:
    if flat is None:
        return 0.0
    base = {v: 0 for v in others}
    try:
        a = evaluate_int(flat, {**base, var: 0})
        b = evaluate_int(flat, {**base, var: 1})
    except (MLCTypeError, ZeroDivisionError):  # an index read from data, a division by zero
        return 0.0
    return float(abs(b - a))


@dataclass(frozen=True)
class BufferContext:
    """How one loop of the nest moves through one buffer."""

    buffer: str
    stride: float  # elements between this loop's consecutive iterations (0: does not move)
    touched_bytes: int  # bytes one full run of this loop (and the loops inside) touches
    reuse: float  # iterations of this loop and the loops inside per element touched


@dataclass(frozen=True)
class LoopContext:
    """One loop's context vector (the "loop context vectors" of the TVM paper's cost model)."""

    loop: str
    extent: int
    kind: ForKind
    depth: int  # 0 for the outermost loop
    outer: int  # iterations of the loops outside this one: how often this loop is entered
    top_down: int  # outer * extent: how often its body runs
    bottom_up: int  # iterations of this loop and the loops inside it
    ops: tuple[tuple[str, int], ...]  # (fadd, n), (fmul, n), ...: the whole nest's ops
    buffers: tuple[BufferContext, ...]


def _deepest(func: PrimFunc) -> _Nest | None:
    nests = _nests(func)
    if not nests:
        return None
    return max(nests, key=lambda n: (len(n.loops), math.prod(_extent(lp) for lp in n.loops)))


def loop_context(func: PrimFunc) -> list[LoopContext]:
    """The context vector of every loop around ``func``'s deepest block (a scheduled,
    block-level PrimFunc), innermost loop first: the order of :func:`itervar_features`,
    which is built from these rows. For the 8 x 8 x 8 matmul of the TVM paper's loop
    context vectors (Chen et al., OSDI 2018) ``for y, x, k: C[y, x] += A[k, y] * B[k, x]``::

        loop  extent  outer   touched elements (bytes / 4)
                                C     A     B
        k          8     64     1     8     8
        x          8      8     8     8    64
        y          8      1    64    64    64

    A loop whose extent is not a constant counts as 64 iterations.
    """
    return retry_deeper(lambda: _loop_context(func))


def _loop_context(func: PrimFunc) -> list[LoopContext]:
    nest = _deepest(func)
    if nest is None:
        return []
    loops = nest.loops
    extents = [_extent(lp) for lp in loops]
    loop_vars = [lp.loop_var for lp in loops]
    accesses = nest.accesses
    flats = [_flat_index(a) for a in accesses]
    strides = [[_stride(f, v, loop_vars) for v in loop_vars] for f in flats]
    total = math.prod(extents) if extents else 1
    ops = tuple((k, nest.ops[k] * total) for k in ("fadd", "fmul", "fdiv", "call"))
    rows: list[LoopContext] = []
    for depth in range(len(loops) - 1, -1, -1):
        outer = math.prod(extents[:depth])
        bottom_up = math.prod(extents[depth:])
        buffers = []
        for access, stride in zip(accesses, strides):
            touched = math.prod(
                extents[d] for d in range(depth, len(loops)) if stride[d] != 0.0)
            buffers.append(BufferContext(
                buffer=access.buffer.name,
                stride=stride[depth],
                touched_bytes=touched * dt.nbytes(access.buffer.dtype),
                reuse=bottom_up / max(touched, 1),
            ))
        rows.append(LoopContext(
            loop=loops[depth].loop_var.name,
            extent=extents[depth],
            kind=loops[depth].kind,
            depth=depth,
            outer=outer,
            top_down=outer * extents[depth],
            bottom_up=bottom_up,
            ops=ops,
            buffers=tuple(buffers),
        ))
    return rows


def itervar_features(func: PrimFunc) -> list[float]:
    """A fixed-length feature vector of ``func`` (a scheduled, block-level PrimFunc): the
    :func:`loop_context` rows of its innermost ``MAX_LOOPS`` loops (``MAX_BUFFERS`` buffers
    each), log-scaled, padded with zeros, then the nest's size and depth."""
    return retry_deeper(lambda: _itervar_features(func))


def _itervar_features(func: PrimFunc) -> list[float]:
    rows = loop_context(func)
    if not rows and _deepest(func) is None:
        return [0.0] * LENGTH
    feats: list[float] = []
    # innermost loops first: they matter most, and they line up across programs
    for row in rows[:MAX_LOOPS]:
        vec = [_log(row.extent), float(row.depth), _log(row.top_down), _log(row.bottom_up)]
        vec += [1.0 if row.kind == k else 0.0 for k in KINDS]
        vec += [_log(n) for _, n in row.ops]
        for b in range(MAX_BUFFERS):
            if b >= len(row.buffers):
                vec += [0.0] * PER_BUFFER
                continue
            buf = row.buffers[b]
            vec += [_log(buf.stride), _log(buf.touched_bytes), _log(buf.reuse)]
        feats += vec
    feats += [0.0] * (MAX_LOOPS * PER_LOOP - len(feats))
    total = rows[-1].bottom_up if rows else 1
    feats += [_log(total), float(len(rows))]
    return feats


def flop_count(func: PrimFunc) -> float:
    """Floating-point operations of one run: each block's float ops times its iterations."""
    return retry_deeper(lambda: _flop_count(func))


def _flop_count(func: PrimFunc) -> float:
    total = 0.0
    for nest in _nests(func):
        n = math.prod(_extent(lp) for lp in nest.loops)
        ops = nest.ops["fadd"] + nest.ops["fmul"] + nest.ops["fdiv"] + nest.ops["call"]
        total += n * ops
    return total


def _footprint(size: int, strides: list[float], extents: list[int], depth: int,
               line_bytes: int) -> float:
    """Bytes one buffer touches inside the loops from ``depth`` in: the extents of the loops
    it moves with, in whole cache lines when its smallest stride skips them."""
    moving = [d for d in range(depth, len(extents)) if strides[d] != 0.0]
    elements = math.prod(extents[d] for d in moving)
    # inside no loop (one iteration of all of them), a load strided along the innermost loop
    # still brings a line per access
    innermost = strides[-1] if strides and strides[-1] != 0.0 else 1.0
    unit = min((strides[d] for d in moving), default=innermost)
    return elements * max(float(size), min(float(line_bytes), unit * size))


def memory_traffic(func: PrimFunc, cache_bytes: int, line_bytes: int = 64) -> float:
    """Bytes that ``func`` (a scheduled, block-level PrimFunc) moves between a cache of
    ``cache_bytes`` and the memory below it, by the working-set model a roofline needs.

    For each block, walking its loops from the outside in, the first loop whose body touches
    at most ``cache_bytes`` (every buffer's footprint: the extents of the loops it moves
    with, in whole ``line_bytes`` lines when its innermost stride skips lines) is where
    data starts to stay in the cache: each buffer is loaded once per iteration of the loops
    outside it, except that the loop just outside keeps what does not move with it (the
    previous iteration's working set still fits). Buffers in ``local`` scope (registers)
    move nothing. When the whole block fits, this is each buffer's size: compulsory
    traffic only."""
    return retry_deeper(lambda: _memory_traffic(func, cache_bytes, line_bytes))


def _memory_traffic(func: PrimFunc, cache_bytes: int, line_bytes: int = 64) -> float:
    total = 0.0
    for nest in _nests(func):
        loops = nest.loops
        extents = [_extent(lp) for lp in loops]
        loop_vars = [lp.loop_var for lp in loops]
        accesses = [a for a in nest.accesses if not a.buffer.scope.startswith("local")]
        flats = [_flat_index(a) for a in accesses]
        strides = [[_stride(f, v, loop_vars) for v in loop_vars] for f in flats]

        sizes = [dt.nbytes(a.buffer.dtype) for a in accesses]

        depth = 0
        while depth < len(loops) and sum(
            _footprint(sizes[b], strides[b], extents, depth, line_bytes)
            for b in range(len(accesses))
        ) > cache_bytes:
            depth += 1
        for b in range(len(accesses)):
            outer = math.prod(extents[:max(depth - 1, 0)])
            if depth > 0 and strides[b][depth - 1] != 0.0:
                outer *= extents[depth - 1]
            total += _footprint(sizes[b], strides[b], extents, depth, line_bytes) * outer
    return total


__all__ = [
    "BufferContext", "LoopContext", "loop_context", "itervar_features", "flop_count",
    "memory_traffic", "LENGTH",
]
