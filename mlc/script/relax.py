"""``R``: the graph-level half of mlc.script (``@R.function`` in an ``@ir_module``).

Reads the course's whole-model functions into :mod:`mlc.graph.relax` IR::

    @R.function
    def main(x: R.Tensor((1, 784), "float32"), w0: R.Tensor((128, 784), "float32"), ...):
        with R.dataflow():
            lv0 = R.call_tir(linear0, (x, w0, b0), R.Tensor((1, 128), dtype="float32"))
            lv1 = R.call_tir(relu0, (lv0,), R.Tensor((1, 128), dtype="float32"))
            out = R.call_tir(linear1, (lv1, w1, b1), R.Tensor((1, 10), dtype="float32"))
            R.output(out)
        return out

``R.call_tir(func, args, out_sinfo)`` names a prim_func of the module (``linear0`` or
``cls.linear0``); ``out_sinfo`` may also be the older ``(1, 128), dtype="float32"``. Other
calls are graph ops: ``R.add``, ``R.multiply``, ``R.nn.dense``, ``R.nn.relu``,
``R.ewise_fma``...
"""

from __future__ import annotations

import ast
from typing import Any

from mlc.errors import GraphError, ScriptError
from mlc.script.source import Source

__all__ = ["function", "Tensor", "parse_graph_function"]


class _TensorAnnotation:
    """``R.Tensor((1, 784), "float32")`` in an annotation (re-read from the source)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __repr__(self) -> str:
        return f"R.Tensor{self.args}"


Tensor = _TensorAnnotation


def function(fn: Any = None, **kwargs: Any) -> Any:
    """``@R.function``: in an ``@ir_module`` class, read with the module (so ``call_tir`` can
    name its prim_funcs); alone, read at once."""
    if fn is None:
        return lambda f: function(f)
    from mlc.script.ir_module import _in_class, _Pending, resolve_pending

    if _in_class(fn):
        return _Pending(fn, "function")
    return resolve_pending(_Pending(fn, "function"))


def _only_in_scripts(name: str) -> Any:
    def f(*args: Any, **kwargs: Any) -> Any:
        raise ScriptError(f"R.{name}(...) only has a meaning inside an @R.function, which mlc "
                          "reads without running")

    return f


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return _only_in_scripts(name)


# ---------------------------------------------------------------------------------------------
# the parser


def _rname(node: ast.AST) -> str | None:
    """``R.nn.relu`` -> "nn.relu"; ``relax.add`` -> "add"; None if not an R name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in ("R", "relax"):
        return None
    return ".".join(reversed(parts))


