"""Structural equality and hashing: "are these the same program, up to renaming?"

Nodes compare by identity with ``==`` (which builds an ``EQ`` node), so tests ask here::

    assert_structural_equal(after, expected)

Two programs are structurally equal when they have the same tree of nodes with the same
dtypes, kinds, names of blocks and annotations, *and* their variables correspond: a variable
*defined* in the program (a loop variable, a block iteration variable, a let variable, a
reducer's operands, a symbolic size in a parameter's shape) matches the variable defined at
the same place on the other side, whatever its name; likewise buffers defined by parameters,
``alloc_buffers`` and ``Allocate``. Free variables must be the same object, unless
``map_free_vars=True``, which lets them correspond one to one as well.

Statement sequences compare as the printer shows them: a sequence nested in a sequence is
the same program as the flat one (``decompose_reduction`` nests one; parsing the printed
text flattens it), and a sequence of one statement is that statement. So
``structural_equal(f, parse(f.script()))`` holds. An IRModule compares function by
function, by name; ``assert_structural_equal`` names the first function, statement and
expression that differ.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

from mlc.tir.expr import (
    CommReducer,
    FloatImm,
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
    Buffer,
    BufferRegion,
    For,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)

DEF, USE = "def", "use"


def _layout(node: Any) -> list[tuple[str, Any, str]]:
    """The fields of ``node`` in the order a walk must visit them (definitions before uses),
    each tagged DEF or USE. Variables and buffers in USE fields are references."""
    if isinstance(node, For):
        order = ["loop_var", "min", "extent", "kind", "thread_binding", "annotations", "body"]
        defs = {"loop_var"}
    elif isinstance(node, Block):
        order = ["name", "iter_vars", "alloc_buffers", "reads", "writes", "init", "body",
                 "annotations"]
        defs = {"alloc_buffers"}
    elif isinstance(node, IterVar):
        order, defs = ["dom", "kind", "var"], {"var"}
    elif isinstance(node, (Let, LetStmt)):
        order = ["value", "var", "body"] + (["dtype"] if isinstance(node, Let) else [])
        defs = {"var"}
    elif isinstance(node, Allocate):
        order, defs = ["buffer", "body"], {"buffer"}
    elif isinstance(node, CommReducer):
        order, defs = ["lhs", "rhs", "result", "identity", "name", "dtype"], {"lhs", "rhs"}
    elif isinstance(node, Reduce):
        order, defs = ["combiner", "axis", "source", "condition", "dtype"], set()
    elif isinstance(node, PrimFunc):
        order, defs = ["params", "scalars", "name", "attrs", "body"], {"params", "scalars"}
    else:
        order, defs = [f.name for f in dataclasses.fields(node)], set()
    return [(name, getattr(node, name), DEF if name in defs else USE) for name in order]


def _flat(stmt: Any) -> tuple[Any, ...]:
    """The statements of a sequence, nested sequences spliced in (the printer's view)."""
    if not isinstance(stmt, SeqStmt):
        return (stmt,)
    out: list[Any] = []
    for s in stmt.seq:
        out.extend(_flat(s))
    return tuple(out)


def _is_module(x: Any) -> bool:
    """An IRModule (mlc.script): functions by name (tir cannot import script, so by shape)."""
    return isinstance(getattr(x, "functions", None), dict) and not isinstance(x, type)


def _function_text(fn: Any) -> str | None:
    script = getattr(fn, "script", None)
    return script() if callable(script) else None


class _Equal:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free = map_free_vars
        self.lmap: dict[int, Any] = {}
        self.rmap: dict[int, Any] = {}
        self.keep: list[Any] = []
        self.path: list[str] = []
        self.stmts: list[tuple[Any, Any]] = []
        self.diff: tuple[str, Any, Any, tuple[Any, Any] | None] | None = None
        self.in_params = False
        self.function: str | None = None  # the IRModule function that differs

    def fail(self, a: Any, b: Any) -> bool:
        if self.diff is None:
            where = self.stmts[-1] if self.stmts else None
            self.diff = (".".join(self.path) or "<root>", a, b, where)
        return False

    def define(self, a: Any, b: Any) -> None:
        self.lmap[id(a)] = b
        self.rmap[id(b)] = a
        self.keep += [a, b]

    def mapped(self, a: Any, b: Any) -> bool | None:
        """True/False when ``a`` or ``b`` is already mapped, None when both are new."""
        if id(a) in self.lmap or id(b) in self.rmap:
            return self.lmap.get(id(a)) is b and self.rmap.get(id(b)) is a
        return None

    # -- variables and buffers ---------------------------------------------------------------
    def var(self, a: Var, b: Any, role: str) -> bool:
        if not isinstance(b, Var) or type(a) is not type(b) or a.dtype != b.dtype:
            return self.fail(a, b)
        known = self.mapped(a, b)
        if known is not None:
            return known or self.fail(a, b)
        if role == DEF or self.map_free or self.in_params:
            self.define(a, b)
            return True
        return a is b or self.fail(a, b)

    def buffer(self, a: Buffer, b: Any, role: str) -> bool:
        if not isinstance(b, Buffer):
            return self.fail(a, b)
        known = self.mapped(a, b)
        if known is not None:
            return known or self.fail(a, b)
        if role == USE and not self.map_free:
            return a is b or self.fail(a, b)
        if a.dtype != b.dtype or a.scope != b.scope:
            return self.fail(a, b)
        self.define(a, b)
        self.define(a.data, b.data)
        return self.value(a.shape, b.shape, USE, "shape") and self.value(
            a.strides, b.strides, USE, "strides"
        )

    # -- everything ----------------------------------------------------------------------------
    def value(self, a: Any, b: Any, role: str = USE, name: str | None = None) -> bool:
        if name is not None:
            self.path.append(name)
        try:
            return self._value(a, b, role)
        finally:
            if name is not None:
                self.path.pop()

    def _value(self, a: Any, b: Any, role: str) -> bool:  # noqa: C901
        if isinstance(a, SeqStmt) or isinstance(b, SeqStmt):
            if isinstance(a, Stmt) and isinstance(b, Stmt):
                return self.sequence(_flat(a), _flat(b))
        if _is_module(a) or _is_module(b):
            return self.module(a, b)
        if isinstance(a, Var):
            return self.var(a, b, role)
        if isinstance(a, Buffer):
            return self.buffer(a, b, role)
        if isinstance(a, tuple):
            if not isinstance(b, tuple) or len(a) != len(b):
                return self.fail(a, b)
            return all(self.value(x, y, role, f"[{n}]") for n, (x, y) in enumerate(zip(a, b)))
        if isinstance(a, (PrimExpr, Stmt, Range, IterVar, BufferRegion, PrimFunc)):
            if type(a) is not type(b):
                return self.fail(a, b)
            if isinstance(a, FloatImm) and isinstance(b, FloatImm):
                same = a.value == b.value or (math.isnan(a.value) and math.isnan(b.value))
                return (same and a.dtype == b.dtype) or self.fail(a, b)
            is_stmt = isinstance(a, (Stmt, PrimFunc))
            if is_stmt:
                self.stmts.append((a, b))
            try:
                return self.node(a, b)
            finally:
                if is_stmt:
                    self.stmts.pop()
        if isinstance(a, enum.Enum) or a is None or isinstance(a, (str, int, float, bool)):
            if type(a) is not type(b) or a != b:
                return self.fail(a, b)
            return True
        try:
            same = bool(a == b)
        except Exception:  # noqa: BLE001 - unknown payloads compare by identity
            same = a is b
        return same or self.fail(a, b)

    def sequence(self, xs: tuple[Any, ...], ys: tuple[Any, ...]) -> bool:
        if len(xs) == 1 and len(ys) == 1:
            return self.value(xs[0], ys[0], USE)
        for n in range(max(len(xs), len(ys))):
            x = xs[n] if n < len(xs) else None
            y = ys[n] if n < len(ys) else None
            if x is None or y is None:
                self.path.append(f"seq[{n}]")
                try:
                    return self.fail(x, y)
                finally:
                    self.path.pop()
            if not self.value(x, y, USE, f"seq[{n}]"):
                return False
        return True

    def module(self, a: Any, b: Any) -> bool:
        if not (_is_module(a) and _is_module(b)):
            return self.fail(a, b)
        names_a, names_b = sorted(a.functions), sorted(b.functions)
        if names_a != names_b:
            self.path.append("functions")
            try:
                return self.fail(names_a, names_b)
            finally:
                self.path.pop()
        for name in names_a:
            fa, fb = a.functions[name], b.functions[name]
            if isinstance(fa, PrimFunc) or isinstance(fb, PrimFunc):
                ok = _Equal(self.map_free).value(fa, fb, USE)
                if not ok:  # again, to record where (a fresh walk: one function's variables)
                    inner = _Equal(self.map_free)
                    inner.value(fa, fb, USE)
                    self.diff = inner.diff
                    if self.diff is not None:
                        self.diff = (f"functions[{name!r}]." + self.diff[0], *self.diff[1:])
                    self.function = name
                    return False
                continue
            ta, tb = _function_text(fa), _function_text(fb)
            same = (ta == tb) if ta is not None and tb is not None else fa is fb
            if not same:
                self.function = name
                self.path.append(f"functions[{name!r}]")
                try:
                    return self.fail(ta or fa, tb or fb)
                finally:
                    self.path.pop()
        return True

    def node(self, a: Any, b: Any) -> bool:
        for (name, x, role), (_, y, _) in zip(_layout(a), _layout(b)):
            if isinstance(a, PrimFunc) and name == "params":
                self.in_params = True
                try:
                    ok = self.value(x, y, DEF, name)
                finally:
                    self.in_params = False
            else:
                ok = self.value(x, y, role, name)
            if not ok:
                return False
        return True


def structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> bool:
    """True when ``a`` and ``b`` are the same program up to renaming of what they define."""
    return _Equal(map_free_vars).value(a, b)


def assert_structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> None:
    """Raise AssertionError showing both programs and the first place they differ."""
    from mlc.tir.printer import expr_to_str, to_str

    eq = _Equal(map_free_vars)
    if eq.value(a, b):
        return
    assert eq.diff is not None
    path, x, y, where = eq.diff
    if _is_module(a) and _is_module(b):
        name = eq.function
        if name is not None and isinstance(a.functions[name], PrimFunc) and isinstance(
                b.functions[name], PrimFunc):
            try:
                assert_structural_equal(a.functions[name], b.functions[name], map_free_vars)
            except AssertionError as err:
                raise AssertionError(f"the modules differ in function {name!r}: {err}") from None
        raise AssertionError(f"the modules differ at {path}:\n  lhs: {_short(x, None)}\n"
                             f"  rhs: {_short(y, None)}")
    lhs_mark = {where[0]: "differs"} if where else None
    rhs_mark = {where[1]: "differs"} if where else None
    raise AssertionError(
        f"the programs differ at {path}:\n"
        f"  lhs: {_short(x, expr_to_str)}\n"
        f"  rhs: {_short(y, expr_to_str)}\n"
        f"--- lhs ---\n{to_str(a, mark=lhs_mark)}\n--- rhs ---\n{to_str(b, mark=rhs_mark)}"
    )


def _short(x: Any, expr_to_str: Any) -> str:
    if x is None:
        return "(nothing: the other side has more statements)"
    if isinstance(x, (Stmt, PrimFunc)):
        return type(x).__name__ + ": " + str(x).split("\n")[0]
    if isinstance(x, (PrimExpr, Range, IterVar)):
        return f"{expr_to_str(x)} ({type(x).__name__}, {getattr(x, 'dtype', '')})".replace(
            ", )", ")"
        )
    if isinstance(x, Buffer):
        return f"buffer {x.name}"
    return repr(x)


class _Hash:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free = map_free_vars
        self.numbers: dict[int, int] = {}
        self.keep: list[Any] = []
        self.in_params = False

    def number(self, x: Any) -> int:
        if id(x) not in self.numbers:
            self.numbers[id(x)] = len(self.numbers)
            self.keep.append(x)
        return self.numbers[id(x)]

    def key(self, a: Any, role: str = USE) -> Any:  # noqa: C901
        if isinstance(a, SeqStmt):
            flat = _flat(a)
            if len(flat) == 1:
                return self.key(flat[0], role)
            return ("SeqStmt", tuple(self.key(s, role) for s in flat))
        if _is_module(a):
            return ("IRModule", tuple(
                (name, _Hash(self.map_free).key(fn) if isinstance(fn, PrimFunc)
                 else (_function_text(fn) or id(fn)))
                for name, fn in sorted(a.functions.items())))
        if isinstance(a, Var):
            if id(a) in self.numbers or role == DEF or self.map_free or self.in_params:
                return ("v", type(a).__name__, a.dtype, self.number(a))
            return ("free", id(a))
        if isinstance(a, Buffer):
            if id(a) in self.numbers:
                return ("b", self.numbers[id(a)])
            if role == USE and not self.map_free:
                return ("freebuf", id(a))
            n = self.number(a)
            self.number(a.data)
            return ("b", n, a.dtype, a.scope, self.key(a.shape), self.key(a.strides))
        if isinstance(a, tuple):
            return tuple(self.key(x, role) for x in a)
        if isinstance(a, FloatImm):
            return ("f", a.dtype, "nan" if math.isnan(a.value) else a.value)
        if isinstance(a, (PrimExpr, Stmt, Range, IterVar, BufferRegion, PrimFunc)):
            parts: list[Any] = [type(a).__name__]
            for name, x, r in _layout(a):
                if isinstance(a, PrimFunc) and name == "params":
                    self.in_params = True
                    try:
                        parts.append(self.key(x, DEF))
                    finally:
                        self.in_params = False
                else:
                    parts.append(self.key(x, r))
            return tuple(parts)
        if isinstance(a, enum.Enum):
            return (type(a).__name__, a.value)
        try:
            hash(a)
            return a
        except TypeError:
            return ("id", id(a))


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash equal for structurally equal nodes (see :func:`structural_equal`)."""
    return hash(_Hash(map_free_vars).key(node))
