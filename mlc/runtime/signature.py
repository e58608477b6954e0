"""A compiled function's signature as JSON, so a library on disk can be called with the same
argument checks as the Module that wrote it.

An exported library (:mod:`mlc.runtime.export`) carries, beside its machine code, what the
call needs to know: each argument's name, dtype and shape (symbolic sizes included), which
arrays the function writes, the order of the native arguments. :func:`to_json` writes that
from a PrimFunc; :func:`from_json` builds back a *signature function*, a PrimFunc with the
same parameters whose body only marks which arrays it stores to. That is all
:class:`~mlc.runtime.args.ArgumentChecker` reads, so a loaded library refuses a wrong array
exactly as the freshly built Module does::

    {"arguments": [{"buffer": "A", "dtype": "float32", "shape": [{"var": "n"}], "written": false},
                   {"buffer": "B", "dtype": "float32", "shape": [{"var": "n"}], "written": true}],
     "sizes": ["n"]}
"""

from __future__ import annotations

from typing import Any

from mlc.errors import ArgumentError
from mlc.runtime.args import written_params
from mlc.tir import expr as E
from mlc.tir.stmt import Buffer, BufferStore, PrimFunc, seq

_BINOPS: dict[str, type] = {
    "+": E.Add, "-": E.Sub, "*": E.Mul, "//": E.FloorDiv, "%": E.FloorMod,
    "min": E.Min, "max": E.Max,
}
_OP_OF = {cls: op for op, cls in _BINOPS.items()}


def _dim_to_json(e: Any) -> Any:
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return int(e.value)
    if isinstance(e, E.Var):
        return {"var": e.name, "dtype": e.dtype, "size": isinstance(e, E.SizeVar)}
    op = _OP_OF.get(type(e))
    if op is not None:
        return {"op": op, "a": _dim_to_json(e.a), "b": _dim_to_json(e.b)}
    raise ArgumentError(
        f"cannot save a parameter whose shape uses {type(e).__name__} ({e}); a library's "
        "shapes are numbers, sizes and +, -, *, //, %, min, max of them")


def to_json(func: PrimFunc) -> dict[str, Any]:
    """The call signature of ``func`` (see the module docstring)."""
    writes = written_params(func)
    index = {id(b): k for k, b in enumerate(func.params)}
    arguments: list[dict[str, Any]] = []
    for a in func.arguments:
        if isinstance(a, Buffer):
            arguments.append({
                "buffer": a.name, "dtype": a.dtype,
                "shape": [_dim_to_json(d) for d in a.shape],
                "strides": [_dim_to_json(d) for d in a.strides],
                "written": index[id(a)] in writes,
            })
        else:
            arguments.append({"scalar": a.name, "dtype": a.dtype,
                              "size": isinstance(a, E.SizeVar)})
    return {"name": func.name, "arguments": arguments,
            "sizes": [v.name for v in func.size_vars],
            "scalar_args": [v.name for v in func.scalar_args]}


class _Vars:
    """One Var per name, so a size used in two shapes binds once."""

    def __init__(self) -> None:
        self.by_name: dict[str, E.Var] = {}

    def get(self, name: str, dtype: str = "int32", size: bool = True) -> E.Var:
        v = self.by_name.get(name)
        if v is None:
            v = self.by_name[name] = (E.SizeVar if size else E.Var)(name, dtype)
        return v

    def dim(self, d: Any) -> Any:
        if isinstance(d, bool) or not isinstance(d, (int, dict)):
            raise ArgumentError(f"a saved shape holds numbers and sizes, not {d!r}")
        if isinstance(d, int):
            return E.IntImm(d, "int32") if -2**31 <= d < 2**31 else E.IntImm(d, "int64")
        if "var" in d:
            return self.get(str(d["var"]), str(d.get("dtype", "int32")), bool(d.get("size")))
        cls = _BINOPS.get(d.get("op", ""))
        if cls is None:
            raise ArgumentError(f"a saved shape has an unknown operation {d.get('op')!r}")
        return cls(self.dim(d["a"]), self.dim(d["b"]))


def from_json(sig: dict[str, Any]) -> PrimFunc:
    """A signature function (parameters, scalars, stores into the written arrays) from
    :func:`to_json`'s output. A malformed signature raises ArgumentError."""
    try:
        names = _Vars()
        params: list[Buffer] = []
        scalars: list[tuple[int, E.Var]] = []
        stores = []
        for k, a in enumerate(sig["arguments"]):
            if "buffer" in a:
                shape = tuple(names.dim(d) for d in a["shape"])
                strides = tuple(names.dim(d) for d in a.get("strides", ()))
                buf = Buffer(str(a["buffer"]), shape, str(a["dtype"]), strides=strides)
                params.append(buf)
                if a.get("written"):
                    zero = E.IntImm(0, buf.dtype) if "int" in buf.dtype else E.FloatImm(
                        0.0, buf.dtype) if "float" in buf.dtype else E.IntImm(0, buf.dtype)
                    stores.append(BufferStore(buf, zero, tuple(E.IntImm(0) for _ in shape)))
            else:
                scalars.append((k, names.get(str(a["scalar"]), str(a["dtype"]),
                                             bool(a.get("size")))))
        func = PrimFunc(tuple(params), seq(*stores) if stores else seq(),
                        str(sig.get("name", "main")), scalars=tuple(scalars))
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, ArgumentError):
            raise
        raise ArgumentError(f"the library's signature is malformed ({type(err).__name__}: "
                            f"{err}); export the module again") from None
    if [v.name for v in func.size_vars] != list(sig.get("sizes", [])):
        raise ArgumentError("the library's signature lists its sizes in another order than "
                            "its shapes give them; export the module again")
    return func
