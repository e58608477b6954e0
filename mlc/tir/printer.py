"""The one printer of the loop IR: ``repr``, notebooks, error messages and ``MLC_TRACE``.

Programs print as light, Python-like code close to TVMScript::

    @prim_func
    def matmul(A: Buffer((1024, 1024), "float32"), ...):
        for i in range(1024):
            for j in range(1024):
                for k in range(1024):
                    with block("C"):
                        vi = axis.spatial(1024, i)
                        ...
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

Expressions use as few parentheses as Python's precedence allows while keeping the tree
readable back exactly (``a - (b - c)``). Two different variables that share a name print as
``i`` and ``i_1`` so the text is never ambiguous.

``to_str(node, mark=...)`` appends ``  # <-- here`` to the first line of a marked statement:
schedule and verifier errors use it to point at the culprit.
"""

from __future__ import annotations

import dataclasses
import keyword
import math
import unicodedata
from typing import Any, cast

from mlc.tir import dtype as dt
from mlc.tir.deep import retry_deeper
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
    Call,
    Cast,
    CommReducer,
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
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Reduce,
    Select,
    StringImm,
    Sub,
    Var,
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
    KernelLaunch,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from mlc.tir.thread_tag import ALL_TAGS

__all__ = ["expr_to_str", "to_str"]

INDENT = "    "

# Python's precedence levels, low to high.
_P_LAMBDA, _P_OR, _P_AND, _P_NOT, _P_CMP, _P_ADD, _P_MUL, _P_UNARY, _P_ATOM = range(9)

_INFIX: dict[type, tuple[str, int]] = {
    Add: ("+", _P_ADD),
    Sub: ("-", _P_ADD),
    Mul: ("*", _P_MUL),
    FloorDiv: ("//", _P_MUL),
    FloorMod: ("%", _P_MUL),
    EQ: ("==", _P_CMP),
    NE: ("!=", _P_CMP),
    LT: ("<", _P_CMP),
    LE: ("<=", _P_CMP),
    GT: (">", _P_CMP),
    GE: (">=", _P_CMP),
    And: ("and", _P_AND),
    Or: ("or", _P_OR),
}

_AXIS_KIND = {
    IterKind.SPATIAL: "spatial",
    IterKind.REDUCE: "reduce",
    IterKind.ORDERED: "scan",
    IterKind.OPAQUE: "opaque",
}


def _is_true(e: PrimExpr | None) -> bool:
    return e is None or (isinstance(e, IntImm) and dt.is_bool(e.dtype) and e.value == 1)


