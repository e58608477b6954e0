"""Operator fusion, TVM's algorithm: a post-dominator tree over the DAG plus phased rules.

Why post-dominators: a node ``n`` can join the kernel of a later node ``d`` only if EVERY path
from ``n`` to the outputs passes through ``d`` (``d`` post-dominates ``n``); otherwise some
other consumer would need ``n``'s result from memory anyway. For each op we find its immediate
post-dominator (the least common ancestor of its consumers in the post-dominator tree), and
remember the "worst" pattern met on the way there. Then, in topological order:

phase 0
  * a complex op (OUT_ELEMWISE_FUSABLE: dense, conv2d) absorbs the ops up to its post-dominator
    if the way there is elementwise and every op on it is at most BROADCAST
    (``dense -> bias_add -> relu`` is one kernel);
  * an ELEMWISE/BROADCAST op fuses into a post-dominator that is injective or a reduction, when
    the ops in between are injective (``exp -> sum``: the producer is inlined into the loop);
phase 1
  * INJECTIVE chains fuse (``reshape -> transpose -> add``), after phase 0 so that complex ops
    have taken their epilogues first.

A reduction only absorbs producers, so it ends a group; OPAQUE ops never fuse; two groups that
each hold a complex op never merge; a group never grows beyond ``max_depth`` ops.
"""

from __future__ import annotations

from collections.abc import Callable

from mlc.graph.ir import Call, FusedGroup, Graph, Node
from mlc.graph.op import OpPattern

P = OpPattern


class _Group:
    """A union-find cell: ``parent`` is None at the root, which carries the group's facts."""

    def __init__(self, node: Call) -> None:
        self.parent: _Group | None = None
        self.pattern = node.op.pattern
        self.anchor: Call | None = node if node.op.pattern == P.OUT_ELEMWISE_FUSABLE else None
        self.num_nodes = 1

    def root(self) -> _Group:
        g = self
        while g.parent is not None:
            g = g.parent
        return g


def edge_pattern(user: Call, arg: Node) -> OpPattern:
    """How ``user`` reads ``arg``: a broadcast op reading an operand of its own output shape
    reads it elementwise (whatever the dtypes: ``qnn.dequantize`` reads int32, makes float32)."""
    p = user.op.pattern
    if p == P.BROADCAST and arg.shape == user.shape:
        return P.ELEMWISE
    return p


class PostDomTree:
    """The immediate post-dominator of every call (None for graph outputs and for nodes whose
    paths to the outputs share no op), and the worst edge pattern on the way there."""

    def __init__(self, g: Graph) -> None:
        self.users = g.consumers()
        outputs = set(g.outputs)
        self.parent: dict[Call, Call | None] = {}
        self.depth: dict[Call, int] = {}
        self.pattern: dict[Call, OpPattern] = {}
        for n in reversed(g.calls()):
            users = self.users[n]
            if n in outputs or not users:
                self.parent[n], self.depth[n], self.pattern[n] = None, 1, P.OPAQUE
                continue
            parent: Call | None = users[0]
            pat = edge_pattern(users[0], n)
            for u in users[1:]:
                parent, pat = self._lca(parent, u, max(pat, edge_pattern(u, n)))
            self.parent[n] = parent
            self.depth[n] = self.depth[parent] + 1 if parent is not None else 1
            self.pattern[n] = pat

    def _lca(self, a: Call | None, b: Call | None,
             pat: OpPattern) -> tuple[Call | None, OpPattern]:
        while a is not b:
            if a is None or b is None:
                return None, pat
            if self.depth[a] < self.depth[b]:
                pat = max(pat, self.pattern[b])
                b = self.parent[b]
            elif self.depth[a] > self.depth[b]:
                pat = max(pat, self.pattern[a])
                a = self.parent[a]
            else:
                pat = max(pat, self.pattern[a], self.pattern[b])
                a, b = self.parent[a], self.parent[b]
        return a, pat


