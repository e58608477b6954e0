"""``IRModule``: named functions that belong together, and the decorators that read them.

An IRModule holds tensor programs (``PrimFunc``) and, for a whole model, one graph-level
function (``R.function``) that calls them with ``R.call_tir``. It is written as a class whose
methods are the functions (the class itself is never instantiated)::

    @ir_module
    class MyModule:
        @T.prim_func
        def mm_relu(A: T.Buffer((128, 128), "float32"), ...):
            ...

    MyModule["mm_relu"]          # the PrimFunc
    MyModule.show()              # the module as TVMScript
    mlc.build(MyModule, target="llvm")["mm_relu"](a, b, c)
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from typing import Any

from mlc.errors import ScriptError
from mlc.script.source import Source, check_depth
from mlc.script.tir_parser import TIRParser, dotted, is_prim_func_decorator, normalize_name
from mlc.tir.stmt import PrimFunc

__all__ = ["IRModule", "ir_module", "prim_func", "from_source", "parse_module_class"]


class IRModule:
    """Functions by name: ``mod["main"]``, ``mod.functions``, ``mod.script()``."""

    def __init__(self, functions: dict[str, Any] | None = None, name: str = "Module") -> None:
        self.functions: dict[str, Any] = dict(functions or {})
        self.name = name

    def __getitem__(self, name: Any) -> Any:
        key = getattr(name, "name_hint", name)
        if key not in self.functions:
            raise KeyError(f"the module has no function {key!r}; it has "
                           f"{sorted(self.functions)}")
        return self.functions[key]

    def __setitem__(self, name: Any, func: Any) -> None:
        self.functions[getattr(name, "name_hint", name)] = func

    def __contains__(self, name: object) -> bool:
        return getattr(name, "name_hint", name) in self.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def items(self) -> Any:
        return self.functions.items()

    def get_global_var(self, name: str) -> str:
        if name not in self.functions:
            raise KeyError(f"the module has no function {name!r}")
        return name

    def prim_funcs(self) -> dict[str, PrimFunc]:
        return {k: f for k, f in self.functions.items() if isinstance(f, PrimFunc)}

    def with_function(self, name: str, func: Any) -> IRModule:
        out = IRModule(self.functions, self.name)
        out.functions[name] = func
        return out

    def __mlc_build__(self, target: Any) -> Any:
        """``mlc.build(mod, target)``: every prim_func compiled; ``["main"]`` runs the
        graph-level function (see :mod:`mlc.graph.relax.bridge`)."""
        from mlc.script.relax import build_module

        return build_module(self, target)

    def script(self) -> str:
        """The module as TVMScript: ``@ir_module class Module:`` with ``@T.prim_func`` and
        ``@R.function`` methods, which :func:`from_source` reads back."""
        return self._text(script=True)

    def _text(self, script: bool) -> str:
        from mlc.tir.printer import to_str

        lines = ["@ir_module", f"class {self.name}:"]
        for n, (name, f) in enumerate(self.functions.items()):
            if isinstance(f, PrimFunc):
                text = to_str(_named(f, name), script=script)
            else:
                text = f.script()
            if n:
                lines.append("")
            lines.extend("    " + line if line else "" for line in text.split("\n"))
        return "\n".join(lines)

    def show(self) -> None:
        print(self.script())

    def __str__(self) -> str:
        return self._text(script=False)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from mlc.tir.printer_html import highlight

        return ('<pre style="font-family:monospace;font-size:13px;line-height:1.35;'
                f'background:#f8f8f8;padding:8px;border-radius:4px">'
                f"{highlight(self.script())}</pre>")


def _named(f: PrimFunc, name: str) -> PrimFunc:
    return f if f.name == name else dataclasses.replace(f, name=name)


# ---------------------------------------------------------------------------------------------
# decorators


def _in_class(fn: Any) -> bool:
    """A function defined in a class body (``MyModule.main``): the class's ``ir_module``
    reads it, with the other functions it calls."""
    parts = getattr(fn, "__qualname__", "").split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


class _Pending:
    """What ``@T.prim_func`` / ``@R.function`` leave in a class body until ``@ir_module``
    reads the whole class."""

    def __init__(self, fn: Any, kind: str) -> None:
        self.fn = fn
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind} {self.fn.__name__}, read by @ir_module>"


def prim_func(fn: Any = None, **kwargs: Any) -> Any:
    """``@T.prim_func``: read the decorated function into a :class:`mlc.tir.PrimFunc`."""
    if fn is None:  # @T.prim_func(private=True)
        return lambda f: prim_func(f)
    if _in_class(fn):
        return _Pending(fn, "prim_func")
    src = Source.of(fn)
    tree = src.parse()
    check_depth(tree, src)
    fdef = _only_def(tree, src)
    return TIRParser(src).parse_func(fdef)


def ir_module(cls: Any) -> IRModule:
    """``@ir_module`` (``@tvm.script.ir_module``): read a class of functions into an
    :class:`IRModule`."""
    if isinstance(cls, str):
        return from_source(cls)
    src = Source.of(cls)
    tree = src.parse()
    check_depth(tree, src)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if node is None:
        raise src.error(None, "@ir_module decorates a class: @ir_module class MyModule: ...")
    return parse_module_class(node, src)


def parse_module_class(node: ast.ClassDef, src: Source) -> IRModule:
    mod = IRModule(name=node.name)
    graph_funcs: list[ast.FunctionDef] = []
    seen: dict[str, ast.FunctionDef] = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            if item.name in seen:
                first = seen[item.name].lineno + src.first_line - 1
                raise src.error(item, f"the ir_module defines {item.name!r} twice (first at "
                                      f"line {first}); the second would silently replace the "
                                      "first. Give each function its own name")
            seen[item.name] = item
            kind = _kind(item)
            if kind == "prim_func":
                mod.functions[item.name] = TIRParser(src).parse_func(item)
            elif kind == "function":
                graph_funcs.append(item)
            else:
                raise src.error(item, f"function {item.name!r} of an ir_module needs a "
                                      "decorator: @T.prim_func or @R.function")
        elif isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant):
            continue  # docstring
        elif isinstance(item, ast.Pass):
            continue
        else:
            raise src.error(item, "an ir_module class holds only @T.prim_func and "
                                  "@R.function definitions")
    for item in graph_funcs:
        from mlc.script.relax import parse_graph_function

        mod.functions[item.name] = parse_graph_function(item, src, mod)
    return mod


def _kind(fdef: ast.FunctionDef) -> str | None:
    for d in fdef.decorator_list:
        if is_prim_func_decorator(d):
            return "prim_func"
        target = d.func if isinstance(d, ast.Call) else d
        name = dotted(target)
        if name is not None and name.split(".")[-1] == "function" and name.split(".")[0] in (
                "R", "relax"):
            return "function"
        if name is not None and normalize_name(name) == "function":
            return "function"
    return None


def _is_ir_module(node: ast.expr) -> bool:
    name = dotted(node.func if isinstance(node, ast.Call) else node)
    return name is not None and name.split(".")[-1] == "ir_module"


def _only_def(tree: ast.Module, src: Source) -> ast.FunctionDef:
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(defs) != 1:
        raise src.error(tree.body[0] if tree.body else None,
                        "expected one `def` decorated with @T.prim_func")
    return defs[0]


def from_source(text: str, filename: str = "<script>") -> Any:
    """Read script text: a ``@T.prim_func`` (or the printed ``@prim_func``) def gives a
    PrimFunc; an ``@ir_module`` class gives an IRModule. ``print(func)`` and
    ``func.script()`` both read back to a structurally equal program."""
    if not isinstance(text, str):
        raise ScriptError(f"from_source takes the program's text (a str), got "
                          f"{type(text).__name__}")
    src = Source(text, filename)
    tree = src.parse()
    check_depth(tree, src)
    body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    if len(body) != 1 or not isinstance(body[0], (ast.FunctionDef, ast.ClassDef)):
        raise src.error(body[0] if body else None,
                        "expected one @T.prim_func def or one @ir_module class")
    node = body[0]
    if isinstance(node, ast.ClassDef):
        if not any(_is_ir_module(d) for d in node.decorator_list):
            raise src.error(node, f"class {node.name} needs the @ir_module decorator")
        return parse_module_class(node, src)
    kind = _kind(node)
    if kind is None:
        raise src.error(node, f"def {node.name} needs a decorator: @T.prim_func (or the "
                              "printed @prim_func) or @R.function")
    if kind == "function":
        from mlc.script.relax import parse_graph_function

        return parse_graph_function(node, src, IRModule())
    return TIRParser(src).parse_func(node)


def resolve_pending(obj: Any) -> Any:
    """A pending function read on its own (used outside a class after all)."""
    if isinstance(obj, _Pending):
        src = Source.of(obj.fn)
        tree = src.parse()
        fdef = _only_def(tree, src)
        if obj.kind == "prim_func":
            return TIRParser(src).parse_func(fdef)
        from mlc.script.relax import parse_graph_function

        return parse_graph_function(fdef, src, IRModule())
    return obj
