"""The reference executor: run a graph node by node with each op's numpy implementation.

It is the ground truth that constant folding, the tests and the debug executor compare with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph.ir import Call, Constant, Graph, Node, Var


def check_input(v: Var, value: Any) -> np.ndarray:
    """``value`` as an array of ``v``'s type, or a GraphError saying what was expected."""
    arr = np.asarray(value)
    if arr.shape != v.shape:
        raise GraphError(f"input {v.name!r} must have shape {v.shape}, got {arr.shape}")
    if arr.dtype != np.dtype(v.dtype):
        if np.can_cast(arr.dtype, v.dtype, casting="same_kind"):
            arr = arr.astype(v.dtype)
        else:
            raise GraphError(f"input {v.name!r} must have dtype {v.dtype}, got {arr.dtype}")
    return np.ascontiguousarray(arr)


def eval_call(n: Call, args: list[np.ndarray]) -> np.ndarray:
    """One op on numpy arrays, with the result checked against the inferred type."""
    out = np.asarray(n.op.ref(*args, **n.attrs))
    if out.shape != n.shape:
        raise GraphError(f"internal: the numpy reference of {n.op.name} returned shape "
                         f"{out.shape}, expected {n.shape}")
    return out.astype(n.dtype, copy=False)


def evaluate(g: Graph, inputs: Mapping[str, Any] | None = None, /,
             **kw: Any) -> list[np.ndarray]:
    """Run ``g`` on numpy arrays (by input name: a mapping, keywords, or both) and return
    the outputs. Any input name works as a keyword, ``g`` and ``inputs`` too."""
    feed = dict(inputs or {}, **kw)
    values: dict[Node, np.ndarray] = {}
    for v in g.inputs:
        if v.name not in feed:
            raise GraphError(f"missing input {v.name!r}; the graph takes "
                             f"{[x.name for x in g.inputs]}")
        values[v] = check_input(v, feed[v.name])
    for n in g.topo():
        if isinstance(n, Constant):
            values[n] = n.value
        elif isinstance(n, Call):
            values[n] = eval_call(n, [values[a] for a in n.args])
    return [values[o] for o in g.outputs]
