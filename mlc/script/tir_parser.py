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

from mlc.errors import MLCError
from mlc.script.tir_block import _BlockParser
from mlc.script.tir_syntax import (
    _assign_parts,
    _call_of,
    _is_dtype,
    dotted,
    is_prim_func_decorator,
    normalize_name,
)
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    SizeVar,
    Var,
    const,
)
from mlc.tir.schedule.parallel_check import parallel_conflict
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    ForKind,
    PrimFunc,
    Stmt,
)

__all__ = ["TIRParser", "normalize_name", "is_prim_func_decorator"]


class TIRParser(_BlockParser):
    """Parses one ``def`` (a prim_func) of a :class:`Source`."""

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
        for d in fdef.decorator_list:
            if not is_prim_func_decorator(d):
                raise self.error(d, f"prim_func {fdef.name!r} takes one decorator, "
                                    f"@T.prim_func; remove @{ast.unparse(d)}")
        if fdef.returns is not None and not (isinstance(fdef.returns, ast.Constant)
                                             and fdef.returns.value is None):
            raise self.error(fdef.returns, "a prim_func returns nothing (it writes its output "
                                           "buffers); remove the return annotation")
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
        arguments = self._bind_handles(fdef, params)
        body = self.stmts(rest)
        if has_blocks and not _is_explicit_root(body, root_allocs):
            body = BlockRealize((), const(True), Block("root", (), (), (), body,
                                                       alloc_buffers=tuple(root_allocs)))
        buffers = tuple(a for a in arguments if isinstance(a, Buffer))
        scalars = tuple((k, a) for k, a in enumerate(arguments) if isinstance(a, Var))
        self._check_parallel_loops({b.data for b in buffers})
        return PrimFunc(buffers, body, fdef.name, tuple(self.f.attrs), scalars)

    def _check_parallel_loops(self, params: set[Var]) -> None:
        """Every ``T.parallel``/``T.vectorized``/``T.thread_binding`` loop meets the check
        ``sch.parallel`` makes (:func:`mlc.tir.schedule.parallel_check.parallel_conflict`): a
        script cannot run iterations at once that a schedule would refuse to."""
        for loop, node in self.f.parallel_loops:
            word = {ForKind.PARALLEL: "T.parallel", ForKind.VECTORIZED: "T.vectorized"}.get(
                loop.kind, f"T.thread_binding({loop.thread_binding!r})")
            what = f"loop {loop.loop_var.name!r} ({word})"
            found = parallel_conflict(loop, what, params,
                                      str(loop.thread_binding).startswith("threadIdx."))
            if found is None:
                continue
            if found.bare:
                fix = (f"What would work: T.serial(...) for loop {loop.loop_var.name!r}; for a "
                       "sum into one element, a block with a reduce variable "
                       "(`with T.block(...)`, `vk = T.axis.reduce(...)`, `T.init()`), which "
                       "a schedule can then split with rfactor and parallelize")
            else:
                fix = ("What would work: T.serial(...) for the loop, or blocks whose "
                       "T.axis.spatial variables each write their own elements")
            raise self.error(node, f"{found.message}. {fix}")

    def _params(self, fdef: ast.FunctionDef) -> list[Buffer | str | Var]:
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "a prim_func takes plain parameters, each annotated with "
                                   'T.Buffer((shape), "dtype") or T.handle')
        if args.defaults:
            raise self.error(args.defaults[0], "a prim_func parameter has no default value")
        seen: set[str] = set()
        for a in args.args:
            if a.arg in seen:
                raise self.error(a, f"parameter {a.arg!r} is declared twice")
            seen.add(a.arg)
        params: list[Buffer | str | Var] = []
        scalars = self._scalar_params(fdef)
        for a in args.args:
            if a.arg == "self":
                continue
            if a.annotation is None:
                raise self.error(a, f"parameter {a.arg!r} needs a type: "
                                    f'{a.arg}: T.Buffer((128, 128), "float32") or '
                                    f"{a.arg}: T.float32")
            ann = a.annotation
            name = dotted(ann)
            if a.arg in scalars:
                params.append(scalars[a.arg])
                continue
            if name is not None and normalize_name(name) in ("handle", "Ptr"):
                self.f.handles[a.arg] = None
                params.append(a.arg)
                continue
            buf = self._buffer_decl(ann, a.arg, for_param=True)
            self.f.define(a.arg, buf)
            params.append(buf)
        return params

    def _scalar_params(self, fdef: ast.FunctionDef) -> dict[str, Var]:
        """``alpha: T.float32``, ``n: T.int32``: parameters passed by value. Defined before
        the buffers, whose shapes may use them (``A: T.Buffer((n,), "float32"), n: T.int32``:
        a size passed as an argument too, a SizeVar like the other sizes)."""
        roots = {id(n.value) for a in fdef.args.args if a.annotation is not None
                 for n in ast.walk(a.annotation) if isinstance(n, ast.Attribute)}
        in_shapes = {  # names in shapes; not the T of T.Buffer (a scalar may be named T)
            n.id for a in fdef.args.args if a.annotation is not None
            for n in ast.walk(a.annotation) if isinstance(n, ast.Name) and id(n) not in roots
        }
        out: dict[str, Var] = {}
        for a in fdef.args.args:
            name = dotted(a.annotation) if a.annotation is not None else None
            dtype = normalize_name(name) if name is not None else ""
            if not _is_dtype(dtype) or dt.lanes(dtype) != 1:
                continue
            if a.arg in out:
                raise self.error(a, f"parameter {a.arg!r} is declared twice")
            if dtype == "float16":
                raise self.error(a, f"scalar parameter {a.arg!r}: a float16 scalar is not "
                                    "supported; take a T.float32 and T.Cast it")
            var = (SizeVar(a.arg, dtype) if dt.is_int(dtype) and a.arg in in_shapes
                   else Var(a.arg, dtype))
            self.f.define(a.arg, var)
            out[a.arg] = var
        return out

    def _bind_handles(self, fdef: ast.FunctionDef,
                      params: list[Buffer | str | Var]) -> list[Buffer | Var]:
        out: list[Buffer | Var] = []
        for p in params:
            if isinstance(p, Var):
                out.append(p)
            elif isinstance(p, str):
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
        if self.f.handles[handle] is not None:
            raise self.error(call, f"the handle {handle!r} is matched twice; one "
                                   f"T.match_buffer({handle}, ...) gives its shape")
        decl = ast.Call(func=call.func, args=call.args[1:], keywords=call.keywords)
        ast.copy_location(decl, call)
        buf = self._buffer_decl(decl, name, for_param=True)
        self.f.handles[handle] = buf
        self.f.define(name, buf)


def _is_explicit_root(body: Stmt, allocs: list[Buffer]) -> bool:
    return (not allocs and isinstance(body, BlockRealize) and body.block.name == "root"
            and not body.block.iter_vars)
