"""The verifier: is a PrimFunc well formed? Run between lowering passes in tests and under
``MLC_DEBUG=1``; a failure is a bug in the pass (or a hand-built program), shown with the
offending statement marked::

    VerifyError: the function `main` is not well formed:
      - variable `vi` (an iteration variable of block "C") is used outside its block
    @prim_func
    def main(...):
        for i in range(vi):  # <-- variable `vi` (an iteration variable of block "C") ...

Checks: every variable used is defined (a symbolic size of a parameter, a loop, block
iteration or let variable) and in scope; no variable is defined twice; every buffer used is a
parameter or allocated around its use; loads and stores have one index per dimension;
constant indices lie inside constant shapes; stored values have the buffer's dtype; a block
has one binding per iteration variable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from mlc.errors import VerifyError
from mlc.tir import dtype as dt
from mlc.tir.deep import retry_deeper
from mlc.tir.expr import (
    BufferLoad,
    CommReducer,
    IntImm,
    IterVar,
    Let,
    PrimExpr,
    Range,
    Reduce,
    Var,
)
from mlc.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    PrimFunc,
    Stmt,
)

_MAX_SHOWN = 8


class _Checker:
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.vars: set[int] = set()  # variables in scope
        self.buffers: set[int] = set()  # buffers in scope
        self.ever: set[int] = set()  # variables defined anywhere so far
        self.iter_owner: dict[int, str] = {}  # block iteration variable -> block name
        self.where: list[Any] = [func]
        self.problems: list[tuple[Any, str]] = []
        self.dead = 0  # > 0 under an `if` whose condition is decided false: never runs

    def problem(self, msg: str) -> None:
        self.problems.append((self.where[-1], msg))

    @contextmanager
    def scope(self, vars: tuple[Var, ...] = (), bufs: tuple[Buffer, ...] = ()) -> Iterator[None]:
        new_vars = [v for v in vars if id(v) not in self.vars]
        new_bufs = [b for b in bufs if id(b) not in self.buffers]
        for b in new_bufs:
            self.buffers.add(id(b))
            if id(b.data) not in self.vars:
                new_vars.append(b.data)
        self.vars.update(id(v) for v in new_vars)
        try:
            yield
        finally:
            self.vars.difference_update(id(v) for v in new_vars)
            self.buffers.difference_update(id(b) for b in new_bufs)

    def define(self, v: Var, what: str) -> None:
        if id(v) in self.ever:
            self.problem(f"{what} `{v.name}` is defined twice (each variable must be defined once)")
        self.ever.add(id(v))

    # -- the function ----------------------------------------------------------------------
    def run(self) -> None:
        from mlc.tir.functor import post_order_visit

        def owners(n: Any) -> None:
            if isinstance(n, Block):
                for iv in n.iter_vars:
                    self.iter_owner[id(iv.var)] = n.name

        post_order_visit(self.func.body, owners)
        size_vars: list[Var] = []
        for b in self.func.params:
            for e in (*b.shape, *b.strides):
                if isinstance(e, Var) and all(e is not s for s in size_vars):
                    size_vars.append(e)
        positions = [p for p, _ in self.func.scalars]
        count = len(self.func.params) + len(positions)
        if sorted(set(positions)) != positions or any(not 0 <= p < count for p in positions):
            self.problem(f"the scalar parameters' positions {positions} are not distinct, "
                         f"increasing places among the {count} arguments")
        for _, v in self.func.scalars:  # scalar parameters: bound by the call
            if not isinstance(v, Var) or dt.lanes(v.dtype) != 1:
                self.problem(f"scalar parameter {v!r} is not a variable of one lane")
            elif all(v is not s for s in size_vars):
                size_vars.append(v)
        self.ever.update(id(v) for v in size_vars)
        with self.scope(tuple(size_vars), self.func.params):
            for b in self.func.params:
                for e in (*b.shape, *b.strides):
                    self.expr(e)
            self.stmt(self.func.body)

    # -- statements ------------------------------------------------------------------------
    def stmt(self, s: Any) -> None:
        if s is None:
            return
        self.where.append(s)
        try:
            self._stmt(s)
        finally:
            self.where.pop()

    def _stmt(self, s: Any) -> None:  # noqa: C901 - one case per node kind
        if isinstance(s, For):
            self.expr(s.min)
            self.expr(s.extent)
            self.define(s.loop_var, "loop variable")
            with self.scope((s.loop_var,)):
                self.stmt(s.body)
        elif isinstance(s, BlockRealize):
            n_vars, n_vals = len(s.block.iter_vars), len(s.iter_values)
            if n_vars != n_vals:
                self.problem(
                    f'block "{s.block.name}" has {n_vars} iteration variables but '
                    f"{n_vals} bindings"
                )
            for v in s.iter_values:
                self.expr(v)
            self.expr(s.predicate)
            self.block(s.block)
        elif isinstance(s, Block):
            self.block(s)
        elif isinstance(s, BufferStore):
            self.access(s.buffer, s.indices)
            self.expr(s.value)
            self.store_dtype(s)
        elif isinstance(s, LetStmt):
            self.expr(s.value)
            self.define(s.var, "let variable")
            with self.scope((s.var,)):
                self.stmt(s.body)
        elif isinstance(s, Allocate):
            for e in s.buffer.shape:
                self.expr(e)
            with self.scope(bufs=(s.buffer,)):
                self.stmt(s.body)
        elif isinstance(s, KernelLaunch):
            for _, e in s.grid_extents:
                self.expr(e)
            index_vars = tuple(v for _, v in s.thread_vars)
            for v in index_vars:
                self.define(v, "GPU index variable")
            with self.scope(index_vars, bufs=s.shared):
                self.stmt(s.body)
        elif isinstance(s, IfThenElse):
            self.expr(s.condition)
            decided = _decided(s.condition)
            self.dead += decided is False
            self.stmt(s.then_case)
            self.dead -= decided is False
            self.dead += decided is True
            self.stmt(s.else_case)
            self.dead -= decided is True
        else:
            self.children(s)

    def children(self, node: Any) -> None:
        """Statements this verifier has no rule for: check every field."""
        import dataclasses

        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            for x in v if isinstance(v, tuple) else (v,):
                if isinstance(x, Stmt):
                    self.stmt(x)
                elif isinstance(x, PrimExpr):
                    self.expr(x)

    def block(self, b: Block) -> None:
        for iv in b.iter_vars:
            self.range(iv.dom)
        for iv in b.iter_vars:
            self.define(iv.var, f'iteration variable of block "{b.name}"')
        with self.scope(tuple(iv.var for iv in b.iter_vars), b.alloc_buffers):
            for buf in b.alloc_buffers:
                for e in buf.shape:
                    self.expr(e)
            for region in (*b.reads, *b.writes):
                self.region(region)
            self.stmt(b.init)
            self.stmt(b.body)

    def region(self, r: BufferRegion) -> None:
        self.buffer_in_scope(r.buffer)
        if len(r.region) != r.buffer.ndim:
            self.problem(
                f"the region of `{r.buffer.name}` has {len(r.region)} ranges but the buffer "
                f"has {r.buffer.ndim} dimensions"
            )
        for rng in r.region:
            self.range(rng)

    def range(self, r: Range) -> None:
        self.expr(r.min)
        self.expr(r.extent)

    def store_dtype(self, s: BufferStore) -> None:
        idx_lanes = max((dt.lanes(i.dtype) for i in s.indices), default=1)
        want = dt.with_lanes(s.buffer.dtype, idx_lanes * dt.lanes(s.buffer.dtype))
        if s.value.dtype != want:
            self.problem(
                f"stores a {s.value.dtype} value into `{s.buffer.name}` ({s.buffer.dtype}"
                f"{', ' + str(idx_lanes) + ' lanes' if idx_lanes > 1 else ''}): expected {want}; "
                f"insert a cast with .astype(\"{want}\")"
            )

    # -- expressions and accesses -------------------------------------------------------------
    def buffer_in_scope(self, buf: Buffer) -> None:
        # A flattened view of a buffer shares its ``data`` pointer: it is the same memory.
        if id(buf) not in self.buffers and id(buf.data) not in self.vars:
            self.problem(
                f"buffer `{buf.name}` is used but is neither a parameter of the function nor "
                "allocated in an enclosing block (alloc_buffers) or Allocate"
            )
            self.buffers.add(id(buf))  # report each buffer once

    def access(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> None:
        self.buffer_in_scope(buf)
        if len(indices) != buf.ndim:
            self.problem(
                f"`{buf.name}` has {buf.ndim} dimensions but is indexed with {len(indices)} "
                f"indices"
            )
            return
        for n, (i, extent) in enumerate(zip(indices, buf.shape)):
            self.expr(i)
            if isinstance(i, IntImm) and isinstance(extent, IntImm) and not self.dead:
                if not 0 <= i.value < extent.value:
                    self.problem(
                        f"index {i.value} is out of range for dimension {n} of `{buf.name}` "
                        f"(extent {extent.value})"
                    )

    def var(self, v: Var) -> None:
        if id(v) in self.vars:
            return
        owner = self.iter_owner.get(id(v))
        if owner is not None:
            self.problem(
                f'variable `{v.name}` (an iteration variable of block "{owner}") is used '
                "outside its block; outside, use the loop variables it is bound to"
            )
        else:
            self.problem(
                f"variable `{v.name}` is used but not defined: it is not a loop, block or let "
                "variable in scope, nor a symbolic size in a parameter's shape"
            )
        self.vars.add(id(v))  # report each variable once
        self.ever.add(id(v))

    def expr(self, e: Any) -> None:  # noqa: C901
        if isinstance(e, Var):
            self.var(e)
        elif isinstance(e, (IntImm,)) or e is None:
            return
        elif isinstance(e, BufferLoad):
            self.access(e.buffer, e.indices)
        elif isinstance(e, Let):
            self.expr(e.value)
            self.define(e.var, "let variable")
            with self.scope((e.var,)):
                self.expr(e.body)
        elif isinstance(e, Reduce):
            for iv in e.axis:
                self.range(iv.dom)
            with self.scope(tuple(iv.var for iv in e.axis)):
                self.expr(e.source)
                self.expr(e.condition)
        elif isinstance(e, CommReducer):
            return
        elif isinstance(e, IterVar):
            self.range(e.dom)
        elif isinstance(e, PrimExpr):
            import dataclasses

            for f in dataclasses.fields(cast(Any, e)):
                v = getattr(e, f.name)
                for x in v if isinstance(v, tuple) else (v,):
                    if isinstance(x, (PrimExpr, IterVar)):
                        self.expr(x)


def verify_well_formed(func: PrimFunc) -> None:
    """Raise :class:`mlc.errors.VerifyError` when ``func`` is not well formed; the message
    lists the problems and prints the function with each culprit statement marked."""
    from mlc.tir.printer import to_str

    def check() -> _Checker:  # a fresh checker each try: a retry starts from nothing
        checker = _Checker(func)
        checker.run()
        return checker

    checker = retry_deeper(check)  # hundreds of nested allocations: on a deep stack
    if not checker.problems:
        return
    marks: dict[Any, str] = {}
    for node, msg in checker.problems[:_MAX_SHOWN]:
        marks[node] = f"{marks[node]}; {msg}" if node in marks else msg
    listed = "\n".join(f"  - {msg}" for _, msg in checker.problems[:_MAX_SHOWN])
    more = len(checker.problems) - _MAX_SHOWN
    if more > 0:
        listed += f"\n  ... and {more} more"
    raise VerifyError(
        f"the function `{func.name}` is not well formed:\n{listed}\n{to_str(func, mark=marks)}"
    )


def _decided(cond: PrimExpr) -> bool | None:
    """The value of a condition the simplifier folds to a constant (``1 < 1`` in the last
    copy of an unrolled guarded loop), else None: statements under a false one never run."""
    from mlc.tir.arith import simplify  # the simplifier imports the IR, not the verifier

    folded = simplify(cond)
    return bool(folded.value) if isinstance(folded, IntImm) else None
