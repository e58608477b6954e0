"""Statements of the loop IR, buffers, blocks and the PrimFunc.

A ``PrimFunc`` made by ``te.create_prim_func`` has a root ``Block`` whose body is a nest of
``For`` loops around ``BlockRealize`` nodes. A block is a unit of computation with named
iteration variables (spatial or reduce) bound to expressions of the loops around it, the
regions it reads and writes, and an optional ``init`` for reductions. Schedule primitives
rewrite this tree; lowering removes the blocks and flattens buffers to one dimension.
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Any

from mlc.tir.expr import IterVar, PrimExpr, Range, Var, _node


class _Printable:
    def __repr__(self) -> str:
        from mlc.tir.printer import to_str

        return to_str(self)

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)


@_node
class Buffer(_Printable):
    """A named multi-dimensional array. ``scope`` is where it lives (``"global"``, ``"local"``,
    ``"shared"``); ``strides`` is empty for a compact row-major layout (storage_align sets it);
    ``data`` is the pointer variable codegen uses."""

    name: str
    shape: tuple[PrimExpr, ...]
    dtype: str = "float32"
    scope: str = "global"
    strides: tuple[PrimExpr, ...] = ()
    data: Var = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.data is None:
            object.__setattr__(self, "data", Var(self.name, "handle"))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> PrimExpr:
        from mlc.tir.expr import BufferLoad, convert

        if not isinstance(indices, tuple):
            indices = (indices,)
        return BufferLoad(self, tuple(convert(i) for i in indices))


@_node
class BufferRegion(_Printable):
    """The part of a buffer a block touches: one Range per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unroll"
    THREAD_BINDING = "thread_binding"


class Stmt(_Printable):
    """Base class of statements."""


@_node
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]


@_node
class Evaluate(Stmt):
    value: PrimExpr


@_node
class SeqStmt(Stmt):
    seq: tuple[Stmt, ...]


@_node
class For(Stmt):
    """``for loop_var in range(min, min + extent)``, run as ``kind`` says. ``thread_binding``
    names the GPU axis (``"threadIdx.x"``) when kind is THREAD_BINDING."""

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: str | None = None
    annotations: tuple[tuple[str, Any], ...] = ()


@_node
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@_node
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@_node
class Allocate(Stmt):
    """Memory for ``buffer`` (in its scope) that lives during ``body``."""

    buffer: Buffer
    body: Stmt


@_node
class KernelLaunch(Stmt):
    """One GPU kernel launched from the host program (made by the GPU targets' pass
    :func:`mlc.target.gpu.split_host_device`).

    ``body`` is the *per-thread program*: what one thread of one block runs, with
    ``thread_vars`` standing for the built-in indices (``blockIdx.x``, ``threadIdx.x``...);
    ``grid_extents`` gives the number of blocks per blockIdx axis, ``thread_extents`` the
    (constant) threads per threadIdx axis. ``pointers`` are the global buffers' data variables
    the kernel uses (its pointer parameters) with their element dtypes in ``pointer_dtypes``,
    ``size_vars`` the symbolic sizes it reads, ``shared`` its per-block buffers. Printed as::

        with launch_kernel("add_kernel", blockIdx_x=8, threadIdx_x=64):
            i_0 = blockIdx.x
            ...
    """

    name: str
    body: Stmt
    grid_extents: tuple[tuple[str, PrimExpr], ...]
    thread_extents: tuple[tuple[str, int], ...]
    thread_vars: tuple[tuple[str, Var], ...]
    pointers: tuple[Var, ...] = ()
    pointer_dtypes: tuple[str, ...] = ()
    size_vars: tuple[Var, ...] = ()
    shared: tuple[Buffer, ...] = ()

    @property
    def grid(self) -> dict[str, PrimExpr]:
        """The extent of each blockIdx axis the kernel uses."""
        return dict(self.grid_extents)

    @property
    def threads(self) -> dict[str, int]:
        """The extent of each threadIdx axis the kernel uses."""
        return dict(self.thread_extents)

    @property
    def index_vars(self) -> dict[str, Var]:
        """The variable standing for each built-in index in ``body``."""
        return dict(self.thread_vars)

    @property
    def threads_per_block(self) -> int:
        n = 1
        for _, v in self.thread_extents:
            n *= v
        return n


