"""The loop nest as a tree (graphviz) and as highlighted code with marked lines.

    viz.loop_tree(sch)            # loops (extent, kind) -> blocks -> buffers read/written
    viz.code(sch.mod, mark="i1")  # the program, with the loop i1 marked
"""

from __future__ import annotations

from typing import Any

from mlc.tir.printer import expr_to_str, to_str
from mlc.tir.printer_html import to_html
from mlc.tir.schedule.state import children, walk
from mlc.tir.stmt import Block, BlockRealize, For, IfThenElse, PrimFunc, Stmt
from mlc.viz._dot import Drawing, quote
from mlc.viz._ir import as_func, find_named

_KIND_COLOR = {
    "serial": "#dbe9f6",
    "parallel": "#f6d5a8",
    "vectorized": "#c8e6c9",
    "unroll": "#e1bee7",
    "thread_binding": "#ffcdd2",
}


def loop_tree(obj: Any, args: Any = None, buffers: bool = True) -> Drawing:
    """Draw the loop nest of ``obj`` (PrimFunc, tir.Schedule, te schedule + args).

    Loops are boxes coloured by kind (serial, parallel, vectorized, unrolled), blocks are
    rounded boxes with their iteration variables, and (with ``buffers=True``) each block has
    edges from the buffers it reads and to the buffers it writes. For::

        for i in range(64):
            for j in range(64):
                block C: C[vi, vj] = A[vi, vj] + B[vi, vj]

    the tree is ``i -> j -> C``, with ``A -> C`` and ``B -> C`` read edges and a ``C -> C``
    (buffer) write edge."""
    func = as_func(obj, args)
    d = Drawing(name=func.name)
    d.attr(rankdir="TB", fontname="monospace")
    d.attr("node", fontname="monospace", fontsize="11")
    d.attr("edge", fontname="monospace", fontsize="9")
    counter = [0]
    seen_buffers: dict[str, str] = {}

    def new_id(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def buffer_node(name: str, scope: str) -> str:
        if name not in seen_buffers:
            node_id = f"buf_{len(seen_buffers)}"
            seen_buffers[name] = node_id
            label = name if scope == "global" else f"{name}\\n({scope})"
            d.node(node_id, label, shape="cylinder", style="filled", fillcolor="#fff9c4")
        return seen_buffers[name]

    def visit(node: Stmt, parent: str | None, edge_label: str = "") -> None:
        if isinstance(node, For):
            node_id = new_id("loop")
            kind = node.kind.value
            label = f"{node.loop_var.name}\\nextent {quote(expr_to_str(node.extent))}"
            if kind != "serial":
                label += f"\\n{node.thread_binding or kind}"
            d.node(node_id, label, shape="box", style="filled", fillcolor=_KIND_COLOR[kind])
            link(parent, node_id, edge_label)
            visit_children(node, node_id)
        elif isinstance(node, BlockRealize):
            block = node.block
            if block.name == "root" and parent is None:
                visit_children(block, None)
                return
            node_id = new_id("block")
            iters = ", ".join(
                f"{iv.var.name}{'(r)' if iv.kind.name == 'REDUCE' else ''}"
                for iv in block.iter_vars
            )
            label = f"block {quote(block.name)}\\n[{quote(iters)}]"
            if block.init is not None:
                label += "\\n(with init)"
            d.node(node_id, label, shape="box", style="rounded,filled", fillcolor="#eeeeee")
            link(parent, node_id, edge_label)
            if buffers:
                for region in block.reads:
                    b = region.buffer
                    d.edge(buffer_node(b.name, b.scope), node_id, color="#1e88e5",
                           style="dashed", arrowsize="0.6")
                for region in block.writes:
                    b = region.buffer
                    d.edge(node_id, buffer_node(b.name, b.scope), color="#e53935",
                           style="dashed", arrowsize="0.6")
            for child in children(block):
                visit(child, node_id)
        elif isinstance(node, IfThenElse):
            visit(node.then_case, parent, "if " + quote(expr_to_str(node.condition)))
            if node.else_case is not None:
                visit(node.else_case, parent, "else")
        elif isinstance(node, Block):
            visit_children(node, parent)
        else:
            visit_children(node, parent)

    def visit_children(node: Any, parent: str | None) -> None:
        for child in children(node):
            visit(child, parent)

    def link(parent: str | None, child: str, label: str) -> None:
        if parent is not None:
            d.edge(parent, child, label=label) if label else d.edge(parent, child)

    visit(func.body, None)
    return d


class Code:
    """A printed program that shows highlighted in notebooks and as text elsewhere."""

    def __init__(self, node: Any, mark: Any = None) -> None:
        self.node = node
        self.mark = mark

    def __str__(self) -> str:
        return to_str(self.node, self.mark)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return to_html(self.node, self.mark)


def _resolve_mark(func: PrimFunc, mark: Any) -> Any:
    if mark is None:
        return None
    if isinstance(mark, dict):
        return {_resolve_one(func, k): v for k, v in mark.items()}
    if isinstance(mark, (list, tuple, set)):
        return [_resolve_one(func, k) for k in mark]
    return _resolve_one(func, mark)


def _resolve_one(func: PrimFunc, mark: Any) -> Any:
    if isinstance(mark, str):
        node = find_named(func, mark)
        if node is None:
            from mlc.errors import MLCTypeError

            raise MLCTypeError(
                f"viz.code: nothing called {mark!r} to mark; name a loop variable (like 'i0') "
                "or a block (like 'C')"
            )
        return node
    return mark


def code(obj: Any, mark: Any = None, args: Any = None, sch: Any = None) -> Code:
    """The program as highlighted code. ``mark`` names what to point at: a loop variable
    (``"i1"``), a block (``"C"``), an IR node, a ``LoopRV``/``BlockRV`` (with ``sch``), a
    list of those, or ``{name: "message"}``; each marked line ends with ``# <-- message``."""
    func = as_func(obj, args)
    sch = sch if sch is not None else (obj if hasattr(obj, "get") else None)
    if sch is not None and mark is not None:
        mark = _handles_to_nodes(sch, mark)
    return Code(func, _resolve_mark(func, mark))


def _handles_to_nodes(sch: Any, mark: Any) -> Any:
    from mlc.tir.schedule import BlockRV, LoopRV

    def one(m: Any) -> Any:
        if isinstance(m, LoopRV):
            return sch.get(m)
        if isinstance(m, BlockRV):
            block = sch.get(m)
            for loc in walk(sch.mod.body):
                if isinstance(loc.stmt, BlockRealize) and loc.stmt.block is block:
                    return loc.stmt
            return block
        return m

    if isinstance(mark, dict):
        return {one(k): v for k, v in mark.items()}
    if isinstance(mark, (list, tuple, set)):
        return [one(k) for k in mark]
    return one(mark)