class _GraphParser:
    def __init__(self, src: Source, mod: Any) -> None:
        from mlc.graph import relax

        self.rx = relax
        self.src = src
        self.mod = mod
        self.scope: dict[str, Any] = {}

    def error(self, node: ast.AST | None, message: str) -> ScriptError:
        return self.src.error(node, message)

    def sinfo(self, node: ast.expr, dtype_kw: ast.expr | None = None) -> Any:
        """``R.Tensor((1, 128), "float32")`` / ``R.Tensor((1, 128), dtype="float32")`` or a
        bare shape tuple (with ``dtype_kw``)."""
        if isinstance(node, ast.Call) and _rname(node.func) == "Tensor":
            args = list(node.args)
            kw = {k.arg: k.value for k in node.keywords}
            shape_node = args[0] if args else kw.get("shape")
            dtype_node = args[1] if len(args) > 1 else kw.get("dtype")
        elif isinstance(node, (ast.Tuple, ast.List)):
            shape_node, dtype_node = node, dtype_kw
        else:
            raise self.error(node, 'expected a tensor type: R.Tensor((1, 128), "float32")')
        if shape_node is None:
            raise self.error(node, 'R.Tensor needs a shape: R.Tensor((1, 128), "float32")')
        try:
            shape = ast.literal_eval(shape_node)
            dtype = ast.literal_eval(dtype_node) if dtype_node is not None else "float32"
        except (ValueError, SyntaxError, TypeError):
            raise self.error(shape_node, "a graph-level shape is a tuple of integers and "
                                         "a dtype string (symbolic sizes are not supported)"
                             ) from None
        if isinstance(shape, int):
            shape = (shape,)
        if not isinstance(shape, tuple) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
            raise self.error(shape_node, f"a graph-level shape is a tuple of positive integers, "
                                         f"got {ast.unparse(shape_node)}")
        try:
            return self.rx.TensorStructInfo(shape, str(dtype))
        except (TypeError, GraphError) as e:
            raise self.error(dtype_node or node, f"bad dtype {dtype!r}: {e}") from None

    def parse(self, fdef: ast.FunctionDef) -> Any:
        rx = self.rx
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.error(fdef, "an R.function takes plain parameters "
                                   'x: R.Tensor((shape), "dtype")')
        params = []
        for arg in a.args:
            if arg.annotation is None:
                raise self.error(arg, f"parameter {arg.arg!r} needs a type: "
                                      f'{arg.arg}: R.Tensor((1, 784), "float32")')
            v = rx.Var(arg.arg, self.sinfo(arg.annotation))
            self.scope[arg.arg] = v
            params.append(v)
        blocks: list[Any] = []
        ret: Any = None
        loose: list[Any] = []
        for st in fdef.body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                continue
            if isinstance(st, ast.With):
                if len(st.items) != 1 or not isinstance(st.items[0].context_expr, ast.Call) or \
                        _rname(st.items[0].context_expr.func) != "dataflow":
                    raise self.error(st, "expected `with R.dataflow():`")
                if loose:
                    blocks.append(rx.BindingBlock(loose))
                    loose = []
                blocks.append(self.dataflow(st))
            elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                loose.append(self.binding(st, dataflow=False))
            elif isinstance(st, ast.Return):
                if st.value is None:
                    raise self.error(st, "an R.function returns a value: return out")
                ret = self.expr(st.value)
            else:
                raise self.error(st, f"an R.function cannot contain `{_first(st)}`: expected "
                                     "`with R.dataflow():`, bindings `lv = R.op(...)` and a "
                                     "return")
        if loose:
            blocks.append(rx.BindingBlock(loose))
        if ret is None:
            raise self.error(fdef, f"R.function {fdef.name!r} needs a `return`")
        return rx.Function(params, blocks, ret, fdef.name)

    def dataflow(self, st: ast.With) -> Any:
        rx = self.rx
        bindings = []
        outputs: list[ast.Name] = []
        for s in st.body:
            if isinstance(s, (ast.Assign, ast.AnnAssign)):
                bindings.append(self.binding(s, dataflow=True))
            elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and _rname(
                    s.value.func) == "output":
                for a in s.value.args:
                    if not isinstance(a, ast.Name):
                        raise self.error(a, "R.output takes the names of bound variables")
                    outputs.append(a)
            else:
                raise self.error(s, "a dataflow block holds bindings `lv = R.op(...)` and "
                                    "R.output(...)")
        if not outputs:
            raise self.error(st, "a dataflow block ends with R.output(var, ...) naming what "
                                 "the rest of the function uses")
        by_name = {b.var.name_hint: b for b in bindings}
        for o in outputs:
            b = by_name.get(o.id)
            if b is None:
                raise self.error(o, f"R.output({o.id}): {o.id} is not bound in this block")
            new = rx.Var(o.id, b.var.struct_info)
            self._replace(bindings, b.var, new)
            self.scope[o.id] = new
        for b in bindings:
            name = b.var.name_hint
            if isinstance(b.var, rx.DataflowVar) and self.scope.get(name) is b.var:
                del self.scope[name]  # dataflow vars are not visible after
        return rx.DataflowBlock(bindings)

    def _replace(self, bindings: list[Any], old: Any, new: Any) -> None:
        for b in bindings:
            if b.var is old:
                b.var = new
            if isinstance(b.value, self.rx.Call):
                b.value.args = [new if x is old else self._replace_in(x, old, new)
                                for x in b.value.args]

    def _replace_in(self, e: Any, old: Any, new: Any) -> Any:
        if isinstance(e, self.rx.Tuple):
            e.fields = tuple(new if f is old else f for f in e.fields)
        return e

    def binding(self, s: ast.Assign | ast.AnnAssign, dataflow: bool) -> Any:
        rx = self.rx
        target = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else (
            s.target if isinstance(s, ast.AnnAssign) else None)
        if not isinstance(target, ast.Name) or s.value is None:
            raise self.error(s, "a binding is `name = R.op(...)`")
        value = self.expr(s.value)
        if isinstance(s, ast.AnnAssign):
            declared = self.sinfo(s.annotation)
            if value.struct_info is not None and declared != value.struct_info:
                raise self.error(s.annotation, f"{target.id} is declared "
                                               f"{declared} but its value is "
                                               f"{value.struct_info}")
        cls = rx.DataflowVar if dataflow else rx.Var
        var = cls(target.id, value.struct_info)
        self.scope[target.id] = var
        return rx.Binding(var, value)

    def expr(self, node: ast.expr) -> Any:
        rx = self.rx
        if isinstance(node, ast.Name):
            if node.id not in self.scope:
                raise self.error(node, f"undefined name {node.id!r}: expected a parameter or a "
                                       "variable bound earlier")
            return self.scope[node.id]
        if isinstance(node, (ast.Tuple, ast.List)):
            return rx.Tuple([self.expr(e) for e in node.elts])
        if isinstance(node, ast.Call):
            name = _rname(node.func)
            if name is None:
                raise self.error(node.func, f"cannot call `{ast.unparse(node.func)}` in an "
                                            "R.function: expected R.call_tir or an op like "
                                            "R.add, R.nn.relu")
            if name == "call_tir":
                return self.call_tir(node)
            if name in ("dataflow", "output", "function", "Tensor"):
                raise self.error(node, f"R.{name}(...) cannot be used as a value")
            try:
                op = rx.Op.get(name)
            except GraphError:
                raise self.error(node.func, f"unknown op R.{name}; known ops include R.add, "
                                            "R.multiply, R.nn.dense, R.nn.relu, R.ewise_fma"
                                 ) from None
            args = [self.expr(a) for a in node.args]
            attrs = {}
            for k in node.keywords:
                try:
                    attrs[k.arg] = ast.literal_eval(k.value)
                except (ValueError, SyntaxError):
                    raise self.error(k.value, "op attributes are constants") from None
            if op.num_inputs is not None and len(args) != op.num_inputs:
                raise self.error(node, f"R.{name} takes {op.num_inputs} argument(s), got "
                                       f"{len(args)}")
            try:
                return rx.Call(op, args, attrs)
            except GraphError as e:
                raise self.error(node, str(e)) from None
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return rx.const(float(node.value))
        raise self.error(node, f"cannot use `{ast.unparse(node)}` in an R.function")

    def call_tir(self, node: ast.Call) -> Any:
        from mlc.tir.stmt import PrimFunc

        rx = self.rx
        kw = {k.arg: k.value for k in node.keywords}
        args = list(node.args)
        if len(args) < 2:
            raise self.error(node, "R.call_tir(func, (args...), out_sinfo=R.Tensor(shape, "
                                   "dtype)) needs the function and its arguments")
        fnode, anode = args[0], args[1]
        fname = fnode.attr if isinstance(fnode, ast.Attribute) else (
            fnode.id if isinstance(fnode, ast.Name) else None)
        if isinstance(fnode, ast.Constant) and isinstance(fnode.value, str):
            fname = fnode.value
        funcs = self.mod.prim_funcs()
        if fname is None or fname not in funcs:
            raise self.error(fnode, f"R.call_tir calls a prim_func of the module; "
                                    f"{ast.unparse(fnode)} is not one (the module has "
                                    f"{sorted(funcs) or 'none'})")
        sinfo_node = args[2] if len(args) > 2 else kw.get("out_sinfo")
        if sinfo_node is None:
            raise self.error(node, "R.call_tir needs the output's type: "
                                   'out_sinfo=R.Tensor((1, 128), "float32")')
        sinfo = self.sinfo(sinfo_node, kw.get("dtype"))
        targs = self.expr(anode)
        if not isinstance(targs, rx.Tuple):
            targs = rx.Tuple([targs])
        prim = funcs[fname]
        if len(targs.fields) + 1 != len(prim.params):
            raise self.error(anode, f"{fname} takes {len(prim.params)} buffers "
                                    f"({len(prim.params) - 1} inputs and the output), "
                                    f"call_tir passes {len(targs.fields)} input(s)")
        assert isinstance(prim, PrimFunc)
        for n, (a, buf) in enumerate(zip([*targs.fields, None], prim.params)):
            t = sinfo if a is None else a.struct_info
            shape = [getattr(s, "value", None) for s in buf.shape]
            if t is not None and None not in shape and tuple(shape) != t.shape:
                what = "the output" if a is None else f"argument {n}"
                raise self.error(sinfo_node if a is None else anode,
                                 f"{fname}'s buffer {buf.name} has shape {tuple(shape)}, "
                                 f"{what} has shape {t.shape}")
        return rx.call_tir(rx.GlobalVar(fname), list(targs.fields), sinfo)


def _first(s: ast.AST) -> str:
    return ast.unparse(s).split("\n")[0]


def parse_graph_function(fdef: ast.FunctionDef, src: Source, mod: Any) -> Any:
    """Read an ``@R.function`` def; ``mod`` holds the prim_funcs it may call."""
    try:
        return _GraphParser(src, mod).parse(fdef)
    except SyntaxError:
        raise
    except (GraphError, ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise src.error(fdef, f"cannot read R.function {fdef.name!r}: "
                              f"{type(e).__name__}: {e}") from None


def build_module(mod: Any, target: Any) -> Any:
    """``mlc.build(ir_module)``: compile the prim_funcs, run the graph-level functions."""
    from mlc.graph.relax.bridge import build

    return build(mod, target)
