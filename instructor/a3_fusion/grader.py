"""Trusted checks of a3_fusion: the hidden graphs and the reference decisions.

Each case builds a graph here (students never see this file); the kernel receives it as JSON,
runs the student's pass on it and exports the result. ``fold_*`` cases check that the
student's graph computes the same outputs (``graph.evaluate`` on random inputs) and keeps
exactly the ops that depend on an input; ``fuse_*`` cases check the groups against
:func:`reference_groups`, the rule stated in the notebook.
"""

import numpy as np

from autograder.graphio import GraphCase


def _weights(seed):
    """A deterministic weight maker: a graph is rebuilt identically every time."""
    rng = np.random.default_rng(seed)
    return lambda *shape: rng.uniform(-1, 1, shape).astype("float32")


# -- the reference decisions --------------------------------------------------------------
def expected_ops(g):
    """After constant folding, exactly the ops that depend on an input remain."""
    from mlc.graph import Call, Var

    live = set()
    for n in g.topo():
        if isinstance(n, Var) or (isinstance(n, Call) and any(a in live for a in n.args)):
            live.add(n)
    return [n.op.name for n in g.calls() if n in live]


def reference_groups(g):
    """The notebook's rule: a chain grows while its last op has one consumer and the
    consumer's pattern is accepted (an anchored group takes ELEMWISE/BROADCAST; a plain group
    takes up to INJECTIVE and a COMM_REDUCE, which closes it; OPAQUE never fuses)."""
    from mlc.graph import Call
    from mlc.graph import OpPattern as P

    users = g.consumers()
    outputs = set(g.outputs)
    group_of, groups = {}, []
    state = []  # per group: "anchored", "open" or "closed"
    for n in g.calls():
        p = n.op.pattern
        joined = False
        if p not in (P.OPAQUE, P.OUT_ELEMWISE_FUSABLE):
            for a in n.args:
                if not isinstance(a, Call) or a in outputs or users[a] != [n]:
                    continue
                gid = group_of[a]
                st = state[gid]
                ok = (st == "anchored" and p <= P.BROADCAST) or (
                    st == "open" and p <= P.COMM_REDUCE)
                if ok:
                    groups[gid].append(n)
                    group_of[n] = gid
                    if p == P.COMM_REDUCE:
                        state[gid] = "closed"
                    joined = True
                    break
        if not joined:
            group_of[n] = len(groups)
            groups.append([n])
            state.append({P.OUT_ELEMWISE_FUSABLE: "anchored", P.OPAQUE: "closed",
                          P.COMM_REDUCE: "closed"}.get(p, "open"))
    return groups


# -- hidden graphs ------------------------------------------------------------------------
def fold_mlp():
    from mlc import graph

    _w = _weights(1)

    x = graph.var("x", (4, 16))
    w = graph.transpose(graph.const(_w(16, 8), name="w_t"), axes=(1, 0))
    b = graph.const(_w(8), name="b") * 2.0 + 1.0
    h = graph.nn.relu(graph.nn.bias_add(graph.nn.dense(x, w), b))
    return graph.Graph([x], [h])


def fold_batchnorm():
    from mlc import graph

    _w = _weights(2)

    x = graph.var("x", (1, 3, 6, 6))
    w = graph.const(_w(4, 3, 3, 3), name="w")
    gamma, beta = graph.const(_w(4), name="gamma"), graph.const(_w(4), name="beta")
    mean, var = graph.const(_w(4), name="mean"), graph.const(np.abs(_w(4)) + 0.5, name="var")
    scale = gamma / graph.sqrt(var + 1e-5)
    shift = beta - mean * scale
    y = graph.nn.conv2d(x, w, padding=1)
    y = y * graph.reshape(scale, newshape=(4, 1, 1)) + graph.reshape(shift, newshape=(4, 1, 1))
    return graph.Graph([x], [graph.nn.relu(y)])


def fold_nothing():
    from mlc import graph

    _w = _weights(3)

    x = graph.var("x", (3, 5))
    return graph.Graph([x], [graph.exp(x * 0.5) + graph.nn.relu(x)])


def fold_two_outputs():
    from mlc import graph

    _w = _weights(4)

    x = graph.var("x", (2, 3))
    c = graph.exp(graph.const(_w(2, 3), name="c")) - 1.0
    table = graph.sum(graph.const(_w(2, 3, 4), name="t"), axis=2)
    return graph.Graph([x], [x * c, table, graph.nn.relu(c)])


def fuse_mlp():
    from mlc import graph

    _w = _weights(5)

    x = graph.var("x", (2, 8))
    h = graph.nn.relu(graph.nn.bias_add(graph.nn.dense(x, graph.const(_w(6, 8))),
                                        graph.const(_w(6))))
    y = graph.nn.bias_add(graph.nn.dense(h, graph.const(_w(3, 6))), graph.const(_w(3)))
    return graph.Graph([x], [graph.tanh(y)])


def fuse_diamond():
    from mlc import graph

    _w = _weights(6)

    x = graph.var("x", (4, 4))
    r = graph.nn.relu(x)
    return graph.Graph([x], [graph.exp(r) + graph.sigmoid(r)])


def fuse_reduce():
    from mlc import graph

    _w = _weights(7)

    x = graph.var("x", (4, 6))
    s = graph.sum(graph.exp(x * 2.0), axis=1)
    return graph.Graph([x], [graph.sqrt(s + 1.0)])


def fuse_opaque_and_outputs():
    from mlc import graph

    _w = _weights(8)

    x = graph.var("x", (3, 8))
    h = graph.nn.relu(graph.nn.dense(x, graph.const(_w(8, 8))))
    s = graph.negative(graph.sort(h * 2.0, axis=1))
    return graph.Graph([x], [h, s])


def fuse_conv_injective():
    from mlc import graph

    _w = _weights(9)

    x = graph.var("x", (1, 2, 8, 8))
    y = graph.nn.conv2d(x, graph.const(_w(4, 2, 3, 3)), padding=1)
    y = graph.nn.relu(y + graph.const(_w(4, 1, 1)))
    p = graph.nn.max_pool2d(y, pool_size=2)
    t = graph.transpose(graph.reshape(p, newshape=(4, 16)), axes=(1, 0)) * 0.5
    return graph.Graph([x], [graph.max(t, axis=0)])


def _fold(name, build):
    return GraphCase(name, build, kind="graph", expected_ops=expected_ops)


def _fuse(name, build):
    return GraphCase(name, build, kind="groups", reference_groups=reference_groups)


CASES = [
    _fold("fold_mlp", fold_mlp),
    _fold("fold_batchnorm", fold_batchnorm),
    _fold("fold_nothing", fold_nothing),
    _fold("fold_two_outputs", fold_two_outputs),
    _fuse("fuse_mlp", fuse_mlp),
    _fuse("fuse_diamond", fuse_diamond),
    _fuse("fuse_reduce", fuse_reduce),
    _fuse("fuse_opaque_and_outputs", fuse_opaque_and_outputs),
    _fuse("fuse_conv_injective", fuse_conv_injective),
]
