"""Read a ``@T.prim_func`` from its Python syntax tree into a :class:`mlc.tir.PrimFunc`.

The function's body is never run: the parser walks ``ast`` nodes and builds IR nodes, so a
script means exactly what it says and an error points at the student's line. It reads the
TensorIR the MLC course writes and what ``print(func)`` prints (the same forms without the
``T.`` prefix)::

    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        ...

``T.reads`` / ``T.writes`` may be left out: they are inferred from the loads and stores in
the block (a reduction's read of its own output is not listed, as ``te.create_prim_func``
does). A function whose body holds blocks gets the implicit root block, with the
function-level ``T.alloc_buffer``\\ s as its allocations.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

from mlc.errors import MLCError, ZeroDivisorError
from mlc.script.source import Source
from mlc.tir import dtype as dt
from mlc.tir import intrin
from mlc.tir.analysis import structural_equal
from mlc.tir.arith import Analyzer
from mlc.tir.arith.region import eval_region
from mlc.tir.expr import (
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterKind,
    IterVar,
    Let,
    Max,
    Min,
    Mod,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Select,
    SizeVar,
    StringImm,
    Var,
    _coerce,
    check_divisor,
    const,
)
from mlc.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)

__all__ = ["TIRParser", "normalize_name", "is_prim_func_decorator"]

# Leading parts of a dotted name that only say "this is TVMScript": T.axis.spatial, tir.grid,
# tvm.script.tir.Buffer and the printer's bare axis.spatial are the same thing.
_PREFIXES = {"T", "tir", "tvm", "script", "mlc"}


_LOOP_KINDS = {
    "range": ForKind.SERIAL,
    "serial": ForKind.SERIAL,
    "parallel": ForKind.PARALLEL,
    "vectorized": ForKind.VECTORIZED,
    "unroll": ForKind.UNROLLED,
    "thread_binding": ForKind.THREAD_BINDING,
}

_AXIS_KINDS = {
    "spatial": IterKind.SPATIAL, "S": IterKind.SPATIAL,
    "reduce": IterKind.REDUCE, "R": IterKind.REDUCE,
    "scan": IterKind.ORDERED, "opaque": IterKind.OPAQUE,
}  # fmt: skip

_HEADER_CALLS = {"reads", "writes", "where", "block_attr"}


def dotted(node: ast.AST) -> str | None:
    """``T.axis.spatial`` -> "T.axis.spatial"; None for anything that is not a dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def normalize_name(name: str) -> str:
    """Drop the leading ``T.`` / ``tir.`` / ``tvm.script.tir.`` parts of a dotted name."""
    parts = name.split(".")
    while len(parts) > 1 and parts[0] in _PREFIXES:
        parts = parts[1:]
    return ".".join(parts)


def is_prim_func_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted(target)
    return name is not None and normalize_name(name) == "prim_func"


def _is_dtype(name: str) -> bool:
    try:
        dt.check(name)
    except MLCError:
        return False
    return name not in ("handle",)