class _Printer:
    """Prints one node; keeps the names it gave so equal names never mean different things."""

    def __init__(self, marks: dict[int, str] | None = None, script: bool = False) -> None:
        self.marks = marks or {}
        self.script = script  # TVMScript form: every builtin spelled with its ``T.`` prefix
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.keep: list[Any] = []  # keep named objects alive so their ids stay unique
        self.lines: list[str] = []

    # -- names ----------------------------------------------------------------------------
    def t(self, name: str) -> str:
        """A builtin's name: ``block`` in the printed form, ``T.block`` in script form."""
        return f"T.{name}" if self.script else name

    def name_of(self, obj: Var | Buffer) -> str:
        # Buffers are named by their data pointer: a flattened view of ``A`` is still ``A``.
        key = id(obj.data) if isinstance(obj, Buffer) and obj.data is not None else id(obj)
        found = self.names.get(key)
        if found is not None:
            return found
        base = _identifier(obj.name or "v")
        name = base
        n = 1
        while name in self.used:
            name = f"{base}_{n}"
            n += 1
        self.used.add(name)
        self.names[key] = name
        self.keep.append(obj)
        if isinstance(obj, Buffer):
            self.keep.append(obj.data)
        return name

    # -- expressions ----------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        return self._expr(e)[0]

    def _wrap(self, e: Any, need: int, strict: bool = False) -> str:
        text, prec = self._expr(e)
        if prec < need or (strict and prec == need):
            return f"({text})"
        return text

    def _expr(self, e: Any) -> tuple[str, int]:  # noqa: C901 - one case per node kind
        if isinstance(e, Var):
            return self.name_of(e), _P_ATOM
        if isinstance(e, IntImm):
            return self._int(e)
        if isinstance(e, FloatImm):
            return self._float(e)
        if isinstance(e, StringImm):
            return _quote(e.value), _P_ATOM
        if isinstance(e, BufferLoad):
            return f"{self.name_of(e.buffer)}[{self.exprs(e.indices)}]", _P_ATOM
        if isinstance(e, (Div, Mod)):
            if isinstance(e, Div) and dt.is_float(e.dtype):
                return f"{self._wrap(e.a, _P_MUL)} / {self._wrap(e.b, _P_MUL, True)}", _P_MUL
            fn = self.t("truncdiv" if isinstance(e, Div) else "truncmod")
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _P_ATOM
        if isinstance(e, (Min, Max)):
            fn = self.t("min" if isinstance(e, Min) else "max")
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _P_ATOM
        if isinstance(e, BinaryOp) and type(e) in _INFIX:
            op, prec = _INFIX[type(e)]
            # Comparisons do not chain in our reading, so both sides need to bind tighter.
            left = self._wrap(e.a, prec, strict=(prec == _P_CMP))
            right = self._wrap(e.b, prec, strict=True)
            return f"{left} {op} {right}", prec
        if isinstance(e, Not):
            return f"not {self._wrap(e.a, _P_NOT)}", _P_NOT
        if isinstance(e, Cast):
            if isinstance(e.value, (IntImm, FloatImm)):  # T.int8(300) would read back as a
                # constant (and 300 is no int8): the conversion, spelled out
                return f'{self.t("Cast")}("{e.dtype}", {self.expr(e.value)})', _P_ATOM
            return f"{self.t(e.dtype)}({self.expr(e.value)})", _P_ATOM
        if isinstance(e, Select):
            args = self.exprs((e.condition, e.true_value, e.false_value))
            return f"{self.t('if_then_else') if self.script else 'select'}({args})", _P_ATOM
        if isinstance(e, Call):
            if e.op in ("call_extern", "call_pure_extern"):  # TVM's form: the dtype first
                return f'{self.t(e.op)}("{e.dtype}", {self.exprs(e.args)})', _P_ATOM
            return f"{self.t(e.op)}({self.exprs(e.args)})", _P_ATOM
        if isinstance(e, Ramp):
            base, stride = self.expr(e.base), self.expr(e.stride)
            return f"{self.t('ramp')}({base}, {stride}, {e.lanes})", _P_ATOM
        if isinstance(e, Broadcast):
            return f"{self.t('broadcast')}({self.expr(e.value)}, {e.lanes})", _P_ATOM
        if isinstance(e, Let):
            var = self.name_of(e.var)
            return f"{self.t('let')}({var}, {self.expr(e.value)}, {self.expr(e.body)})", _P_ATOM
        if isinstance(e, Reduce):
            return self._reduce(e), _P_ATOM
        if isinstance(e, CommReducer):
            lhs, rhs = self.name_of(e.lhs), self.name_of(e.rhs)
            body = self.expr(e.result)
            return (
                f"comm_reducer(lambda {lhs}, {rhs}: {body}, identity={self.expr(e.identity)})",
                _P_ATOM,
            )
        if isinstance(e, Range):
            return self.range_call(e), _P_ATOM
        if isinstance(e, IterVar):
            dom = self.range_call(e.dom)
            return f"iter_var({self.name_of(e.var)}, {dom}, {_AXIS_KIND[e.kind]!r})", _P_ATOM
        if isinstance(e, list):  # an annotation's value
            return f"[{self.exprs(e)}]", _P_ATOM
        if isinstance(e, tuple):
            return f"({self.exprs(e)}{',' if len(e) == 1 else ''})", _P_ATOM
        if isinstance(e, bool):
            return str(e), _P_ATOM
        if isinstance(e, float) and math.isinf(e):  # a literal that reads back as inf
            return ("1e999", _P_ATOM) if e > 0 else ("-1e999", _P_UNARY)
        if isinstance(e, (int, float)):
            return repr(e), _P_UNARY if e < 0 else _P_ATOM
        if isinstance(e, str):
            return _quote(e), _P_ATOM
        if dataclasses.is_dataclass(e):
            return self._generic(e), _P_ATOM
        return repr(e), _P_ATOM

    def exprs(self, es: Any) -> str:
        return ", ".join(self.expr(x) for x in es)

    def _int(self, e: IntImm) -> tuple[str, int]:
        if dt.is_bool(e.dtype):
            return ("True" if e.value else "False"), _P_ATOM
        if e.dtype == "int32":
            return str(e.value), (_P_UNARY if e.value < 0 else _P_ATOM)
        return f"{self.t(e.dtype)}({e.value})", _P_ATOM

    def _float(self, e: FloatImm) -> tuple[str, int]:
        v = e.value
        if math.isnan(v) or math.isinf(v):
            text = f"{self.t(e.dtype)}({_quote(repr(v))})"
            return text, _P_ATOM
        text = repr(float(v))
        if e.dtype != "float32":
            return f"{self.t(e.dtype)}({text})", _P_ATOM
        return text, (_P_UNARY if v < 0 or text.startswith("-") else _P_ATOM)

    def _reduce(self, e: Reduce) -> str:
        name = e.combiner.name if e.combiner.name and e.combiner.name != "reducer" else None
        axis = ", ".join(self.name_of(iv.var) for iv in e.axis)
        parts = [self.expr(e.source), f"axis=[{axis}]"]
        if not _is_true(e.condition):
            parts.append(f"where={self.expr(e.condition)}")
        if name is None:
            parts.append(f"combiner={self.expr(e.combiner)}")
            name = "reduce"
        return f"{name}({', '.join(parts)})"

    def _generic(self, node: Any) -> str:
        args = []
        for f in dataclasses.fields(node):
            args.append(f"{f.name}={self.expr(getattr(node, f.name))}")
        return f"{type(node).__name__}({', '.join(args)})"

    # -- pieces shared by statements --------------------------------------------------------
    def range_end(self, lo: PrimExpr, extent: PrimExpr) -> str:
        """The text of ``lo + extent``, folded when both are constants."""
        if isinstance(lo, IntImm) and isinstance(extent, IntImm) and lo.dtype == extent.dtype:
            return self.expr(IntImm(lo.value + extent.value, lo.dtype))
        if isinstance(lo, IntImm) and lo.value == 0:
            return self.expr(extent)
        return self.expr(Add(lo, extent))

    def bounds_args(self, lo: PrimExpr, extent: PrimExpr) -> str:
        """``8`` for [0, 8), ``2, 10`` for [2, 10)."""
        if isinstance(lo, IntImm) and lo.value == 0:
            return self.expr(extent)
        return f"{self.expr(lo)}, {self.range_end(lo, extent)}"

    def range_call(self, r: Range) -> str:
        return f"range({self.bounds_args(r.min, r.extent)})"

    def region(self, br: BufferRegion) -> str:
        dims = []
        for r in br.region:
            if isinstance(r.extent, IntImm) and r.extent.value == 1:
                dims.append(self.expr(r.min))
            else:
                dims.append(f"{self.expr(r.min)}:{self.range_end(r.min, r.extent)}")
        return f"{self.name_of(br.buffer)}[{', '.join(dims)}]"

    def buffer_decl(self, b: Buffer, ctor: str = "Buffer") -> str:
        shape = self.expr(tuple(b.shape))
        parts = [shape, _quote(b.dtype)]
        if b.scope != "global":
            parts.append(f"scope={_quote(b.scope)}")
        if b.strides:
            parts.append(f"strides={self.expr(tuple(b.strides))}")
        return f"{self.t(ctor)}({', '.join(parts)})"

    # -- statements -------------------------------------------------------------------------
    def emit(self, depth: int, text: str, node: Any = None) -> None:
        line = INDENT * depth + text
        if node is not None and id(node) in self.marks:
            line += f"  # <-- {self.marks.pop(id(node))}"
        self.lines.append(line)

    def func(self, f: PrimFunc) -> None:
        params = ", ".join(
            f"{self.name_of(a)}: {self.t(a.dtype)}" if isinstance(a, Var)  # a scalar
            else f"{self.name_of(a)}: {self.buffer_decl(a)}"
            for a in f.arguments
        )
        self.emit(0, "@" + self.t("prim_func"))
        self.emit(0, f"def {_identifier(f.name)}({params}):", f)
        scalars = {id(v) for _, v in f.scalars}
        for v in f.size_vars:  # sizes that are not int32 say so: `n = T.int64()`
            if v.dtype != "int32" and id(v) not in scalars:
                self.emit(1, f"{self.name_of(v)} = {self.t(v.dtype)}()")
        if f.attrs:
            attrs = ", ".join(f"{_quote(k)}: {self.expr(v)}" for k, v in f.attrs)
            self.emit(1, f"{self.t('func_attr')}({{{attrs}}})")
        body = f.body
        if _is_plain_root(body):
            assert isinstance(body, BlockRealize)
            root = body.block
            msgs = [self.marks.pop(id(n)) for n in (body, root) if id(n) in self.marks]
            if msgs:
                self.emit(1, f"# the root block  # <-- {'; '.join(msgs)}")
            for b in root.alloc_buffers:
                self.emit(1, f"{self.name_of(b)} = {self.buffer_decl(b, 'alloc_buffer')}", b)
            self.stmt(root.body, 1)
        else:
            self.stmt(body, 1)

    def stmt(self, s: Any, depth: int) -> None:  # noqa: C901 - one case per node kind
        if isinstance(s, SeqStmt):
            if id(s) in self.marks and s.seq:
                self.marks.setdefault(id(s.seq[0]), self.marks.pop(id(s)))
            for x in s.seq:
                self.stmt(x, depth)
            if not s.seq:
                self.emit(depth, "pass", s)
        elif isinstance(s, For):
            self.emit(depth, f"for {self.name_of(s.loop_var)} in {self._for_iter(s)}:", s)
            self.stmt(s.body, depth + 1)
        elif isinstance(s, BlockRealize):
            self.block(s.block, depth, s)
        elif isinstance(s, Block):
            self.block(s, depth, None)
        elif isinstance(s, BufferStore):
            target = f"{self.name_of(s.buffer)}[{self.exprs(s.indices)}]"
            self.emit(depth, f"{target} = {self.expr(s.value)}", s)
        elif isinstance(s, Evaluate):
            self.emit(depth, self.expr(s.value), s)
        elif isinstance(s, IfThenElse):
            self.emit(depth, f"if {self.expr(s.condition)}:", s)
            self.stmt(s.then_case, depth + 1)
            if s.else_case is not None:
                self.emit(depth, "else:")
                self.stmt(s.else_case, depth + 1)
        elif isinstance(s, LetStmt):
            self.emit(depth, f"{self.name_of(s.var)} = {self.expr(s.value)}", s)
            self.stmt(s.body, depth)
        elif isinstance(s, Allocate):
            decl = self.buffer_decl(s.buffer, "alloc_buffer")
            self.emit(depth, f"{self.name_of(s.buffer)} = {decl}", s)
            self.stmt(s.body, depth)
        elif isinstance(s, KernelLaunch):
            extents = [(t, self.expr(e)) for t, e in s.grid_extents]
            extents += [(t, str(e)) for t, e in s.thread_extents]
            args = "".join(f", {t.replace('.', '_')}={e}" for t, e in extents)
            self.emit(depth, f"with launch_kernel({_quote(s.name)}{args}):", s)
            for buf in s.shared:
                decl = self.buffer_decl(buf, "alloc_buffer")
                self.emit(depth + 1, f"{self.name_of(buf)} = {decl}")
            self.stmt(s.body, depth + 1)
        elif isinstance(s, PrimFunc):
            self.func(s)
        elif isinstance(s, Stmt) and dataclasses.is_dataclass(s):
            self._generic_stmt(s, depth)
        elif s is None:
            self.emit(depth, "pass")
        else:
            self.emit(depth, self.expr(s), s)

    def _for_iter(self, s: For) -> str:
        bounds = self.bounds_args(s.min, s.extent)
        extra = ""
        if s.annotations:
            items = ", ".join(f"{_quote(k)}: {self.expr(v)}" for k, v in s.annotations)
            extra = f", annotations={{{items}}}"
        if s.kind == ForKind.SERIAL:
            return f"{self.t('serial')}({bounds}{extra})" if extra else f"range({bounds})"
        if s.kind == ForKind.THREAD_BINDING:
            thread = _quote(s.thread_binding or "?")
            return f"{self.t('thread_binding')}({bounds}, {thread}{extra})"
        return f"{self.t(s.kind.value)}({bounds}{extra})"

    def block(self, b: Block, depth: int, realize: BlockRealize | None) -> None:
        marked_realize = realize is not None and id(realize) in self.marks
        line = f"with {self.t('block')}({_quote(b.name)}):"
        self.emit(depth, line, realize if marked_realize else b)
        if marked_realize and id(b) in self.marks:  # both marked: merge the messages
            self.lines[-1] += f"; {self.marks.pop(id(b))}"
        d = depth + 1
        values = list(realize.iter_values) if realize is not None else []
        for n, iv in enumerate(b.iter_vars):
            dom = iv.dom
            if isinstance(dom.min, IntImm) and dom.min.value == 0:
                dom_text = self.expr(dom.extent)
            else:
                dom_text = f"({self.expr(dom.min)}, {self.range_end(dom.min, dom.extent)})"
            kind = _AXIS_KIND[iv.kind]
            if n < len(values):
                value = f", {self.expr(values[n])}"
            else:
                value = ", ?" if realize is not None else ""
            self.emit(d, f"{self.name_of(iv.var)} = {self.t('axis')}.{kind}({dom_text}{value})")
        for extra in values[len(b.iter_vars) :]:
            self.emit(d, f"# extra binding without an iteration variable: {self.expr(extra)}")
        if realize is not None and not _is_true(realize.predicate):
            self.emit(d, f"{self.t('where')}({self.expr(realize.predicate)})")
        self.emit(d, f"{self.t('reads')}({', '.join(self.region(r) for r in b.reads)})")
        self.emit(d, f"{self.t('writes')}({', '.join(self.region(r) for r in b.writes)})")
        if b.annotations:
            items = ", ".join(f"{_quote(k)}: {self.expr(v)}" for k, v in b.annotations)
            self.emit(d, f"{self.t('block_attr')}({{{items}}})")
        for buf in b.alloc_buffers:
            self.emit(d, f"{self.name_of(buf)} = {self.buffer_decl(buf, 'alloc_buffer')}", buf)
        if b.init is not None:
            self.emit(d, f"with {self.t('init')}():")
            self.stmt(b.init, d + 1)
        self.stmt(b.body, d)

    def _generic_stmt(self, s: Stmt, depth: int) -> None:
        """Statements this printer does not know yet: ``with Name(fields):`` + body."""
        fields = dataclasses.fields(cast(Any, s))
        body_fields = [f for f in fields if isinstance(getattr(s, f.name), Stmt)]
        args = ", ".join(
            f"{f.name}={self.expr(getattr(s, f.name))}"
            for f in dataclasses.fields(cast(Any, s))
            if f not in body_fields
        )
        if not body_fields:
            self.emit(depth, f"{type(s).__name__}({args})", s)
            return
        self.emit(depth, f"with {type(s).__name__}({args}):", s)
        for f in body_fields:
            self.stmt(getattr(s, f.name), depth + 1)


