"""Buffers in the TIR parser: declarations (``T.Buffer``, ``T.alloc_buffer``, shapes) and
element access ``A[i, j]``, including the flat views lowered code indexes.
"""

from __future__ import annotations

import ast

from mlc.script.tir_expr import _ExprParser
from mlc.script.tir_syntax import (
    _is_dtype,
    _numel,
    dotted,
    normalize_name,
)
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    IntImm,
    PrimExpr,
    SizeVar,
)
from mlc.tir.stmt import (
    Buffer,
)


class _BufferParser(_ExprParser):
    """Buffer declarations and buffer element access."""

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
            if not dt.is_int(x.dtype) or dt.is_bool(x.dtype):
                raise self.error(e, f"a buffer dimension must be an integer, got {x.dtype}")
            if isinstance(x, IntImm) and x.value < 0:
                raise self.error(e, f"a buffer dimension cannot be negative, got {x.value}")
            out.append(x)
        return tuple(out)

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