class _Func:
    """What the parser knows while reading one function."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = [{}]
        self.loops: dict[Var, Range] = {}  # enclosing loop variables and their ranges
        self.attrs: list[tuple[str, Any]] = []
        self.handles: dict[str, Buffer | None] = {}

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def define(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value


class TIRParser:
    """Parses one ``def`` (a prim_func) of a :class:`Source`."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.f = _Func()
        self.flat: dict[Var, Buffer] = {}  # flat views of buffers, by their data variable
        self.allow_flat = False

    def error(self, node: ast.AST | None, message: str) -> Exception:
        return self.src.error(node, message)

    # -- entry ---------------------------------------------------------------------------------
    def parse_func(self, fdef: ast.FunctionDef) -> PrimFunc:
        """The PrimFunc of ``fdef``; every mistake is a ScriptError at its position."""
        try:
            return self._parse_func(fdef)
        except SyntaxError:
            raise
        except (MLCError, ValueError, TypeError, KeyError, IndexError, AttributeError,
                ArithmeticError) as e:
            raise self.error(fdef, f"cannot read prim_func {fdef.name!r}: "
                                   f"{type(e).__name__}: {e}") from None
        except RecursionError:
            raise self.error(fdef, "the prim_func is nested too deeply to read") from None

    def _parse_func(self, fdef: ast.FunctionDef) -> PrimFunc:
        for s in fdef.body:  # `n = T.int64()` declares a size the parameters' shapes use
            if self._size_var_decl(s):
                continue
        params = self._params(fdef)
        body_nodes = [s for s in fdef.body if not self._size_var_decl(s, define=False)]
        if body_nodes and isinstance(body_nodes[0], ast.Expr) and isinstance(
            body_nodes[0].value, ast.Constant) and isinstance(body_nodes[0].value.value, str):
            body_nodes = body_nodes[1:]  # a docstring
        has_blocks = any(self._is_block_with(n) for s in body_nodes for n in ast.walk(s))
        self.allow_flat = not has_blocks  # lowered code indexes flat views of its buffers
        root_allocs: list[Buffer] = []
        rest: list[ast.stmt] = []
        for s in body_nodes:
            if self._function_header(s, root_allocs if has_blocks else None):
                continue
            rest.append(s)
        buffers = self._bind_handles(fdef, params)
        body = self.stmts(rest)
        if has_blocks and not _is_explicit_root(body, root_allocs):
            body = BlockRealize((), const(True), Block("root", (), (), (), body,
                                                       alloc_buffers=tuple(root_allocs)))
        return PrimFunc(tuple(buffers), body, fdef.name, tuple(self.f.attrs))

    def _params(self, fdef: ast.FunctionDef) -> list[Buffer | str]:
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "a prim_func takes plain parameters, each annotated with "
                                   'T.Buffer((shape), "dtype") or T.handle')
        params: list[Buffer | str] = []
        for a in args.args:
            if a.arg == "self":
                continue
            if a.annotation is None:
                raise self.error(a, f"parameter {a.arg!r} needs a type: "
                                    f'{a.arg}: T.Buffer((128, 128), "float32")')
            ann = a.annotation
            name = dotted(ann)
            if name is not None and normalize_name(name) in ("handle", "Ptr"):
                self.f.handles[a.arg] = None
                params.append(a.arg)
                continue
            buf = self._buffer_decl(ann, a.arg, for_param=True)
            self.f.define(a.arg, buf)
            params.append(buf)
        return params

    def _bind_handles(self, fdef: ast.FunctionDef, params: list[Buffer | str]) -> list[Buffer]:
        out = []
        for p in params:
            if isinstance(p, str):
                buf = self.f.handles.get(p)
                if buf is None:
                    raise self.error(fdef, f"parameter {p!r} is a T.handle but no "
                                           f"`X = T.match_buffer({p}, (shape), \"dtype\")` "
                                           "gives it a shape")
                out.append(buf)
            else:
                out.append(p)
        return out

    def _function_header(self, s: ast.stmt, root_allocs: list[Buffer] | None) -> bool:
        """func_attr, match_buffer, size-variable declarations and (with blocks) the root
        block's alloc_buffers. True when ``s`` was one of them."""
        call = _call_of(s)
        if call is not None and self._callee(call) == "func_attr":
            if len(call.args) != 1:
                raise self.error(call, 'T.func_attr takes one dict: T.func_attr({"k": v})')
            d = self.literal(call.args[0])
            if not isinstance(d, dict):
                raise self.error(call.args[0], "T.func_attr expects a dict of attributes")
            self.f.attrs.extend(d.items())
            return True
        if not isinstance(s, (ast.Assign, ast.AnnAssign)):
            return False
        target, value = _assign_parts(s)
        if value is None or not isinstance(value, ast.Call) or not isinstance(target, ast.Name):
            return False
        name = self._callee(value)
        if name == "match_buffer":
            self._match_buffer(target.id, value)
            return True
        if name == "alloc_buffer" and root_allocs is not None:
            buf = self._buffer_decl(value, target.id)
            self.f.define(target.id, buf)
            root_allocs.append(buf)
            return True
        return False

    def _size_var_decl(self, s: ast.stmt, define: bool = True) -> bool:
        """``n = T.int64()`` / ``n = T.var("int64")``: a symbolic size."""
        if not isinstance(s, (ast.Assign, ast.AnnAssign)):
            return False
        target, value = _assign_parts(s)
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Call):
            return False
        name = self._callee(value)
        if name == "var" and len(value.args) <= 1 and not value.keywords:
            dtype = str(self.literal(value.args[0])) if value.args else "int32"
        elif name is not None and _is_dtype(name) and dt.is_int(name) and not value.args \
                and not value.keywords:
            dtype = name
        else:
            return False
        if define:
            if not _is_dtype(dtype) or not dt.is_int(dtype):
                raise self.error(value, f"a size variable is an integer, got {dtype!r}")
            self.f.define(target.id, SizeVar(target.id, dtype))
        return True

    def _match_buffer(self, name: str, call: ast.Call) -> None:
        if not call.args or not isinstance(call.args[0], ast.Name):
            raise self.error(call, "T.match_buffer(handle, (shape), \"dtype\") needs the "
                                   "handle parameter first")
        handle = call.args[0].id
        if handle not in self.f.handles:
            raise self.error(call.args[0], f"{handle!r} is not a T.handle parameter")
        decl = ast.Call(func=call.func, args=call.args[1:], keywords=call.keywords)
        ast.copy_location(decl, call)
        buf = self._buffer_decl(decl, name, for_param=True)
        self.f.handles[handle] = buf
        self.f.define(name, buf)

    # -- buffers -------------------------------------------------------------------------------
    def _buffer_decl(self, node: ast.expr, name: str, for_param: bool = False) -> Buffer:
        """``T.Buffer((m, n), "float32")``, ``T.Buffer[(m, n), "float32"]``,
        ``T.alloc_buffer((m, n), dtype="float32", scope="local")``."""
        if isinstance(node, ast.Subscript):
            args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            kwargs: dict[str, ast.expr] = {}
            ctor = dotted(node.value)
        elif isinstance(node, ast.Call):
            args, ctor = list(node.args), dotted(node.func)
            kwargs = {k.arg: k.value for k in node.keywords if k.arg is not None}
            if len(kwargs) != len(node.keywords):
                raise self.error(node, "**kwargs are not allowed in a buffer declaration")
        else:
            raise self.error(node, 'expected a buffer type, e.g. T.Buffer((128, 128), "float32")')
        ctor_name = normalize_name(ctor) if ctor else ""
        if ctor_name not in ("Buffer", "alloc_buffer", "match_buffer", "decl_buffer"):
            raise self.error(node, 'expected a buffer type, e.g. T.Buffer((128, 128), "float32")'
                                   f", got {ast.unparse(node)}")
        shape_node = args[0] if args else kwargs.pop("shape", None)
        if shape_node is None:
            raise self.error(node, f"{ctor_name} needs a shape: {ctor_name}((128, 128), "
                                   '"float32")')
        dtype_node = args[1] if len(args) > 1 else kwargs.pop("dtype", None)
        if len(args) > 2:
            raise self.error(args[2], f"{ctor_name} takes (shape, dtype) and keywords "
                                      "scope=, strides=; got too many arguments")
        dtype = "float32"
        if dtype_node is not None:
            d = self.literal(dtype_node)
            if not isinstance(d, str) or not _is_dtype(d):
                raise self.error(dtype_node, f"expected a dtype string like \"float32\", got "
                                             f"{ast.unparse(dtype_node)}")
            dtype = d
        scope: str = "global"
        strides: tuple[PrimExpr, ...] = ()
        for key, value in kwargs.items():
            if key == "scope":
                s = self.literal(value)
                if not isinstance(s, str):
                    raise self.error(value, 'scope= expects a string ("global", "local", '
                                            '"shared")')
                scope = s
            elif key == "strides":
                strides = self._shape(value, for_param)
            elif key in ("align", "offset_factor", "elem_offset", "buffer_type", "data",
                         "axis_separators"):
                continue  # accepted for TVM compatibility; mlc buffers are compact
            else:
                raise self.error(value, f"unknown keyword {key}= for {ctor_name} "
                                        "(known: dtype, scope, strides)")
        shape = self._shape(shape_node, for_param)
        return Buffer(name, shape, dtype, scope, strides)

    def _shape(self, node: ast.expr, for_param: bool) -> tuple[PrimExpr, ...]:
        elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        out = []
        for e in elts:
            if for_param and isinstance(e, ast.Name) and self.f.lookup(e.id) is None:
                self.f.define(e.id, SizeVar(e.id, "int32"))  # a symbolic size
            if for_param and isinstance(e, ast.Constant) and isinstance(e.value, str):
                if self.f.lookup(e.value) is None:
                    self.f.define(e.value, SizeVar(e.value, "int32"))
                out.append(self.f.lookup(e.value))
                continue
            x = self.expr(e)
            if not dt.is_int(x.dtype):
                raise self.error(e, f"a buffer dimension must be an integer, got {x.dtype}")
            out.append(x)
        return tuple(out)

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
        return BufferStore(buf, value, indices)

    def _as_dtype(self, value: PrimExpr, dtype: str, node: ast.AST) -> PrimExpr:
        """Constants take the buffer's dtype (``Y[i] = 0`` into a float buffer)."""
        if dt.element(value.dtype) == dt.element(dtype):
            return value
        if isinstance(value, (IntImm, FloatImm)) and dt.lanes(value.dtype) == 1:
            try:
                return const(value.value, dtype)
            except MLCError as e:
                raise self.error(node, str(e)) from None
        return value

    def _buffer_of(self, node: ast.expr) -> Buffer:
        if isinstance(node, ast.Name):
            b = self.f.lookup(node.id)
            if isinstance(b, Buffer):
                return b
            if b is None:
                raise self.error(node, f"undefined buffer {node.id!r}: declare it as a "
                                       "parameter or with T.alloc_buffer")
        raise self.error(node, f"{ast.unparse(node)} is not a buffer")

    def _access(self, sub: ast.Subscript) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        """``A[i, j]``: the buffer and the indices. One index into a buffer of several
        dimensions is the flat view lowering makes (same memory, one dimension)."""
        elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        buf = self._buffer_of(sub.value)
        out = []
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.error(e, "a slice is a region: use it in T.reads/T.writes only")
            x = self.expr(e)
            if not dt.is_int(dt.element(x.dtype)):
                raise self.error(e, f"a buffer index must be an integer, got {x} ({x.dtype})")
            out.append(x)
        if self.allow_flat and len(out) == 1 and (len(buf.shape) > 1 or buf.strides):
            return self._flat_view(buf), tuple(out)
        if len(out) != len(buf.shape) and len(buf.shape) > 0:
            raise self.error(sub, f"{buf.name} has {len(buf.shape)} dimension(s) "
                                  f"{tuple(str(s) for s in buf.shape)}, indexed with "
                                  f"{len(out)}")
        return buf, tuple(out)

    def _flat_view(self, buf: Buffer) -> Buffer:
        found = self.flat.get(buf.data)
        if found is None:
            found = Buffer(buf.name, (_numel(buf),), buf.dtype, buf.scope, data=buf.data)
            self.flat[buf.data] = found
        return found

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
            else:
                raise self.error(kw.value, f"unknown keyword {kw.arg}= for {name}")
        if kind == ForKind.THREAD_BINDING and thread is None:
            raise self.error(it, 'T.thread_binding(n, thread="threadIdx.x") needs the thread '
                                 "axis")
        if thread is not None and kind != ForKind.THREAD_BINDING:
            raise self.error(it, f"{name}(...) takes no thread name")
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
        return body

    # -- blocks --------------------------------------------------------------------------------
    def _is_block_with(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.With) or len(node.items) != 1:
            return False
        e = node.items[0].context_expr
        return isinstance(e, ast.Call) and self._callee(e) == "block"

    def _with(self, s: ast.With) -> Stmt:
        if len(s.items) != 1 or not isinstance(s.items[0].context_expr, ast.Call):
            raise self.error(s, 'expected `with T.block("name"):`')
        call = s.items[0].context_expr
        assert isinstance(call, ast.Call)
        name = self._callee(call)
        if name == "block":
            return self._block(s, call)
        if name == "init":
            raise self.error(s, "`with T.init():` belongs inside a block, before its body")
        raise self.error(call, f"unknown `with {ast.unparse(call)}`: expected "
                               '`with T.block("name"):`')

    def _block(self, s: ast.With, call: ast.Call) -> Stmt:  # noqa: C901
        if len(call.args) > 1 or call.keywords and not all(
                k.arg in ("name", "no_realize") for k in call.keywords):
            raise self.error(call, 'T.block takes the block\'s name: T.block("C")')
        name_node = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "name"), None)
        name = self.literal(name_node) if name_node is not None else "block"
        if not isinstance(name, str):
            raise self.error(name_node, 'a block name is a string: T.block("C")')
        iter_vars: list[IterVar] = []
        values: list[PrimExpr] = []
        reads: list[BufferRegion] | None = None
        writes: list[BufferRegion] | None = None
        predicate: PrimExpr = const(True)
        annotations: tuple[tuple[str, Any], ...] = ()
        allocs: list[Buffer] = []
        init_nodes: list[ast.stmt] | None = None
        body_nodes: list[ast.stmt] = []
        scope: dict[str, Any] = {}
        self.f.scopes.append(scope)
        try:
            for st in s.body:
                hdr = _call_of(st)
                hname = self._callee(hdr) if hdr is not None else None
                target, value = _assign_parts(st) if isinstance(
                    st, (ast.Assign, ast.AnnAssign)) else (None, None)
                vname = self._callee(value) if isinstance(value, ast.Call) else None
                if vname is not None and vname.startswith("axis."):
                    assert isinstance(value, ast.Call) and target is not None
                    for iv, val in self._axes(target, value, vname):
                        iter_vars.append(iv)
                        values.append(val)
                        scope[iv.var.name] = iv.var
                elif vname in ("alloc_buffer", "decl_buffer") and isinstance(target, ast.Name):
                    assert isinstance(value, ast.Call)
                    buf = self._buffer_decl(value, target.id)
                    scope[target.id] = buf
                    allocs.append(buf)
                elif hdr is not None and hname == "reads":
                    reads = self._regions(hdr)
                elif hdr is not None and hname == "writes":
                    writes = self._regions(hdr)
                elif hdr is not None and hname == "where":
                    if len(hdr.args) != 1:
                        raise self.error(hdr, "T.where takes one condition")
                    predicate = self._cond(hdr.args[0])
                elif hdr is not None and hname == "block_attr":
                    d = self.literal(hdr.args[0]) if len(hdr.args) == 1 else None
                    if not isinstance(d, dict):
                        raise self.error(hdr, 'T.block_attr takes one dict: '
                                              'T.block_attr({"k": v})')
                    annotations = tuple(d.items())
                elif isinstance(st, ast.With) and len(st.items) == 1 and isinstance(
                        st.items[0].context_expr, ast.Call) and self._callee(
                        st.items[0].context_expr) == "init":
                    if init_nodes is not None:
                        raise self.error(st, "a block has at most one `with T.init():`")
                    init_nodes = list(st.body)
                else:
                    body_nodes.append(st)
            init = self.stmts(init_nodes) if init_nodes is not None else None
            body = self.stmts(body_nodes)
        finally:
            self.f.scopes.pop()
        if reads is None or writes is None:
            inferred_r, inferred_w = _infer_access(body, init, allocs, self.f.loops)
            reads = inferred_r if reads is None else reads
            writes = inferred_w if writes is None else writes
        block = Block(name, tuple(iter_vars), tuple(reads), tuple(writes), body, init,
                      tuple(allocs), annotations)
        return BlockRealize(tuple(values), predicate, block)

    def _axes(self, target: ast.expr, call: ast.Call, name: str) -> list[tuple[IterVar, PrimExpr]]:
        kind_name = name[len("axis."):]
        if kind_name == "remap":
            return self._remap(target, call)
        if kind_name not in _AXIS_KINDS:
            raise self.error(call.func, f"unknown T.{name}: expected T.axis.spatial, "
                                        "T.axis.reduce, T.axis.scan, T.axis.opaque or "
                                        "T.axis.remap")
        if not isinstance(target, ast.Name):
            raise self.error(target, f"T.{name} declares one variable: vi = T.{name}(n, i)")
        if len(call.args) != 2 or call.keywords:
            raise self.error(call, f"T.{name} takes (extent, value) or ((start, stop), value)"
                                   f", e.g. vi = T.{name}(128, i)")
        dom_node, value_node = call.args
        if isinstance(dom_node, ast.Tuple):
            if len(dom_node.elts) != 2:
                raise self.error(dom_node, "a domain is an extent or a (start, stop) pair")
            lo, hi = self.expr(dom_node.elts[0]), self.expr(dom_node.elts[1])
            dom = Range(lo, _extent(lo, hi))
        else:
            ext = self.expr(dom_node)
            dom = Range(_zero_like(ext), ext)
        value = self.expr(value_node)
        var = Var(target.id, value.dtype)
        return [(IterVar(var, dom, _AXIS_KINDS[kind_name]), value)]

    def _remap(self, target: ast.expr, call: ast.Call) -> list[tuple[IterVar, PrimExpr]]:
        names = _target_names(target)
        if len(call.args) != 2 or call.keywords:
            raise self.error(call, 'T.axis.remap takes (kinds, loops): '
                                   'vi, vj, vk = T.axis.remap("SSR", [i, j, k])')
        kinds = self.literal(call.args[0])
        loops_node = call.args[1]
        if not isinstance(kinds, str) or any(c not in "SR" for c in kinds):
            raise self.error(call.args[0], 'the kinds of T.axis.remap are a string of S '
                                           '(spatial) and R (reduce), e.g. "SSR"')
        if not isinstance(loops_node, (ast.List, ast.Tuple)):
            raise self.error(loops_node, "T.axis.remap's second argument is a list of loop "
                                         "variables: [i, j, k]")
        if names is None or not (len(names) == len(kinds) == len(loops_node.elts)):
            n_t = len(names) if names is not None else 1
            raise self.error(call, f"T.axis.remap expects one letter and one loop per "
                                   f"variable: {n_t} variable(s), kinds {kinds!r}, "
                                   f"{len(loops_node.elts)} loop(s)")
        out: list[tuple[IterVar, PrimExpr]] = []
        for name, k, ln in zip(names, kinds, loops_node.elts):
            loop = self.expr(ln)
            if not isinstance(loop, Var) or loop not in self.f.loops:
                raise self.error(ln, f"T.axis.remap binds block variables to loop variables; "
                                     f"{ast.unparse(ln)} is not the variable of an enclosing "
                                     "loop")
            dom = self.f.loops[loop]
            kind = IterKind.SPATIAL if k == "S" else IterKind.REDUCE
            out.append((IterVar(Var(name, loop.dtype), dom, kind), loop))
        return out

    def _regions(self, call: ast.Call) -> list[BufferRegion]:
        nodes: list[ast.expr] = []
        for a in call.args:
            nodes.extend(a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])
        if call.keywords:
            raise self.error(call, "T.reads/T.writes take buffer regions: T.reads(A[vi, vk])")
        out = []
        for n in nodes:
            if isinstance(n, ast.Name):
                buf = self._buffer_of(n)  # the whole buffer
                out.append(BufferRegion(buf, tuple(Range(_zero_like(s), s)
                                                   for s in buf.shape)))
                continue
            if not isinstance(n, ast.Subscript):
                raise self.error(n, "expected a buffer region like A[vi, 0:16]")
            buf = self._buffer_of(n.value)
            elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            if len(elts) != len(buf.shape):
                raise self.error(n, f"{buf.name} has {len(buf.shape)} dimension(s), the "
                                    f"region gives {len(elts)}")
            ranges = []
            for e, size in zip(elts, buf.shape):
                if isinstance(e, ast.Slice):
                    if e.step is not None:
                        raise self.error(e, "a region slice has no step")
                    lo = self.expr(e.lower) if e.lower is not None else _zero_like(size)
                    hi = self.expr(e.upper) if e.upper is not None else size
                    ranges.append(Range(lo, _extent(lo, hi)))
                else:
                    idx = self.expr(e)
                    ranges.append(Range(idx, IntImm(1, idx.dtype)))
            out.append(BufferRegion(buf, tuple(ranges)))
        return out

    # -- expressions -----------------------------------------------------------------------------
    def _callee(self, call: ast.Call | None) -> str | None:
        if call is None:
            return None
        name = dotted(call.func)
        if name is None:
            return None
        root = name.split(".")[0]
        if self.f.lookup(root) is not None:
            return None  # a local variable, not a TVMScript builtin
        return normalize_name(name)

    def _cond(self, node: ast.expr) -> PrimExpr:
        c = self.expr(node)
        if not dt.is_bool(dt.element(c.dtype)):
            raise self.error(node, f"expected a condition (bool), got {c} of dtype {c.dtype}")
        return c

    def literal(self, node: ast.expr | None) -> Any:
        """A Python literal (string, number, bool, dict, list, tuple); dict values that are
        not literals are parsed as expressions."""
        if node is None:
            return None
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                key = self.literal(k)
                if not isinstance(key, str):
                    raise self.error(k or node, "attribute names are strings")
                out[key] = self.literal(v)
            return out
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return self.expr(node)

    def expr(self, node: ast.expr) -> PrimExpr:
        try:
            return self._expr(node)
        except SyntaxError:
            raise
        except MLCError as e:
            raise self.error(node, str(e)) from None
        except (ValueError, TypeError, ArithmeticError) as e:
            raise self.error(node, f"cannot build `{ast.unparse(node)}`: {e}") from None

    def _expr(self, node: ast.expr) -> PrimExpr:  # noqa: C901
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return const(v)
            if isinstance(v, (int, float)):
                return const(v)
            if isinstance(v, str):
                return StringImm(v)
            raise self.error(node, f"unexpected constant {v!r}")
        if isinstance(node, ast.Name):
            found = self.f.lookup(node.id)
            if isinstance(found, PrimExpr):
                return found
            if isinstance(found, Buffer):
                raise self.error(node, f"{node.id} is a buffer; index it: {node.id}[...]")
            if node.id in ("True", "False"):
                return const(node.id == "True")
            raise self.error(node, f"undefined name {node.id!r}: expected a loop variable, a "
                                   "block variable, a size variable or a constant")
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand)
            if isinstance(node.op, ast.USub):
                if isinstance(operand, IntImm):
                    return IntImm(-operand.value, operand.dtype)
                if isinstance(operand, FloatImm):
                    return FloatImm(-operand.value, operand.dtype)
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Not):
                return Not(operand)
            raise self.error(node, "~ is not supported on expressions; use `not`")
        if isinstance(node, ast.BinOp):
            return self._binop(node.op, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.BoolOp):
            conds = [self._cond(v) for v in node.values]
            result = conds[0]
            for c in conds[1:]:
                result = And(result, c) if isinstance(node.op, ast.And) else Or(result, c)
            return result
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.error(node, "chained comparisons (a < b < c) are not supported; "
                                       "write a < b and b < c")
            a, b = self.expr(node.left), self.expr(node.comparators[0])
            op = node.ops[0]
            table: dict[type, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
                ast.Lt: lambda x, y: x < y, ast.LtE: lambda x, y: x <= y,
                ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y,
                ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y,
            }  # fmt: skip
            if type(op) not in table:
                raise self.error(node, "expected a comparison < <= > >= == !=")
            return table[type(op)](a, b)
        if isinstance(node, ast.IfExp):
            c = self._cond(node.test)
            t, f = _coerce(self.expr(node.body), self.expr(node.orelse))
            return Select(c, t, f)
        if isinstance(node, ast.Subscript):
            buf, indices = self._access(node)
            return BufferLoad(buf, indices)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise self.error(node, f"cannot use `{ast.unparse(node)}` in a prim_func expression")

    def _binop(self, op: ast.operator, a: PrimExpr, b: PrimExpr, node: ast.AST) -> PrimExpr:
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        if isinstance(op, ast.FloorDiv):
            return self._division(FloorDiv, a, b, node)
        if isinstance(op, ast.Mod):
            return self._division(FloorMod, a, b, node)
        raise self.error(node, f"operator {type(op).__name__} is not supported in a "
                               "prim_func; use + - * / // %")

    def _division(self, cls: type, a: PrimExpr, b: PrimExpr, node: ast.AST) -> PrimExpr:
        """``a // b``, ``T.truncmod(a, b)``...: a constant zero divisor is an error at its
        line (:func:`mlc.tir.expr.check_divisor`)."""
        try:
            if cls in (FloorDiv, FloorMod):
                return a // b if cls is FloorDiv else a % b
            check_divisor(cls, a, b)
        except ZeroDivisorError as err:
            raise self.error(node, str(err)) from err
        return cls(a, b)  # type: ignore[no-any-return]

    def _call(self, node: ast.Call) -> PrimExpr:  # noqa: C901 - one case per builtin
        if isinstance(node.func, ast.Attribute) and node.func.attr == "astype":
            if len(node.args) != 1:
                raise self.error(node, 'x.astype("float32") takes one dtype')
            return self._cast(self.literal(node.args[0]), self.expr(node.func.value), node)
        name = self._callee(node)
        if name is None:
            raise self.error(node.func, f"cannot call `{ast.unparse(node.func)}` in a "
                                        "prim_func")
        if any(k.arg is None for k in node.keywords) or any(
                isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, "*args and **kwargs are not allowed in a prim_func")
        args = node.args
        n = len(args)

        def arity(k: int, usage: str) -> None:
            if n != k or node.keywords:
                raise self.error(node, f"T.{name} takes {k} argument(s): {usage}; got {n}")

        if _is_dtype(name):
            if n == 0:
                raise self.error(node, f"T.{name}(x) needs a value")
            arity(1, f"T.{name}(x)")
            if isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                return FloatImm(float(args[0].value), name)  # "nan", "inf"
            v = self.expr(args[0])
            if isinstance(v, (IntImm, FloatImm)) and isinstance(args[0], (ast.Constant,
                                                                         ast.UnaryOp)):
                return const(v.value, name)
            return self._cast(name, v, node)
        if name in ("Cast", "cast"):
            arity(2, 'T.Cast("float32", x)')
            first, second = args
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return self._cast(first.value, self.expr(second), node)
            return self._cast(self.literal(second), self.expr(first), node)
        if name in ("max", "min"):
            arity(2, f"T.{name}(a, b)")
            a, b = _coerce(self.expr(args[0]), self.expr(args[1]))
            return Max(a, b) if name == "max" else Min(a, b)
        if name in ("if_then_else", "Select", "select"):
            arity(3, f"T.{name}(cond, then, else)")
            c = self._cond(args[0])
            t, f = _coerce(self.expr(args[1]), self.expr(args[2]))
            return Select(c, t, f)
        if name in ("truncdiv", "truncmod", "floordiv", "floormod"):
            arity(2, f"T.{name}(a, b)")
            a, b = _coerce(self.expr(args[0]), self.expr(args[1]))
            cls = {"truncdiv": Div, "truncmod": Mod, "floordiv": FloorDiv,
                   "floormod": FloorMod}[name]
            return self._division(cls, a, b, node)
        if name == "abs":
            arity(1, "T.abs(x)")
            x = self.expr(args[0])
            if dt.is_float(x.dtype):
                return Call(x.dtype, "fabs", (x,))
            return Select(x < 0, -x, x)
        row = intrin.lookup(name)
        if row is not None:  # the intrinsic table (mlc.tir.intrin) is the list of functions
            k = row.arity
            arity(k, f"T.{name}({', '.join('xyzw'[:k])})")
            vals = [self.expr(a) for a in args]
            if row.float_only:
                for j in range(1, k):
                    vals[0], vals[j] = _coerce(vals[0], vals[j])
                for j in range(1, k):
                    vals[j] = _coerce(vals[0], vals[j])[1]
                if not dt.is_float(dt.element(vals[0].dtype)):
                    raise self.error(node, f"T.{name} needs a float argument, got {vals[0]} "
                                           f"of dtype {vals[0].dtype}; cast it: T.float32(x)")
            dtype = intrin.result_dtype(name, [v.dtype for v in vals])
            return Call(dtype, name, tuple(vals))
        if name == "ramp":
            arity(3, "ramp(base, stride, lanes)")
            return Ramp(self.expr(args[0]), self.expr(args[1]), self._int_literal(args[2]))
        if name == "broadcast":
            arity(2, "broadcast(value, lanes)")
            return Broadcast(self.expr(args[0]), self._int_literal(args[1]))
        if name == "let":
            arity(3, "let(var, value, body)")
            if not isinstance(args[0], ast.Name):
                raise self.error(args[0], "let's first argument is the new variable's name")
            value = self.expr(args[1])
            var = Var(args[0].id, value.dtype)
            self.f.scopes.append({args[0].id: var})
            try:
                return Let(var, value, self.expr(args[2]))
            finally:
                self.f.scopes.pop()
        if name in ("axis.spatial", "axis.reduce", "axis.remap", "block", "init",
                    "alloc_buffer", "reads", "writes", "Buffer"):
            raise self.error(node, f"T.{name}(...) cannot be used inside an expression")
        raise self.error(node.func, f"unknown function T.{name}: prim_func expressions may "
                                    "call T.max, T.min, T.if_then_else, casts like "
                                    "T.float32(x), and the intrinsics: "
                                    + ", ".join(intrin.names()))

    def _int_literal(self, node: ast.expr) -> int:
        v = self.literal(node)
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.error(node, "expected an integer constant")
        return v

    def _cast(self, dtype: Any, value: PrimExpr, node: ast.AST) -> PrimExpr:
        if not isinstance(dtype, str) or not _is_dtype(dtype):
            raise self.error(node, f"expected a dtype string like \"float32\", got {dtype!r}")
        if value.dtype == dtype:
            return value
        return Cast(dtype, value)