def _is_plain_root(body: Stmt) -> bool:
    """The root block made by create_prim_func is printed as the function's body."""
    if not isinstance(body, BlockRealize):
        return False
    b = body.block
    return (
        b.name == "root"
        and not b.iter_vars
        and not b.reads
        and not b.writes
        and b.init is None
        and not b.annotations
        and _is_true(body.predicate)
    )


def _quote(s: str) -> str:
    """A Python string literal of ``s``: quotes, backslashes and what is not printable
    (a newline, a NUL) escaped, so a block named ``"a\\nb"`` prints on one line."""
    out = []
    for c in s:
        if c in "\\\"":
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        else:
            out.append(c.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return '"' + "".join(out) + '"'


def _identifier(name: str) -> str:
    """``name`` as a Python identifier that reads back as itself: characters an identifier
    cannot hold become ``_`` (``"my tensor"`` -> ``my_tensor``), a leading digit gets a
    ``v``, a keyword a trailing ``_`` (``lambda_``), and the text is NFKC-normalized as
    Python normalizes identifiers (``"\ufb01"``, the ligature fi, reads back as ``fi``)."""
    if name.isidentifier() and name.isascii() and not keyword.iskeyword(name):
        return name
    if name in ALL_TAGS:  # a GPU kernel's blockIdx.x / threadIdx.x, printed as CUDA reads
        return name
    text = unicodedata.normalize("NFKC", name)
    text = "".join(c if ("_" + c).isidentifier() else "_" for c in text)
    if not text.isidentifier():
        text = "v" + text
    if keyword.iskeyword(text):
        text += "_"
    return unicodedata.normalize("NFKC", text)


def _marks(mark: object | None) -> dict[int, str]:
    if mark is None:
        return {}
    if isinstance(mark, dict):
        return {id(k): str(v) for k, v in mark.items()}
    if isinstance(mark, (list, tuple, set, frozenset)):
        return {id(k): "here" for k in mark}
    return {id(mark): "here"}


# ---------------------------------------------------------------------------------------------
# public API


def expr_to_str(e: Any) -> str:
    """One expression as text, e.g. ``A[vi, vk] * B[vk, vj]`` or ``(a + b) * c``."""
    try:
        return retry_deeper(lambda: _Printer().expr(e))
    except Exception as err:  # the printer must never hide the real error
        return f"<{type(e).__name__}: unprintable ({type(err).__name__}: {err})>"


def to_str(node: Any, mark: object | None = None, script: bool = False) -> str:
    """Any IR node as text. ``mark`` is a statement (or a list of them, or a dict
    ``{stmt: "message"}``) whose first printed line gets ``  # <-- here`` (or the message).
    ``script=True`` spells every builtin with TVMScript's ``T.`` prefix (``T.block``,
    ``T.axis.spatial``, ``T.Buffer``): the text :mod:`mlc.script` reads back, as does the
    plain form."""
    try:  # a program nested past Python's recursion limit is printed on a deep stack
        return retry_deeper(lambda: _to_str(node, mark, script))
    except Exception as err:  # pragma: no cover - the printer must never hide the real error
        return f"<{type(node).__name__}: unprintable ({type(err).__name__}: {err})>"


def _to_str(node: Any, mark: object | None, script: bool = False) -> str:
    p = _Printer(_marks(mark), script)
    if isinstance(node, PrimFunc):
        p.func(node)
    elif isinstance(node, Stmt):
        p.stmt(node, 0)
    elif isinstance(node, Buffer):
        return f"{p.name_of(node)} = {p.buffer_decl(node)}"
    elif isinstance(node, BufferRegion):
        return p.region(node)
    else:
        return p.expr(node)
    return "\n".join(p.lines)
