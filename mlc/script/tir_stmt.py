"""Statement parsing for the TIR parser: statement lists, bindings (``x = ...``,
``T.alloc_buffer``), stores, ifs and for loops (``range``, ``T.grid``, ``T.serial``...).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mlc.script.tir_buffers import _BufferParser
from mlc.script.tir_syntax import (
    _HEADER_CALLS,
    _LOOP_KINDS,
    _assign_parts,
    _extent,
    _first_line,
    _target_names,
    _zero_like,
)
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    BufferLoad,
    FloatImm,
    IntImm,
    PrimExpr,
    Range,
    Var,
)
from mlc.tir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from mlc.tir.thread_tag import ALL_TAGS


class _StmtParser(_BufferParser):
    """Statements and loops; blocks come from :class:`_BlockParser`."""

    if TYPE_CHECKING:
        def _with(self, s: ast.With) -> Stmt: ...

    # -- statements ------------------------------------------------------------------------------
    def stmts(self, nodes: Sequence[ast.stmt]) -> Stmt:
        out: list[Stmt] = []
        for n, s in enumerate(nodes):
            if isinstance(s, (ast.Assign, ast.AnnAssign)):
                target, value = _assign_parts(s)
                if isinstance(target, ast.Name) and value is not None:
                    out.append(self._binding(s, target, value, nodes[n + 1 :]))
                    return seq(*out) if out else SeqStmt(())
            st = self.stmt(s)
            if st is not None:
                out.append(st)
        if not out:
            return SeqStmt(())
        return seq(*out)

    def _binding(self, s: ast.stmt, target: ast.Name, value: ast.expr,
                 rest: Sequence[ast.stmt]) -> Stmt:
        """``Y = T.alloc_buffer(...)`` (an Allocate around the rest) or ``x = expr`` (a
        LetStmt around the rest)."""
        if isinstance(value, ast.Call) and self._callee(value) in ("alloc_buffer",
                                                                   "decl_buffer"):
            buf = self._buffer_decl(value, target.id)
            self.f.scopes.append({target.id: buf})
            try:
                return Allocate(buf, self.stmts(rest))
            finally:
                self.f.scopes.pop()
        if isinstance(value, ast.Call) and self._callee(value) in ("axis.spatial",
                                                                   "axis.reduce", "axis.remap"):
            raise self.error(s, "T.axis.* declares a block's iteration variable; it must be "
                                'inside `with T.block("name"):`')
        if isinstance(value, ast.Call) and self._callee(value) == "match_buffer":
            raise self.error(s, "T.match_buffer must come first in the function body")
        v = self.expr(value)
        var = Var(target.id, v.dtype)
        self.f.scopes.append({target.id: var})
        try:
            return LetStmt(var, v, self.stmts(rest))
        finally:
            self.f.scopes.pop()

    def stmt(self, s: ast.stmt) -> Stmt | None:  # noqa: C901 - one case per statement kind
        if isinstance(s, ast.For):
            return self._for(s)
        if isinstance(s, ast.With):
            return self._with(s)
        if isinstance(s, ast.If):
            cond = self._cond(s.test)
            then = self.stmts(s.body)
            other = self.stmts(s.orelse) if s.orelse else None
            return IfThenElse(cond, then, other)
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            return self._store(s)
        if isinstance(s, ast.Pass):
            return None
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return None  # a string statement (comment-like)
            if isinstance(s.value, ast.Call):
                name = self._callee(s.value)
                if name in _HEADER_CALLS or name == "init":
                    raise self.error(s, f"T.{name}(...) belongs at the top of a "
                                        '`with T.block("name"):` body')
                if name == "func_attr":
                    raise self.error(s, "T.func_attr must come first in the function body")
                if name == "evaluate":
                    if len(s.value.args) != 1 or s.value.keywords:
                        raise self.error(s, "T.evaluate takes one expression: T.evaluate(x)")
                    return Evaluate(self.expr(s.value.args[0]))
            return Evaluate(self.expr(s.value))
        if isinstance(s, ast.Return) and s.value is None:
            return None
        raise self.error(s, f"a prim_func cannot contain `{_first_line(s)}`: expected a for "
                            "loop, `with T.block(...)`, an if, or a store `A[i] = ...`")

    def _store(self, s: ast.Assign | ast.AugAssign | ast.AnnAssign) -> Stmt:
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise self.error(s, "assign to one buffer element at a time: A[i] = ...")
            target = s.targets[0]
        else:
            target = s.target
        if not isinstance(target, ast.Subscript):
            raise self.error(target, "expected a store into a buffer element, "
                                     "e.g. C[vi, vj] = ...")
        buf, indices = self._access(target)
        if s.value is None:
            raise self.error(s, "a store needs a value")
        value = self.expr(s.value)
        if isinstance(s, ast.AugAssign):
            value = self._binop(s.op, BufferLoad(buf, indices), value, s)
        value = self._as_dtype(value, buf.dtype, s.value)
        if dt.element(value.dtype) != dt.element(buf.dtype):
            raise self.error(s.value, f"{buf.name} holds {buf.dtype} but the value stored is "
                                      f"{value.dtype}; cast it: "
                                      f'T.Cast("{dt.element(buf.dtype)}", ...)')
        return BufferStore(buf, value, indices)

    def _as_dtype(self, value: PrimExpr, dtype: str, node: ast.AST) -> PrimExpr:
        """Constants take the buffer's dtype (``Y[i] = 0`` into a float buffer)."""
        if dt.element(value.dtype) == dt.element(dtype):
            return value
        if isinstance(value, (IntImm, FloatImm)) and dt.lanes(value.dtype) == 1:
            return self.constant(value.value, dtype, node)
        return value
    # -- loops ---------------------------------------------------------------------------------
    def _for(self, s: ast.For) -> Stmt:
        if s.orelse:
            raise self.error(s, "a for loop in a prim_func cannot have an else branch")
        it = s.iter
        if not isinstance(it, ast.Call):
            raise self.error(it, "expected range(n), T.grid(...), T.serial(n), T.parallel(n), "
                                 "T.vectorized(n), T.unroll(n) or T.thread_binding(n, ...)")
        name = self._callee(it)
        if name == "grid":
            targets = _target_names(s.target)
            if targets is None or len(targets) != len(it.args) or it.keywords:
                raise self.error(s.target, f"T.grid({len(it.args)} extents) needs as many "
                                           "loop variables: for i, j in T.grid(m, n)")
            exts = [self.expr(a) for a in it.args]
            ranges = [(_zero_like(e), e) for e in exts]
            return self._nest(s, targets, ranges, [ForKind.SERIAL] * len(targets),
                              [None] * len(targets), [()] * len(targets))
        if name not in _LOOP_KINDS:
            raise self.error(it, f"unknown loop kind {ast.unparse(it.func)}: expected range, "
                                 "T.grid, T.serial, T.parallel, T.vectorized, T.unroll or "
                                 "T.thread_binding")
        kind = _LOOP_KINDS[name]
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "one loop variable per loop (T.grid takes several)")
        args = list(it.args)
        thread: str | None = None
        annotations: tuple[tuple[str, Any], ...] = ()
        if args and isinstance(args[-1], ast.Constant) and isinstance(args[-1].value, str):
            last = args.pop()
            assert isinstance(last, ast.Constant)
            thread = str(last.value)
        for kw in it.keywords:
            if kw.arg == "thread" and kind == ForKind.THREAD_BINDING:
                thread = self.literal(kw.value)
            elif kw.arg == "annotations":
                d = self.literal(kw.value)
                if not isinstance(d, dict):
                    raise self.error(kw.value, "annotations= expects a dict")
                annotations = tuple(d.items())
                from mlc.tir.schedule.loop_annotations import KNOWN_PRAGMAS

                for key in d:
                    if str(key).startswith("pragma_") and key[7:] not in KNOWN_PRAGMAS:
                        raise self.error(kw.value, f"unknown pragma {key!r}; mlc knows "
                                         + ", ".join(f"pragma_{p}" for p in KNOWN_PRAGMAS))
            else:
                raise self.error(kw.value, f"unknown keyword {kw.arg}= for {name}")
        if kind == ForKind.THREAD_BINDING and thread is None:
            raise self.error(it, 'T.thread_binding(n, thread="threadIdx.x") needs the thread '
                                 "axis")
        if thread is not None and kind != ForKind.THREAD_BINDING:
            raise self.error(it, f"{name}(...) takes no thread name")
        if thread is not None and thread not in ALL_TAGS:
            raise self.error(it, f"unknown thread axis {thread!r}: a loop binds to one of "
                                 f"{', '.join(ALL_TAGS)}")
        if len(args) == 1:
            ext = self.expr(args[0])
            lo = _zero_like(ext)
        elif len(args) == 2:
            lo, hi = self.expr(args[0]), self.expr(args[1])
            ext = _extent(lo, hi)
        else:
            raise self.error(it, f"{name} takes (extent) or (start, stop), got {len(args)} "
                                 "arguments")
        return self._nest(s, [s.target.id], [(lo, ext)], [kind], [thread], [annotations])

    def _nest(self, s: ast.For, names: list[str], ranges: list[tuple[PrimExpr, PrimExpr]],
              kinds: list[ForKind], threads: list[str | None],
              annotations: list[tuple[tuple[str, Any], ...]]) -> Stmt:
        loop_vars = []
        scope: dict[str, Any] = {}
        for name, (lo, ext) in zip(names, ranges):
            if not dt.is_int(ext.dtype):
                raise self.error(s.iter, f"a loop extent must be an integer, got {ext.dtype}")
            v = Var(name, ext.dtype)
            loop_vars.append(v)
            scope[name] = v
            self.f.loops[v] = Range(lo, ext)
        self.f.scopes.append(scope)
        try:
            body = self.stmts(s.body)
        finally:
            self.f.scopes.pop()
            for v in loop_vars:
                self.f.loops.pop(v, None)
        for v, (lo, ext), kind, thread, ann in reversed(
                list(zip(loop_vars, ranges, kinds, threads, annotations))):
            body = For(v, lo, ext, kind, body, thread, ann)
            if kind in (ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.THREAD_BINDING):
                self.f.parallel_loops.append((body, s))
        return body