# ---------------------------------------------------------------------------------------------
# helpers


def _call_of(s: ast.stmt) -> ast.Call | None:
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        return s.value
    return None


def _assign_parts(s: ast.stmt) -> tuple[ast.expr | None, ast.expr | None]:
    if isinstance(s, ast.Assign):
        return (s.targets[0] if len(s.targets) == 1 else None), s.value
    if isinstance(s, ast.AnnAssign):
        return s.target, s.value
    return None, None


def _target_names(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name)
                                                       for e in node.elts):
        return [e.id for e in node.elts]  # type: ignore[attr-defined]
    return None


def _first_line(s: ast.AST) -> str:
    return ast.unparse(s).split("\n")[0]


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return const(a.value * b.value, a.dtype)
    if isinstance(b, IntImm) and b.value == 1:
        return a
    if isinstance(a, IntImm) and a.value == 1:
        return b
    return a * b


def _numel(buf: Buffer) -> PrimExpr:
    """Elements in a buffer's memory, as lowering's flatten pass computes it."""
    if buf.strides:
        return _mul(buf.strides[0], buf.shape[0])
    total: PrimExpr = const(1)
    for dim in buf.shape:
        total = _mul(total, dim)
    return total


def _zero_like(e: PrimExpr) -> PrimExpr:
    return IntImm(0, e.dtype) if dt.is_int(e.dtype) else const(0)


