"""Computation graphs as pictures: op nodes with shape and fusion pattern, fused groups as
dashed clusters (draw before and after ``graph.optimize`` to see what fusion did)."""

from __future__ import annotations

from typing import Any

from mlc.viz._dot import Drawing, from_source


def graph_drawing(g: Any, name: str = "graph") -> Drawing:
    """Draw a ``graph.Graph``: inputs as ellipses, constants as notes, each op as a box with
    its name, output shape and pattern (ELEMWISE, OUT_ELEMWISE_FUSABLE, ...); after fusion,
    each group is a dashed cluster that becomes one kernel."""
    from mlc.graph.printer import graph_to_dot

    return from_source(graph_to_dot(g, name), name)
