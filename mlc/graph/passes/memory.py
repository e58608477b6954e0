"""Static memory planning: intermediate tensors whose lifetimes do not overlap share a buffer.

Kernels run in the order of ``g.groups``. The output of group ``i`` is live from step ``i``
until the last group that reads it. Walking the groups in order, each output takes the best
fitting free buffer (or a new one), and buffers are freed after their last reader ran (never
before the step's own output is placed, so a kernel never reads and writes the same buffer).
Graph outputs get buffers of their own: the caller keeps them.
"""

from __future__ import annotations

from mlc.graph.ir import Graph, MemoryPlan, Node
from mlc.graph.passes.fuse import fuse_ops


def plan_memory(g: Graph) -> Graph:
    """Attach a :class:`MemoryPlan` to ``g`` (fusing first, one op per group, if needed)."""
    if g.groups is None:
        g = fuse_ops(g, enabled=False)
    assert g.groups is not None
    outputs = set(g.outputs)
    last_use: dict[Node, int] = {}
    for i, grp in enumerate(g.groups):
        for a in grp.inputs():
            last_use[a] = i
    storage: dict[Node, int] = {}
    sizes: list[int] = []
    free: list[int] = []
    before = 0
    for i, grp in enumerate(g.groups):
        out = grp.root
        if out not in outputs:
            need = out.type.nbytes
            before += need
            fits = [s for s in free if sizes[s] >= need]
            if fits:
                sid = min(fits, key=lambda s: sizes[s])
            elif free:
                sid = max(free, key=lambda s: sizes[s])
                sizes[sid] = need  # grow the largest free buffer
            else:
                sid = len(sizes)
                sizes.append(need)
            if sid in free:
                free.remove(sid)
            storage[out] = sid
        for a in grp.inputs():
            if last_use.get(a) == i and a in storage:
                free.append(storage[a])
    plan = MemoryPlan(storage, tuple(sizes), before, int(sum(sizes)))
    return g.with_(memory=plan)
