"""``eval_prim_func``: run any PrimFunc on numpy arrays, slowly and simply, as an oracle.

The PrimFunc is translated to the text of a Python function (loops become ``for`` loops,
blocks bind their iteration variables and run their init when every reduce variable is at
its start (a reduction whose domain may be empty gets its init separated first, as the
compiled code does, so a sum over nothing is 0 as in numpy), loads and stores index numpy
arrays with a bounds check), which is then run. It understands both forms of the loop IR:

* the block form that ``te.create_prim_func`` and ``tir.Schedule`` produce, and
* the lowered form (no blocks, flattened 1-D buffers, ``Allocate``, ``IfThenElse``,
  ``LetStmt``, vector ``Ramp``/``Broadcast`` expressions).

Scalars stay numpy scalars of the IR's dtype (``float32`` arithmetic is float32), integer
loop variables are Python ints, ``//`` and ``%`` round down (FloorDiv/FloorMod), a ``Select``
evaluates only the side it picks. Use ``source(func)`` to read the generated Python; what
it calls while it runs (checked loads and stores, casts, division) is in
:mod:`mlc.testing.interpreter_runtime`.

    f = te.create_prim_func([A, B, C])
    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    c = np.empty(n, "float32")
    eval_prim_func(f, a, b, c)        # c is written in place
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from mlc.errors import InterpreterError
from mlc.testing.interpreter_runtime import GLOBALS, cast
from mlc.tir import dtype as dt
from mlc.tir import expr as E
from mlc.tir import stmt as S
from mlc.tir.deep import retry_deeper
from mlc.tir.functor import post_order_visit
from mlc.transform.lower_blocks import separate_inits_of_maybe_empty_reductions

# ---------------------------------------------------------------------------------------------
# runtime helpers, visible to the generated code as globals


_BLOCKS_PER_DEF = 16  # nested blocks in one generated function (Python allows 20)
_MAX_INDENT = 90  # Python's tokenizer allows 100 levels of indentation


_NO_OPS = {"tvm_storage_sync", "syncthreads", "prefetch", "noop"}


# ---------------------------------------------------------------------------------------------
# translation to Python source


class _Gen:
    def __init__(self, func: S.PrimFunc) -> None:
        self.func = func
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.consts: dict[str, Any] = {}
        # Buffers grouped by their data pointer: a flattened buffer and the parameter it came
        # from share one ``data`` variable and so one numpy array.
        self.buffers_of_data: dict[int, list[S.Buffer]] = {}
        self.mask: str | None = None  # the lane mask inside a vector Select
        self.n_select = 0
        self.n_temp = 0
        self.text = ""  # the generated source, once generate() has run
        self.scope_base = 1  # indentation of the body of the function being written
        self.n_scope = 0

    # -- names ------------------------------------------------------------------------------
    def name(self, node: Any, hint: str) -> str:
        key = id(node)
        if key not in self.names:
            base = re.sub(r"\W", "_", hint) or "v"
            if not base[0].isalpha():
                base = "v" + base
            cand, k = base, 0
            while cand in self.used or cand in GLOBALS:
                k += 1
                cand = f"{base}_{k}"
            self.used.add(cand)
            self.names[key] = cand
        return self.names[key]

    def var(self, v: E.Var) -> str:
        return self.name(v, "v_" + v.name)

    def buf(self, b: S.Buffer) -> str:
        return self.name(b, "b_" + b.name)

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def const(self, value: Any) -> str:
        name = f"_c{len(self.consts)}"
        self.consts[name] = value
        return name

    # -- buffers ----------------------------------------------------------------------------
    def collect_buffers(self) -> None:
        def visit(n: Any) -> None:
            bufs: list[S.Buffer] = []
            if isinstance(n, (E.BufferLoad, S.BufferStore, S.BufferRegion, S.Allocate)):
                bufs.append(n.buffer)
            if isinstance(n, S.Block):
                bufs.extend(n.alloc_buffers)
            for b in bufs:
                group = self.buffers_of_data.setdefault(id(b.data), [])
                if all(b is not x for x in group):
                    group.append(b)

        post_order_visit(self.func.body, visit)

    def emit_views(self, depth: int, data: E.Var, arr: str) -> None:
        for b in self.buffers_of_data.get(id(data), []):
            shape = ", ".join(f"int({self.expr(s)})" for s in b.shape)
            strides = ", ".join(f"int({self.expr(s)})" for s in b.strides)
            view = self.buf(b)
            self.emit(depth, f"{view} = _view({arr}, ({shape}{',' if shape else ''}), "
                             f"({strides}{',' if strides else ''}))")
            if b.shape:
                dims = ", ".join(f"{view}_n{d}" for d in range(len(b.shape)))
                self.emit(depth, f"{dims}{',' if len(b.shape) == 1 else ''} = {view}.shape")

    def emit_alloc(self, depth: int, b: S.Buffer) -> None:
        shape = ", ".join(f"int({self.expr(s)})" for s in b.shape)
        strides = ", ".join(f"int({self.expr(s)})" for s in b.strides)
        arr = self.name(b.data, "d_" + b.name)
        self.emit(depth, f"{arr} = _alloc(({shape}{',' if shape else ''}), "
                         f"({strides}{',' if strides else ''}), {b.dtype!r})")
        if id(b.data) not in self.buffers_of_data:
            self.buffers_of_data[id(b.data)] = [b]
        self.emit_views(depth, b.data, arr)

    # -- expressions ------------------------------------------------------------------------
    def expr(self, e: E.PrimExpr) -> str:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise InterpreterError(f"the interpreter cannot evaluate {type(e).__name__}: {e}")
        return str(method(e))

    def vec(self, e: E.PrimExpr) -> bool:
        return dt.lanes(e.dtype) > 1

    def e_Var(self, e: E.Var) -> str:
        if id(e) not in self.names:
            raise InterpreterError(f"the variable {e.name!r} is used but never bound")
        return self.names[id(e)]

    e_SizeVar = e_Var

    def e_IntImm(self, e: E.IntImm) -> str:
        if dt.is_bool(e.dtype):
            return "True" if e.value else "False"
        if e.dtype in ("int32", "int64"):
            return repr(e.value)
        return self.const(cast(e.value, e.dtype))

    def e_FloatImm(self, e: E.FloatImm) -> str:
        return self.const(cast(e.value, e.dtype))

    def e_StringImm(self, e: E.StringImm) -> str:
        return repr(e.value)

    def e_Cast(self, e: E.Cast) -> str:
        return f"_cast({self.expr(e.value)}, {e.dtype!r})"

    def _bin(self, e: E.BinaryOp, op: str) -> str:
        # Operands are numpy scalars/arrays of the IR's dtype (or Python ints for int32/int64
        # loop arithmetic), so numpy keeps the dtype: float32 stays float32, int8 wraps.
        return f"({self.expr(e.a)} {op} {self.expr(e.b)})"

    def e_Add(self, e: E.Add) -> str:
        return self._bin(e, "+")

    def e_Sub(self, e: E.Sub) -> str:
        return self._bin(e, "-")

    def e_Mul(self, e: E.Mul) -> str:
        return self._bin(e, "*")

    def e_Div(self, e: E.Div) -> str:
        if dt.is_float(e.dtype):
            return self._bin(e, "/")
        return f"_tdiv({self.expr(e.a)}, {self.expr(e.b)})"

    def e_Mod(self, e: E.Mod) -> str:
        return f"_tmod({self.expr(e.a)}, {self.expr(e.b)})"

    def e_FloorDiv(self, e: E.FloorDiv) -> str:
        return self._bin(e, "//")

    def e_FloorMod(self, e: E.FloorMod) -> str:
        return self._bin(e, "%")

    def e_Min(self, e: E.Min) -> str:
        fn = "np.minimum" if self.vec(e) else "_min"
        return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})"

    def e_Max(self, e: E.Max) -> str:
        fn = "np.maximum" if self.vec(e) else "_max"
        return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})"

    def _cmp(self, e: E.CmpOp, op: str) -> str:
        return f"({self.expr(e.a)} {op} {self.expr(e.b)})"

    def e_EQ(self, e: E.EQ) -> str:
        return self._cmp(e, "==")

    def e_NE(self, e: E.NE) -> str:
        return self._cmp(e, "!=")

    def e_LT(self, e: E.LT) -> str:
        return self._cmp(e, "<")

    def e_LE(self, e: E.LE) -> str:
        return self._cmp(e, "<=")

    def e_GT(self, e: E.GT) -> str:
        return self._cmp(e, ">")

    def e_GE(self, e: E.GE) -> str:
        return self._cmp(e, ">=")

    def e_And(self, e: E.And) -> str:
        if self.vec(e):
            return f"({self.expr(e.a)} & {self.expr(e.b)})"
        return f"bool({self.expr(e.a)} and {self.expr(e.b)})"

    def e_Or(self, e: E.Or) -> str:
        if self.vec(e):
            return f"({self.expr(e.a)} | {self.expr(e.b)})"
        return f"bool({self.expr(e.a)} or {self.expr(e.b)})"

    def e_Not(self, e: E.Not) -> str:
        if self.vec(e):
            return f"(~{self.expr(e.a)})"
        return f"(not {self.expr(e.a)})"

    def e_Select(self, e: E.Select) -> str:
        c = self.expr(e.condition)
        if not self.vec(e):
            return f"({self.expr(e.true_value)} if {c} else {self.expr(e.false_value)})"
        # Vector: each side is evaluated with a lane mask, so a masked-off lane may not load.
        self.n_select += 1
        cname = f"_sel{self.n_select}"
        outer = self.mask
        self.mask = cname if outer is None else f"({outer} & {cname})"
        t = self.expr(e.true_value)
        self.mask = f"(~{cname})" if outer is None else f"({outer} & ~{cname})"
        f = self.expr(e.false_value)
        self.mask = outer
        return f"(({cname} := np.asarray({c})), np.where({cname}, {t}, {f}))[1]"

    def e_Let(self, e: E.Let) -> str:
        return f"(({self.var(e.var)} := {self.expr(e.value)}), {self.expr(e.body)})[1]"

    def e_Call(self, e: E.Call) -> str:
        args = ", ".join(self.expr(a) for a in e.args)
        return f"_call({e.op!r}, {e.dtype!r}{', ' if args else ''}{args})"

    def e_Ramp(self, e: E.Ramp) -> str:
        return f"({self.expr(e.base)} + {self.expr(e.stride)} * np.arange({e.lanes}))"

    def e_Broadcast(self, e: E.Broadcast) -> str:
        return f"np.full({e.lanes}, {self.expr(e.value)}, dtype={dt.element(e.dtype)!r})"

    def e_BufferLoad(self, e: E.BufferLoad) -> str:
        idx = ", ".join(self.expr(i) for i in e.indices)
        tup = f"({idx}{',' if len(e.indices) == 1 else ''})"
        name = self.buf(e.buffer)
        if any(dt.lanes(i.dtype) > 1 for i in e.indices):
            return f"_vld({name}, {tup}, {self.mask or 'None'}, {e.buffer.name!r})"
        if not e.indices:
            return f"{name}[()]"
        cond, temps = self.checked(name, e.indices)
        return f"({name}[{temps}] if {cond} else _raise_oob({name}, {tup}, {e.buffer.name!r}))"

    def checked(self, name: str, indices: tuple[E.PrimExpr, ...]) -> tuple[str, str]:
        """A bounds condition that also stores each index in a temporary, and the temporaries
        (inline checks: a helper call per access would triple the interpreter's time)."""
        conds, temps = [], []
        for d, i in enumerate(indices):
            self.n_temp += 1
            t = f"_t{self.n_temp}"
            conds.append(f"0 <= ({t} := {self.expr(i)}) < {name}_n{d}")
            temps.append(t)
        return " and ".join(conds), ", ".join(temps)

    def e_Reduce(self, e: E.Reduce) -> str:
        raise InterpreterError(
            "a Reduce node is te-level; run te.create_prim_func first (or use mlc.testing."
            "evaluate for tensor expressions)"
        )

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s: S.Stmt, depth: int) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise InterpreterError(f"the interpreter cannot run {type(s).__name__}")
        if depth - self.scope_base >= _BLOCKS_PER_DEF and isinstance(
            s, (S.For, S.IfThenElse, S.BlockRealize)
        ):
            # Python compiles at most 20 blocks (for, if) inside each other in one function:
            # the statement goes into a nested function, which starts a fresh count
            if depth >= _MAX_INDENT:
                raise InterpreterError(
                    f"the interpreter runs programs of at most {_MAX_INDENT} nested loops and "
                    "conditions (Python's indentation limit); this one nests deeper")
            self.n_scope += 1
            name = f"_scope{self.n_scope}"
            self.emit(depth, f"def {name}():")
            saved, self.scope_base = self.scope_base, depth + 1
            method(s, depth + 1)
            self.scope_base = saved
            self.emit(depth, f"{name}()")
            return
        method(s, depth)

    def s_SeqStmt(self, s: S.SeqStmt, depth: int) -> None:
        if not s.seq:
            self.emit(depth, "pass")
        for x in s.seq:
            self.stmt(x, depth)

    def s_For(self, s: S.For, depth: int) -> None:
        lo, ext = self.expr(s.min), self.expr(s.extent)
        v = self.var(s.loop_var)
        self.emit(depth, f"for {v} in range(int({lo}), int({lo}) + int({ext})):")
        self.stmt(s.body, depth + 1)

    def s_BufferStore(self, s: S.BufferStore, depth: int) -> None:
        idx = ", ".join(self.expr(i) for i in s.indices)
        tup = f"({idx}{',' if len(s.indices) == 1 else ''})"
        name = self.buf(s.buffer)
        value = self.expr(s.value)
        if any(dt.lanes(i.dtype) > 1 for i in s.indices):
            self.emit(depth, f"_vst({name}, {tup}, {value}, None, {s.buffer.name!r})")
        else:
            if not s.indices:
                self.emit(depth, f"{name}[()] = {value}")
                return
            cond, temps = self.checked(name, s.indices)
            self.emit(depth, f"if not ({cond}):")
            self.emit(depth + 1, f"_raise_oob({name}, {tup}, {s.buffer.name!r})")
            self.emit(depth, f"{name}[{temps}] = {value}")

    def s_Evaluate(self, s: S.Evaluate, depth: int) -> None:
        if isinstance(s.value, E.Call) and s.value.op in _NO_OPS:
            self.emit(depth, "pass")
            return
        if isinstance(s.value, (E.IntImm, E.FloatImm)):
            self.emit(depth, "pass")
            return
        self.emit(depth, self.expr(s.value))

    def s_IfThenElse(self, s: S.IfThenElse, depth: int) -> None:
        self.emit(depth, f"if {self.expr(s.condition)}:")
        self.stmt(s.then_case, depth + 1)
        if s.else_case is not None:
            self.emit(depth, "else:")
            self.stmt(s.else_case, depth + 1)

    def s_LetStmt(self, s: S.LetStmt, depth: int) -> None:
        self.emit(depth, f"{self.var(s.var)} = {self.expr(s.value)}")
        self.stmt(s.body, depth)

    def s_Allocate(self, s: S.Allocate, depth: int) -> None:
        self.emit_alloc(depth, s.buffer)
        self.stmt(s.body, depth)

    def s_BlockRealize(self, s: S.BlockRealize, depth: int) -> None:
        pred = s.predicate
        if not (isinstance(pred, E.IntImm) and pred.value == 1):
            self.emit(depth, f"if {self.expr(pred)}:")
            depth += 1
        blk = s.block
        if len(s.iter_values) != len(blk.iter_vars):
            raise InterpreterError(
                f"block {blk.name!r} has {len(blk.iter_vars)} iteration variables but "
                f"{len(s.iter_values)} bindings"
            )
        for iv, value in zip(blk.iter_vars, s.iter_values):
            self.emit(depth, f"{self.var(iv.var)} = {self.expr(value)}")
        for b in blk.alloc_buffers:
            self.emit_alloc(depth, b)
        if blk.init is not None:
            reduce_vars = [iv for iv in blk.iter_vars if iv.kind is E.IterKind.REDUCE]
            cond = " and ".join(
                f"{self.var(iv.var)} == {self.expr(iv.dom.min)}" for iv in reduce_vars
            )
            self.emit(depth, f"if {cond or 'True'}:")
            self.stmt(blk.init, depth + 1)
        self.stmt(blk.body, depth)

    def s_Block(self, s: S.Block, depth: int) -> None:
        raise InterpreterError(f"block {s.name!r} appears without a BlockRealize")

    # -- the function -----------------------------------------------------------------------
    def generate(self) -> str:
        self.collect_buffers()
        f = self.func
        args = [self.name(b.data, "a_" + b.name) for b in f.params]
        names = [self.var(a) if isinstance(a, E.Var) else self.name(a.data, "")
                 for a in f.arguments]
        self.emit(0, f"def _mlc_main({', '.join(names)}):")
        for _, v in f.scalars:  # a scalar parameter: the numpy scalar of its dtype
            self.emit(1, f"{self.var(v)} = {self.const(np.dtype(dt.element(v.dtype)).type)}"
                         f"({self.var(v)})")
        # Bind symbolic sizes from the arrays' shapes, then check every dimension.
        for b, a in zip(f.params, args):
            for d, s in enumerate(b.shape):
                if isinstance(s, E.Var) and id(s) not in self.names:
                    self.emit(1, f"{self.var(s)} = {a}.shape[{d}]")
        for b, a in zip(f.params, args):
            shape = ", ".join(f"int({self.expr(s)})" for s in b.shape)
            shape = f"({shape}{',' if len(b.shape) == 1 else ''})"
            # A parameter given flattened (lowered form) takes the array's total size.
            if len(b.shape) == 1:
                self.emit(1, f"if {a}.ndim != 1 and {a}.size == {shape}[0]:")
                self.emit(2, f"{a} = {a}.reshape(-1)")
            self.emit(1, f"if tuple({a}.shape) != {shape}:")
            self.emit(2, f"raise InterpreterError('argument {b.name} must have shape ' + "
                         f"str({shape}) + ', got ' + str({a}.shape))")
            self.emit_views(1, b.data, a)
        self.stmt(f.body, 1)
        return "\n".join(self.lines) + "\n"


