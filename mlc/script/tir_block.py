"""Block parsing for the TIR parser: ``with T.block(...)`` and its header (``T.axis.*``,
``T.axis.remap``, ``T.reads`` / ``T.writes`` or their inference, ``T.where``, ``T.init``).
"""

from __future__ import annotations

import ast
from typing import Any

from mlc.script.tir_access import _infer_access, check_declared_access, unused_spatial_var
from mlc.script.tir_stmt import _StmtParser
from mlc.script.tir_syntax import (
    _AXIS_KINDS,
    _assign_parts,
    _call_of,
    _extent,
    _target_names,
    _zero_like,
)
from mlc.tir.expr import (
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Var,
    const,
)
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    Stmt,
)


class _BlockParser(_StmtParser):
    """Blocks, their iteration axes and their buffer regions."""

    # -- blocks --------------------------------------------------------------------------------
    def _is_block_with(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.With) or len(node.items) != 1:
            return False
        e = node.items[0].context_expr
        return isinstance(e, ast.Call) and self._callee(e) == "block"

    def _with(self, s: ast.With) -> Stmt:
        if len(s.items) != 1 or not isinstance(s.items[0].context_expr, ast.Call):
            raise self.error(s, 'expected `with T.block("name"):`')
        if s.items[0].optional_vars is not None:
            raise self.error(s.items[0].optional_vars, '`with T.block("name"):` binds no '
                                                       "name; remove `as ...`")
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
        n = 0
        while name_node is None and name in self.f.block_names:  # unnamed: one of its own
            n += 1
            name = f"block_{n}"
        if name in self.f.block_names:
            raise self.error(call, f'a second block named "{name}": sch.get_block("{name}") '
                                   "finds a block by its name, so each block needs its own; "
                                   f'call this one "{name}_1"')
        self.f.block_names.add(name)
        iter_vars: list[IterVar] = []
        values: list[PrimExpr] = []
        reads: list[BufferRegion] | None = None
        writes: list[BufferRegion] | None = None
        region_node: ast.AST | None = None  # the T.reads / T.writes line
        predicate: PrimExpr = const(True)
        annotations: tuple[tuple[str, Any], ...] = ()
        allocs: list[Buffer] = []
        init_nodes: list[ast.stmt] | None = None
        body_nodes: list[ast.stmt] = []
        scope: dict[str, Any] = {}
        self.f.scopes.append(scope)
        try:
            seen_headers: set[str] = set()
            for st in s.body:
                hdr = _call_of(st)
                hname = self._callee(hdr) if hdr is not None else None
                if hname in ("reads", "writes", "where", "block_attr"):
                    if hname in seen_headers:
                        raise self.error(st, f"T.{hname}(...) is given twice in block "
                                             f'"{name}"; give it once')
                    seen_headers.add(hname)
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
                    region_node = region_node or hdr
                elif hdr is not None and hname == "writes":
                    writes = self._regions(hdr)
                    region_node = region_node or hdr
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
        unused = unused_spatial_var(iter_vars, body, init)
        if unused is not None:
            v = unused.var.name
            raise self.error(s, f'block "{name}": the spatial variable {v} does not appear in '
                                f"any element the block writes, so every value of {v} writes "
                                f"the same elements (a race under parallel). A reduction over "
                                f"{v} declares it T.axis.reduce (\"R\" in T.axis.remap)")
        lie = check_declared_access(name, iter_vars, body, init, allocs, reads, writes)
        if lie is not None:
            raise self.error(region_node, lie)
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