class _Partitioner:
    def __init__(self, g: Graph, max_depth: int) -> None:
        self.g = g
        self.calls = g.calls()
        self.tree = PostDomTree(g)
        self.users = self.tree.users
        self.groups = {n: _Group(n) for n in self.calls}
        self.max_depth = max_depth

    # -- path helpers (loops, not recursion: a path may be thousands of ops long) ----------
    def _path(self, src: Call, sink: Call) -> list[Call]:
        """The ops on the paths from ``src`` (exclusive) to ``sink`` (inclusive), each once,
        stopping at ``sink``."""
        seen: set[Call] = set()
        stack = list(reversed(self.users[src]))
        out: list[Call] = []
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            out.append(n)
            if n is not sink:
                stack.extend(reversed(self.users[n]))
        return out

    def check_path(self, src: Call, sink: Call, fcond: Callable[[OpPattern, bool], bool]) -> bool:
        """Do all ops on the paths from ``src`` (exclusive) to ``sink`` satisfy ``fcond``?"""
        return all(fcond(self.groups[n].root().pattern, n is sink) for n in self._path(src, sink))

    def count_with(self, src: Call, sink: Call) -> int:
        """The ops a group would hold after merging ``src`` and the paths to ``sink``."""
        between = [src] + [n for n in self._path(src, sink) if n is not sink]
        return self.groups[sink].root().num_nodes + sum(
            self.groups[n].root().num_nodes for n in between)

    def commit(self, src: Call, sink: Call) -> None:
        """Merge every group on the paths from ``src`` to ``sink`` into ``sink``'s group."""
        target = self.groups[sink].root()
        for n in [src] + [n for n in self._path(src, sink) if n is not sink]:
            child = self.groups[n].root()
            if child is not target:
                child.parent = target
                target.num_nodes += child.num_nodes
                if child.anchor is not None:
                    target.anchor = child.anchor
                target.pattern = max(target.pattern, child.pattern)

    # -- the phases ------------------------------------------------------------------------
    def run_phase(self, phase: int) -> None:
        for n in self.calls:
            group = self.groups[n].root()
            dom = self.tree.parent[n]
            if dom is None or group.pattern == P.OPAQUE:
                continue
            dom_group = self.groups[dom].root()
            if dom_group is group:
                continue
            if group.anchor is not None and dom_group.anchor is not None:
                continue
            if self.count_with(n, dom) > self.max_depth:
                continue
            dom_pat = self.tree.pattern[n]
            if group.pattern == P.OUT_ELEMWISE_FUSABLE:
                if phase == 0 and dom_pat == P.ELEMWISE and self.check_path(
                        n, dom, lambda k, sink: k <= P.BROADCAST):
                    self.commit(n, dom)
            elif group.pattern <= P.BROADCAST:
                if dom_pat <= P.INJECTIVE or dom_pat == P.COMM_REDUCE:
                    def fcond(k: OpPattern, sink: bool) -> bool:
                        if not sink:
                            return k <= P.INJECTIVE
                        return k <= P.OUT_ELEMWISE_FUSABLE
                    if self.check_path(n, dom, fcond):
                        self.commit(n, dom)
            elif group.pattern in (P.INJECTIVE, P.TUPLE):
                if phase == 1 and self.check_path(n, dom, lambda k, sink: k <= P.INJECTIVE):
                    self.commit(n, dom)

    def result(self) -> list[FusedGroup]:
        members: dict[_Group, list[Call]] = {}
        for n in self.calls:  # topological order is kept inside each group
            members.setdefault(self.groups[n].root(), []).append(n)
        out = []
        for gid, (grp, nodes) in enumerate(
                sorted(members.items(), key=lambda kv: self.calls.index(kv[1][-1]))):
            anchor = grp.anchor if grp.anchor is not None else nodes[-1]
            out.append(FusedGroup(gid, tuple(nodes), anchor, OpPattern(grp.pattern)))
        return out


def fuse_ops(g: Graph, max_depth: int = 32, enabled: bool = True) -> Graph:
    """Partition the ops of ``g`` into fused groups (``g.groups``); each becomes one kernel.
    With ``enabled=False`` every op is its own group (the unfused baseline)."""
    part = _Partitioner(g, max_depth)
    if enabled:
        part.run_phase(0)
        part.run_phase(1)
    return g.with_(groups=part.result(), memory=None)
