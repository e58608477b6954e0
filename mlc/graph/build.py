"""``graph.build``: compile the whole graph into ONE native function, and run it.

Each fused group lowers to one te computation (injective producers inlined by its
schedule), is scheduled with the topi default and lowered to loops; :mod:`mlc.graph.link`
then splices the groups' loop nests, in order, into one function whose parameters are the
graph's inputs, constants and outputs, with the intermediates allocated inside (sharing
storage as the memory plan says). So an inference is one native call::

    mod = graph.build(graph.optimize(g), target="llvm")
    mod.set_input(x=batch); mod.run(); y = mod.get_output(0)
    y = mod(x=batch)[0]                      # the same in one call
    print(mod.prim_func)                     # the whole graph as one loop program
    mod.debug_run(x=batch)                   # group by group, each checked against numpy

A graph with an OPAQUE op that has no te computation (``sort``), or ``target="numpy"``, runs
group by group instead: native kernels and numpy functions called in order from Python.
"""
from __future__ import annotations

import dataclasses

from mlc.errors import GraphError, LoweringError
from mlc.graph.ir import FusedGroup, Graph
from mlc.graph.link import link_groups
from mlc.graph.module import GraphModule, Kernel
from mlc.graph.passes.fuse import fuse_ops
from mlc.graph.passes.memory import plan_memory
from mlc.graph.to_te import lower_group
from mlc.tir.deep import retry_deeper

__all__ = ["GraphModule", "Kernel", "build", "compile_group"]


def compile_group(group: FusedGroup, target: str) -> Kernel:
    """Lower, schedule and lower to loops one group (numpy for OPAQUE ops and
    target="numpy")."""
    if target == "numpy" or any(n.op.topi is None for n in group.nodes):
        return Kernel(group, group.inputs(), native=False, target=target)
    from mlc.topi.schedule import schedule_group
    from mlc.transform.pipeline import lower

    try:
        lowered = lower_group(group)
        sch = schedule_group(lowered)
        func = dataclasses.replace(sch.mod, name=_c_name(group))
        loops = lower(func)
    except (RecursionError, LoweringError) as err:
        if isinstance(err, LoweringError) and "recursion depth" not in str(err):
            raise
        raise GraphError(f"group {group.gid} ({len(group.nodes)} ops) is too deep to lower as "
                         "one kernel; fuse fewer ops (graph.optimize(..., max_fuse_depth=32), "
                         "the default)") from None
    return Kernel(group, lowered.inputs, native=True, target=target, prim_func=sch.mod,
                  schedule=sch, lowered=loops)


def _c_name(group: FusedGroup) -> str:
    name = f"g{group.gid}_" + group.name
    return "".join(c if c.isalnum() else "_" for c in name)[:60]



def build(g: Graph, target: str = "llvm", name: str = "graph") -> GraphModule:
    """Compile ``g`` (fused and memory-planned already by ``graph.optimize``, or one kernel
    per op if not) for ``target`` ("llvm", "c", or "numpy" for the reference executor).

    With every group native, the whole graph becomes ONE function (``mod.prim_func``,
    ``mod.module``) and a run is one native call."""
    if g.groups is None:
        g = fuse_ops(g, enabled=False)
    if g.memory is None:
        g = plan_memory(g)
    if g.groups is None:
        raise GraphError("internal: the graph has no groups after fuse_ops")
    kernels = [compile_group(grp, target) for grp in g.groups]
    if not kernels or not all(k.native for k in kernels):
        return GraphModule(g, kernels, target)
    from mlc.target import build as target_build

    parts = [(k.inputs, k.group.root, k.lowered) for k in kernels]
    try:  # a group of thousands of ops nests as deep: linked on a deep stack (mlc.tir.deep)
        linked = retry_deeper(lambda: link_groups(g, parts, name))
    except RecursionError:
        raise GraphError("the graph nests too deeply to link into one function; fuse fewer "
                         "ops (graph.optimize(..., max_fuse_depth=32), the default)") from None
    module = target_build(linked.func, target)
    return GraphModule(g, kernels, target, linked=linked, module=module)
