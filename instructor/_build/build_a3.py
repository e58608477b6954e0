import sys; sys.path.insert(0, __import__("os").path.dirname(__file__))
from nbtools import *
H = "### BEGIN HIDDEN TESTS\nfrom autograder import harness as grading  # noqa: E402, I001\n"; E = "\n### END HIDDEN TESTS"
cells = [
md("""
# Assignment 3: graph passes — constant folding and operator fusion

A model is a graph of operators before it is loops. In this assignment you write two passes
of `mlc.graph`, the graph level of the course compiler:

1. **constant folding** (`fold_constants(g) -> Graph`): compute at compile time every op
   whose inputs are all constants, and replace it by a constant;
2. **a fusion rule** (`fuse_chains(g) -> list of groups`): decide which ops become one
   kernel.

Rules:
* write your code where it says `raise NotImplementedError()` (replace it);
* use only the graph API (`g.calls()`, `g.topo()`, `g.consumers()`, `node.op.pattern`,
  `graph.call`, `graph.const`, `graph.Graph`...), not `graph.fold_constant` or
  `graph.fuse_ops`;
* the test cell after each function checks small examples; the grader runs your passes on
  other graphs: folding is graded by evaluating your graph against the original on random
  inputs *and* by the ops that are left; fusion by comparing your groups with the rule's.
"""),
code("""
import numpy as np

from mlc import graph
from mlc.graph import Call, Constant, OpPattern, Var  # noqa: F401 - you will need them

rng = np.random.default_rng(0)
"""),
md("""
## A graph, in one minute

A graph value is a `graph.Var` (an input), a `graph.Constant` (`.value` is a numpy array) or
a `graph.Call` of an op (`.op`, `.args`, `.attrs`). `g.topo()` lists every node, producers
before consumers; `g.calls()` only the ops. Each op knows its numpy implementation
(`n.op.ref(*arrays, **n.attrs)`) and its fusion pattern (`n.op.pattern`).
`graph.evaluate(g, x=...)` runs a graph with numpy.
"""),
code("""
x = graph.var("x", (2, 4))
w = graph.transpose(graph.const(rng.uniform(-1, 1, (4, 3)).astype("float32")), axes=(1, 0))
y = graph.nn.relu(graph.nn.dense(x, w) + graph.const(np.ones(3, "float32")) * 2.0)
example = graph.Graph([x], [y])
print(example)
for n in example.calls():
    print(n.op.name, n.op.pattern.name, [type(a).__name__ for a in n.args])
"""),
md("""
## 1. Constant folding (4 points)

Walk the nodes in topological order and build the new graph as you go, remembering for each
old node its replacement (`new[old]`):
* a `Var` or a `Constant` stays itself;
* a `Call` whose (new) arguments are **all** `Constant`s is computed now: its value is
  `n.op.ref(*[a.value for a in args], **n.attrs)`, cast to `n.dtype`; replace it by
  `graph.const(value)`;
* any other `Call` is re-made on its new arguments: `graph.call(n.op, *args, **n.attrs)`.

Return `graph.Graph(g.inputs, [new[o] for o in g.outputs])`. Folding a chain works because
the topological order folds producers first.
"""),
code("""
def fold_constants(g):
    ### BEGIN SOLUTION
    new = {}
    for n in g.topo():
        if not isinstance(n, Call):
            new[n] = n
            continue
        args = [new[a] for a in n.args]
        if all(isinstance(a, Constant) for a in args):
            value = np.asarray(n.op.ref(*[a.value for a in args], **n.attrs)).astype(n.dtype)
            new[n] = graph.const(value)
        else:
            new[n] = graph.call(n.op, *args, **n.attrs)
    return graph.Graph(g.inputs, [new[o] for o in g.outputs])
    ### END SOLUTION


folded = fold_constants(example)
print(folded)
"""),
test("""
xv = rng.uniform(-1, 1, (2, 4)).astype("float32")
np.testing.assert_allclose(graph.evaluate(folded, x=xv)[0], graph.evaluate(example, x=xv)[0],
                           rtol=1e-5)
assert sorted(n.op.name for n in folded.calls()) == ["add", "nn.dense", "nn.relu"], folded
""" + H + """grading.check_graph("fold_mlp", fold_constants)
grading.check_graph("fold_batchnorm", fold_constants)
grading.check_graph("fold_nothing", fold_constants)
grading.check_graph("fold_two_outputs", fold_constants)""" + E, "t_fold", 4),
md("""
## 2. A fusion rule (5 points)

Fusing ops into one kernel saves the round trips of intermediates through memory. Our rule
builds **chains**. Walk `g.calls()` in topological order; each op `n` either joins the
group of one of its producers or starts a new group. `n` joins the group of the **first**
argument `a` (in `n.args` order) such that:

* `a` is an op (a `Call`), is not a graph output, and `n` is its **only consumer**
  (`g.consumers()[a] == [n]`): otherwise `a`'s value is needed elsewhere and must be stored;
* the group of `a` accepts `n`'s pattern:
  * a group that holds an `OUT_ELEMWISE_FUSABLE` op (dense, conv2d, pooling, softmax:
    the *anchor*) accepts `ELEMWISE` and `BROADCAST` ops (its epilogue);
  * a group of `ELEMWISE`/`BROADCAST`/`INJECTIVE` ops accepts any of those, and a
    `COMM_REDUCE` op, which **closes** the group (a reduction ends a kernel);
  * a closed group (it holds a reduction or an `OPAQUE` op) accepts nothing.
* `OUT_ELEMWISE_FUSABLE` and `OPAQUE` ops never join a producer's group: they start their own.

Return the groups as a list of lists of call nodes (each group in topological order); every
op of `g` must be in exactly one group. For `dense -> add -> relu` that is one group; for
`relu` used by both `exp` and `sigmoid`, `relu` stays alone.
"""),
code("""
P = OpPattern


def fuse_chains(g):
    ### BEGIN SOLUTION
    users = g.consumers()
    outputs = set(g.outputs)
    groups, group_of, state = [], {}, []
    for n in g.calls():
        p = n.op.pattern
        target = None
        if p not in (P.OPAQUE, P.OUT_ELEMWISE_FUSABLE):
            for a in n.args:
                if not isinstance(a, Call) or a in outputs or users[a] != [n]:
                    continue
                st = state[group_of[a]]
                if (st == "anchored" and p <= P.BROADCAST) or (st == "open" and p <= P.COMM_REDUCE):
                    target = group_of[a]
                    break
        if target is None:
            target = len(groups)
            groups.append([])
            state.append("anchored" if p == P.OUT_ELEMWISE_FUSABLE
                         else "closed" if p in (P.OPAQUE, P.COMM_REDUCE) else "open")
        elif p == P.COMM_REDUCE:
            state[target] = "closed"
        groups[target].append(n)
        group_of[n] = target
    return groups
    ### END SOLUTION


for grp in fuse_chains(example):
    print(" -> ".join(n.op.name for n in grp))
"""),
test("""
def names(groups):
    return sorted(tuple(n.op.name for n in grp) for grp in groups)


assert names(fuse_chains(example)) == [("multiply",), ("nn.dense", "add", "nn.relu"),
                                       ("transpose",)], names(fuse_chains(example))
v = graph.var("v", (3, 4))
r = graph.nn.relu(v)
diamond = graph.Graph([v], [graph.exp(r) + graph.sigmoid(r)])
assert names(fuse_chains(diamond)) == [("exp", "add"), ("nn.relu",), ("sigmoid",)]
red = graph.Graph([v], [graph.sum(graph.exp(v), axis=1) * 2.0])
assert names(fuse_chains(red)) == [("exp", "sum"), ("multiply",)]
""" + H + """grading.check_groups("fuse_mlp", fuse_chains)
grading.check_groups("fuse_diamond", fuse_chains)
grading.check_groups("fuse_reduce", fuse_chains)
grading.check_groups("fuse_opaque_and_outputs", fuse_chains)
grading.check_groups("fuse_conv_injective", fuse_chains)""" + E, "t_fuse", 5),
md("""
## What the real compiler does

`graph.fuse_ops` (TVM's algorithm) goes further than chains: it uses the *post-dominator
tree* so that a diamond (`relu` feeding `exp` and `sigmoid`, joined again by `add`) becomes
one kernel. Compare its groups with yours:
"""),
code("""
print(graph.fuse_ops(diamond))
"""),
]
save(cells, __import__("os").path.dirname(__file__) + "/../a3_fusion/a3_fusion.ipynb")