def source(func: S.PrimFunc) -> str:
    """The Python code ``eval_prim_func`` runs for ``func`` (to read, or to debug)."""
    return _Gen(func).generate()


def eval_prim_func(func: S.PrimFunc, *args: Any) -> None:
    """Run ``func`` on numpy arrays, one per parameter in order (and a number per scalar
    parameter, at its place); outputs are written in place.

    Symbolic sizes bind from the arrays' shapes. Arrays must be C-contiguous numpy arrays of
    the parameters' dtypes (checked)."""
    arguments = func.arguments
    if len(args) != len(arguments):
        names = ", ".join(a.name for a in arguments)
        what = "arguments" if func.scalars else "arrays"
        raise InterpreterError(
            f"{func.name} takes {len(arguments)} {what} ({names}), got {len(args)}"
        )
    arrays = [a for p, a in zip(arguments, args) if isinstance(p, S.Buffer)]
    for position, v in func.scalars:
        value = args[position]
        if not isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
            raise InterpreterError(f"argument {v.name} must be a number, got {type(value)}")
    for b, a in zip(func.params, arrays):
        if not isinstance(a, np.ndarray):
            raise InterpreterError(f"argument {b.name} must be a numpy array, got {type(a)}")
        if a.dtype != np.dtype(dt.element(b.dtype)):
            raise InterpreterError(f"argument {b.name} must be {b.dtype}, got {a.dtype}")
        if not a.flags.c_contiguous:
            raise InterpreterError(f"argument {b.name} must be C-contiguous")
    # A reduction over an empty domain still runs its init (numpy's sum of nothing is 0):
    # the same rule the compiled code follows (lower_blocks), applied to the block form.
    func = retry_deeper(lambda: separate_inits_of_maybe_empty_reductions(func))
    def translate() -> _Gen:  # a fresh translator each try (see mlc.tir.deep)
        gen = _Gen(func)
        gen.text = gen.generate()
        return gen

    gen = retry_deeper(translate)
    text = gen.text
    env: dict[str, Any] = dict(GLOBALS)
    env.update(gen.consts)
    code = compile(text, f"<mlc interpreter: {func.name}>", "exec")
    exec(code, env)
    fn = env["_mlc_main"]
    with np.errstate(all="ignore"):
        fn(*args)