@_node
class Block(Stmt):
    """A named unit of computation (TensorIR's block).

    ``iter_vars`` are the block's own variables (spatial or reduce) with their domains;
    ``reads``/``writes`` the buffer regions it touches, in terms of those variables;
    ``init`` runs before the first step of a reduction; ``alloc_buffers`` are buffers that
    live inside the block (the root block holds the intermediates)."""

    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    annotations: tuple[tuple[str, Any], ...] = ()


@_node
class BlockRealize(Stmt):
    """A block placed in a loop nest: ``iter_values[i]`` is the value of
    ``block.iter_vars[i]`` in terms of the surrounding loop variables; the block runs only
    where ``predicate`` holds (a split that does not divide adds one)."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block


@_node
class PrimFunc(_Printable):
    """A tensor program: buffers in, buffers out, a body. Symbolic sizes are variables in
    the parameters' shapes and bind from the arrays at call time.

    ``scalars`` are the parameters passed by value (TVM's ``te.var("bias", "float32")`` in
    the argument list, TVMScript's ``alpha: T.float32``): ``(position, var)`` pairs, where
    ``position`` is the place of the argument in the call, counting buffers and scalars
    together. ``params`` stays the buffers alone, so a pass that walks the buffers never
    meets a scalar; :attr:`arguments` is the call's order::

        f = mlc.build(s, [A, B, D, bias])    # params (A, B, D), scalars ((3, bias),)
        f(a, b, d, 10.0)
    """

    params: tuple[Buffer, ...]
    body: Stmt
    name: str = "main"
    attrs: tuple[tuple[str, Any], ...] = ()
    scalars: tuple[tuple[int, Var], ...] = ()

    def _repr_html_(self) -> str:
        from mlc.tir.printer_html import to_html

        return to_html(self)

    def show(self) -> None:
        print(self)

    def script(self) -> str:
        """The program as TVMScript (``@T.prim_func``, ``T.block``...), which
        ``mlc.script.from_source`` reads back."""
        from mlc.tir.printer import to_str

        return to_str(self, script=True)

    def with_body(self, body: Stmt) -> PrimFunc:
        return PrimFunc(self.params, body, self.name, self.attrs, self.scalars)

    @property
    def arguments(self) -> tuple[Buffer | Var, ...]:
        """The parameters in the order of the call: buffers and scalar variables."""
        args: list[Buffer | Var] = list(self.params)
        for position, var in sorted(self.scalars, key=lambda pv: pv[0]):
            args.insert(position, var)
        return tuple(args)

    @property
    def scalar_args(self) -> tuple[Var, ...]:
        """The scalar parameters the native function takes after the sizes, each with its
        own type: ``name(A_ptr, ..., n, alpha)``. A scalar that is also a symbolic size
        (``n`` in a shape and in the argument list) is passed once, as the size."""
        sizes = {id(v) for v in self.size_vars}
        return tuple(v for _, v in sorted(self.scalars, key=lambda pv: pv[0])
                     if id(v) not in sizes)

    def attr(self, key: str, default: Any = None) -> Any:
        return dict(self.attrs).get(key, default)

    @property
    def size_vars(self) -> tuple[Var, ...]:
        """The symbolic sizes in the parameters' shapes, in order of first appearance. They
        bind from the arrays at call time and follow the data pointers in the native
        signature: ``name(A_ptr, B_ptr, ..., n, m)`` (each an int64)."""
        from mlc.tir.functor import collect  # functor imports this module

        found: list[Var] = []
        for buf in self.params:
            for dim in (*buf.shape, *buf.strides):
                if not isinstance(dim, PrimExpr):
                    continue  # a plain int in a hand-built buffer
                for v in collect(dim, lambda n: isinstance(n, Var)):
                    if all(v is not f for f in found):
                        found.append(v)
        return tuple(found)


def seq(*stmts: Stmt | None) -> Stmt:
    """A SeqStmt of the non-empty statements, flattened; one statement stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))
