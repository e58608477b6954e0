"""Graph rewrites written by students: a block builder and a mutator in the course's shape.

The mutator walks a :class:`~mlc.graph.relax.Function` binding by binding; for each binding
it visits the value (``visit_call_`` for a call) and emits what that returns, so a rewrite
overrides one method::

    @relax.expr_functor.mutator
    class EwiseFMARewriter(relax.PyExprMutator):
        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)      # arguments first
            add_op = relax.Op.get("relax.add")
            multiply_op = relax.Op.get("relax.multiply")
            ewise_fma_op = relax.Op.get("relax.ewise_fma")
            if call.op != add_op:
                return call
            value = self.lookup_binding(call.args[0])    # what made the first argument?
            if not isinstance(value, relax.Call) or value.op != multiply_op:
                return call
            return relax.Call(ewise_fma_op, [value.args[0], value.args[1], call.args[1]],
                              None, None)

    updated = EwiseFMARewriter().visit_expr(MyModule["main"])
    relax.analysis.remove_all_unused(updated).show()     # the multiply is dead now

The :class:`BlockBuilder` (``self.builder_``) collects the module's functions:
``builder_.call_te(topi.nn.dense, x, w)`` turns a te compute into a prim_func of the module
and returns the ``call_tir`` that runs it (the course's ``map_dense``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from mlc.errors import GraphError
from mlc.graph.relax.expr import (
    CALL_TIR,
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    GlobalVar,
    Tuple,
    Var,
    call_tir,
)
from mlc.script.ir_module import IRModule

__all__ = ["BlockBuilder", "PyExprMutator", "mutator", "call_te"]


class BlockBuilder:
    """Builds functions binding by binding and collects the module's functions.

    ``emit(value)`` binds a value to a fresh variable; ``emit_te(f, *args)`` binds the
    ``call_tir`` of a te compute; ``with bb.function("main"): with bb.dataflow(): ...`` and
    ``emit_output`` / ``emit_func_output`` build a whole function (as the course's
    ``from_fx`` does); ``get()`` returns the IRModule."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = IRModule(dict(mod.functions) if mod is not None else {},
                            mod.name if mod is not None else "Module")
        self._blocks: list[BindingBlock] = []
        self._current: BindingBlock | None = None
        self._bound: dict[int, Expr] = {}
        self._names: set[str] = set()
        self._func: tuple[str, list[Var] | None] | None = None
        self._counter = 0

    # -- bindings -----------------------------------------------------------------------------
    def _fresh(self, hint: str) -> str:
        name = hint
        while name in self._names:
            self._counter += 1
            name = f"{hint}{self._counter}"
        self._names.add(name)
        return name

    def begin_block(self, dataflow: bool) -> None:
        self._current = DataflowBlock([]) if dataflow else BindingBlock([])

    def end_block(self) -> BindingBlock:
        blk = self._current if self._current is not None else BindingBlock([])
        self._current = None
        self._blocks.append(blk)
        return blk

    def emit_binding(self, var: Var, value: Expr) -> Var:
        if self._current is None:
            self.begin_block(dataflow=False)
        assert self._current is not None
        self._current.bindings.append(Binding(var, value))
        self._bound[id(var)] = value
        self._names.add(var.name_hint)
        return var

    def emit(self, value: Expr, name_hint: str = "lv") -> Var:
        """Bind ``value`` to a new variable (a DataflowVar inside ``dataflow()``)."""
        if isinstance(value, Var):
            return value
        in_dataflow = isinstance(self._current, DataflowBlock)
        cls = DataflowVar if in_dataflow else Var
        return self.emit_binding(cls(self._fresh(name_hint), value.struct_info), value)

    def emit_output(self, value: Expr, name_hint: str = "gv") -> Var:
        """Bind ``value`` to a variable visible after the dataflow block (``R.output``)."""
        if isinstance(value, Var) and not isinstance(value, DataflowVar):
            return value
        var = Var(self._fresh(name_hint), value.struct_info)
        return self.emit_binding(var, value)

    def lookup_binding(self, var: Any) -> Expr | None:
        """The value bound to ``var`` in the function being built (None for parameters)."""
        return self._bound.get(id(var))

    # -- te -----------------------------------------------------------------------------------
    def call_te(self, func: Callable[..., Any], *args: Any,
                primfunc_name_hint: str | None = None, **kwargs: Any) -> Call:
        """Turn the te compute ``func(*tensors, **kwargs)`` into a prim_func of the module,
        with one placeholder per tensor argument, and return the ``call_tir`` running it
        on ``args``."""
        from mlc import te

        placeholders: list[Any] = []
        te_args: list[Any] = []
        for n, a in enumerate(args):
            if isinstance(a, Expr):
                if a.struct_info is None:
                    raise GraphError(f"call_te: argument {n} ({a!r}) has no known shape")
                name = getattr(a, "name_hint", "") or getattr(a, "name", "") or f"p{n}"
                ph = te.placeholder(a.shape, a.dtype, name=_ident(name, n))
                placeholders.append((a, ph))
                te_args.append(ph)
            else:
                te_args.append(a)
        out = func(*te_args, **kwargs)
        if isinstance(out, (list, tuple)):
            raise GraphError("call_te: the compute must return one tensor")
        base = str(primfunc_name_hint or getattr(func, "__name__", "te_func"))
        if base == "op" or not base.isidentifier():
            base = getattr(out.op, "name", "te_func")
        name = self._fresh_func(_ident(base, 0))
        prim = te.create_prim_func([ph for _, ph in placeholders] + [out])

        self.mod.functions[name] = dataclasses.replace(prim, name=name)
        out_type = _te_type(out)
        return call_tir(GlobalVar(name), [a for a, _ in placeholders], out_type)

    def emit_te(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Var:
        return self.emit(self.call_te(func, *args, **kwargs))

    def _fresh_func(self, base: str) -> str:
        name, n = base, 0
        while name in self.mod.functions:
            n += 1
            name = f"{base}{n}"
        return name

    # -- functions and the module ---------------------------------------------------------------
    @contextlib.contextmanager
    def function(self, name: str, params: Sequence[Var] | None = None) -> Iterator[None]:
        """``with bb.function("main", [x, w]):`` ... ``bb.emit_func_output(out)``."""
        self._func = (name, list(params) if params is not None else None)
        self._blocks = []
        yield
        if self._func is not None:
            raise GraphError(f"function {name!r}: call bb.emit_func_output(value) before the "
                             "`with bb.function(...)` block ends")

    @contextlib.contextmanager
    def dataflow(self) -> Iterator[None]:
        if self._current is not None and self._current.bindings:
            self.end_block()
        self.begin_block(dataflow=True)
        yield
        self.end_block()

    def emit_func_output(self, output: Expr, params: Sequence[Var] | None = None) -> None:
        if self._func is None:
            raise GraphError("emit_func_output outside `with bb.function(...)`")
        name, fparams = self._func
        if self._current is not None:
            self.end_block()
        plist = list(params) if params is not None else fparams
        if plist is None:
            raise GraphError(f"function {name!r}: give its parameters to bb.function(...) or "
                             "bb.emit_func_output(output, params)")
        self.mod.functions[name] = Function(plist, [b for b in self._blocks if b.bindings],
                                            output, name)
        self._func = None
        self._blocks = []

    def add_func(self, func: Any, func_name: str) -> GlobalVar:
        name = self._fresh_func(func_name)
        self.mod.functions[name] = func
        return GlobalVar(name)

    def update_func(self, gv: GlobalVar | str, func: Any) -> None:
        self.mod.functions[gv if isinstance(gv, str) else gv.name_hint] = func

    def get(self) -> IRModule:
        return self.mod

    def take_blocks(self) -> list[BindingBlock]:
        blocks, self._blocks = self._blocks, []
        return blocks


def _ident(name: str, n: int) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"p{n}_{out}"


def _te_type(t: Any) -> Any:
    from mlc.graph.op import TensorType

    shape = tuple(int(getattr(s, "value", s)) for s in t.shape)
    return TensorType(shape, t.dtype)


def call_te(bb: BlockBuilder, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Call:
    return bb.call_te(func, *args, **kwargs)


class PyExprMutator:
    """Rewrite a graph-level function: override ``visit_call_`` (or ``visit_var_``...).

    ``visit_expr(function)`` rebuilds the function binding by binding: each binding's value
    is visited and the result is bound again (to the same variable when its type is
    unchanged). ``visit_expr_post_order(call)`` rebuilds ``call`` with visited arguments;
    ``lookup_binding(var)`` returns the (new) value bound to ``var``."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.builder_ = BlockBuilder(mod)
        self._var_map: dict[int, Var] = {}

    # -- dispatch -----------------------------------------------------------------------------
    def visit_expr(self, expr: Any) -> Any:
        if isinstance(expr, Function):
            return self.visit_function_(expr)
        if isinstance(expr, Call):
            return self.visit_call_(expr)
        if isinstance(expr, Var):
            return self.visit_var_(expr)
        if isinstance(expr, Tuple):
            return self.visit_tuple_(expr)
        if isinstance(expr, Constant):
            return self.visit_constant_(expr)
        return expr

    def visit_function_(self, fn: Function) -> Function:
        self._var_map = {}
        for blk in fn.blocks:
            self.builder_.begin_block(isinstance(blk, DataflowBlock))
            for b in blk.bindings:
                self.visit_binding(b)
            self.builder_.end_block()
        body = self.visit_expr(fn.body)
        blocks = self.builder_.take_blocks()
        return Function(list(fn.params), blocks, body, fn.name)

    def visit_binding(self, binding: Binding) -> None:
        new_value = self.visit_expr(binding.value)
        if not isinstance(new_value, Expr):
            raise GraphError(f"visit_call_ must return a graph-level value (a relax.Call, a "
                             f"Var...), got {type(new_value).__name__} for binding "
                             f"{binding.var.name_hint}")
        var = binding.var
        if new_value.struct_info != var.struct_info and new_value.struct_info is not None:
            var = type(var)(var.name_hint, new_value.struct_info)
        if isinstance(new_value, Var) and new_value is not var:
            self._var_map[id(binding.var)] = new_value  # the binding became an alias
            return
        self._var_map[id(binding.var)] = var
        self.builder_.emit_binding(var, new_value)

    def visit_var_(self, var: Var) -> Expr:
        return self._var_map.get(id(var), var)

    def visit_constant_(self, c: Constant) -> Expr:
        return c

    def visit_tuple_(self, t: Tuple) -> Expr:
        fields = [self.visit_expr(f) for f in t.fields]
        if all(a is b for a, b in zip(fields, t.fields)):
            return t
        return Tuple(fields)

    def visit_call_(self, call: Call) -> Expr:
        return self.visit_expr_post_order(call)

    def visit_expr_post_order(self, expr: Any) -> Any:
        """``expr`` with its operands visited (the node itself is not passed to visit_*)."""
        if isinstance(expr, Call):
            args = [self.visit_expr(a) for a in expr.args]
            if all(a is b for a, b in zip(args, expr.args)):
                return expr
            return Call(expr.op, args, expr.attrs, expr.sinfo_args)
        if isinstance(expr, Tuple):
            return self.visit_tuple_(expr)
        if isinstance(expr, Var):
            return self.visit_var_(expr)
        return expr

    def lookup_binding(self, var: Any) -> Expr | None:
        return self.builder_.lookup_binding(var)


def mutator(cls: type) -> type:
    """``@relax.expr_functor.mutator``: marks a PyExprMutator subclass (kept for the course's
    spelling; nothing to register in mlc)."""
    if not issubclass(cls, PyExprMutator):
        raise GraphError(f"@mutator decorates a subclass of relax.PyExprMutator, got "
                         f"{cls.__name__}")
    return cls


def is_call_tir(e: Any) -> bool:
    return isinstance(e, Call) and e.op is CALL_TIR