def _extent(lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
    """``hi - lo``, folded for constants; ``lo + e`` gives back ``e`` exactly (the printer
    writes [lo, lo + e) that way)."""
    if isinstance(lo, IntImm) and isinstance(hi, IntImm):
        return IntImm(hi.value - lo.value, hi.dtype)
    if isinstance(hi, Add) and structural_equal(hi.a, lo):
        return hi.b
    if isinstance(lo, IntImm) and lo.value == 0:
        return hi
    return hi - lo


def _is_explicit_root(body: Stmt, allocs: list[Buffer]) -> bool:
    return (not allocs and isinstance(body, BlockRealize) and body.block.name == "root"
            and not body.block.iter_vars)


def _infer_access(body: Stmt, init: Stmt | None, allocs: Sequence[Buffer],
                  outer_loops: dict[Var, Range]) -> tuple[list[BufferRegion],
                                                          list[BufferRegion]]:
    """The regions a block body reads and writes (TVM's read/write region detection):
    accesses under inner loops and nested blocks are relaxed over their ranges."""
    reads: dict[int, tuple[Buffer, list[list[Range]]]] = {}
    writes: dict[int, tuple[Buffer, list[list[Range]]]] = {}
    local = {id(b) for b in allocs}
    dom: dict[Var, Range] = {}

    def add(table: dict[int, tuple[Buffer, list[list[Range]]]], buf: Buffer,
            indices: Sequence[PrimExpr]) -> None:
        if id(buf) in local:
            return
        table.setdefault(id(buf), (buf, []))[1].append(_relax(indices, dom, buf))

    def walk(node: Any) -> None:  # noqa: C901
        if isinstance(node, BufferLoad):
            for i in node.indices:
                walk(i)
            add(reads, node.buffer, node.indices)
            return
        if isinstance(node, BufferStore):
            walk(node.value)
            for i in node.indices:
                walk(i)
            add(writes, node.buffer, node.indices)
            return
        if isinstance(node, For):
            dom[node.loop_var] = Range(node.min, node.extent)
            walk(node.body)
            return
        if isinstance(node, BlockRealize):
            for iv, val in zip(node.block.iter_vars, node.iter_values):
                dom[iv.var] = iv.dom
                walk(val)
            for b in node.block.alloc_buffers:
                local.add(id(b))
            for r in node.block.reads:
                reads.setdefault(id(r.buffer), (r.buffer, []))[1].append(
                    _relax_region(r.region, dom))
            for r in node.block.writes:
                writes.setdefault(id(r.buffer), (r.buffer, []))[1].append(
                    _relax_region(r.region, dom))
            return
        if isinstance(node, (Stmt, PrimExpr)):
            for name in getattr(node, "__dataclass_fields__", {}):
                value = getattr(node, name)
                if isinstance(value, (Stmt, PrimExpr)):
                    walk(value)
                elif isinstance(value, tuple):
                    for x in value:
                        if isinstance(x, (Stmt, PrimExpr)):
                            walk(x)

    if init is not None:
        walk(init)
    walk(body)
    written = set(writes)
    read_list = [BufferRegion(b, _hull(rs)) for key, (b, rs) in reads.items()
                 if not (init is not None and key in written)]
    write_list = [BufferRegion(b, _hull(rs)) for b, rs in writes.values()]
    return read_list, write_list


def _relax(indices: Sequence[PrimExpr], dom: dict[Var, Range], buf: Buffer) -> list[Range]:
    used = {v: r for v, r in dom.items() if _mentions(indices, v)}
    if not used:
        return [Range(i, IntImm(1, i.dtype)) for i in indices]
    try:
        return eval_region(list(indices), used, buf.shape)
    except MLCError:
        return [Range(_zero_like(s), s) for s in buf.shape]


def _relax_region(region: Sequence[Range], dom: dict[Var, Range]) -> list[Range]:
    used = {v: r for v, r in dom.items() if _mentions([*(r.min for r in region)], v)}
    if not used:
        return list(region)
    out = []
    ana = Analyzer()
    for r in region:
        lo_r = eval_region([r.min], used)[0]
        out.append(Range(lo_r.min, ana.simplify(lo_r.extent + r.extent - 1)))
    return out


def _mentions(exprs: Sequence[PrimExpr], v: Var) -> bool:
    from mlc.tir.functor import uses_var

    return any(uses_var(e, lambda x: x is v) for e in exprs)


def _hull(regions: list[list[Range]]) -> tuple[Range, ...]:
    first = regions[0]
    if all(all(structural_equal(a.min, b.min) and structural_equal(a.extent, b.extent)
               for a, b in zip(first, r)) for r in regions[1:]):
        return tuple(first)
    ana = Analyzer()
    out = []
    for dims in zip(*regions):
        lo = dims[0].min
        hi = dims[0].min + dims[0].extent
        for r in dims[1:]:
            lo = Min(lo, r.min)
            hi = Max(hi, r.min + r.extent)
        lo_s = ana.simplify(lo)
        out.append(Range(lo_s, ana.simplify(hi - lo_s)))
    return tuple(out)
