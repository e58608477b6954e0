"""Graph passes, each ``Graph -> Graph``; ``optimize`` runs them as one pipeline."""

from mlc.graph.passes.fuse import PostDomTree, fuse_ops
from mlc.graph.passes.layout import alter_op_layout
from mlc.graph.passes.memory import plan_memory
from mlc.graph.passes.pipeline import PIPELINE, optimize
from mlc.graph.passes.simplify import (
    eliminate_common_subexpr,
    eliminate_dead_code,
    fold_constant,
    simplify_inference,
)

# ruff: noqa: F401
