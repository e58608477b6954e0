"""The graph optimization pipeline: one visible list of passes, each ``Graph -> Graph``.

``optimize(g, level)`` runs the passes whose level is at most ``level``::

    level 0: dead-code elimination, fusion with one op per group, memory planning
    level 1: + batch-norm simplification, constant folding, operator fusion
    level 2: + common-subexpression elimination, dense weight packing (folded at compile time)
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from mlc.graph.ir import Graph
from mlc.graph.passes.fuse import fuse_ops
from mlc.graph.passes.layout import alter_op_layout
from mlc.graph.passes.memory import plan_memory
from mlc.graph.passes.simplify import (
    eliminate_common_subexpr,
    eliminate_dead_code,
    fold_constant,
    simplify_inference,
)

Pass = Callable[[Graph], Graph]

# (minimum level, name, pass) -- read top to bottom, this IS the optimizer.
PIPELINE: list[tuple[int, str, Pass]] = [
    (1, "simplify_inference", simplify_inference),
    (1, "fold_constant", fold_constant),
    (2, "eliminate_common_subexpr", eliminate_common_subexpr),
    (2, "alter_op_layout", alter_op_layout),
    (2, "fold_constant", fold_constant),
    (0, "eliminate_dead_code", eliminate_dead_code),
    (1, "fuse_ops", fuse_ops),
    (0, "plan_memory", plan_memory),
]


def optimize(g: Graph, level: int = 2, trace: bool = False, max_fuse_depth: int = 32) -> Graph:
    """Run the pipeline up to ``level``; with ``trace=True`` print the graph after each pass.
    At level 0 each op stays its own kernel (fusion is a level-1 pass)."""
    for min_level, name, fn in PIPELINE:
        if level < min_level:
            continue
        if fn is fuse_ops:
            fn = functools.partial(fuse_ops, max_depth=max_fuse_depth)
        g = fn(g)
        if trace:
            print(f"--- after {name} ---\n{g}")
    return g
