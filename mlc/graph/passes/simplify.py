"""Cleanup passes, each ``Graph -> Graph``: batch-norm simplification, constant folding,
common-subexpression elimination and dead-code elimination."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from mlc.graph.evaluate import eval_call
from mlc.graph.ir import Call, Constant, Graph, Node, call, const, rewrite


def simplify_inference(g: Graph) -> Graph:
    """Rewrite inference-mode ``nn.batch_norm`` as a per-channel multiply and add::

        %y = nn.batch_norm(%x, %gamma, %beta, %mean, %var)
    becomes
        %scale = gamma / sqrt(var + eps)                  (folded when the stats are constant)
        %y = %x * reshape(%scale, (C, 1, 1)) + reshape(beta - mean * scale, (C, 1, 1))

    Both new ops are BROADCAST, so a conv2d in front absorbs them when fusing.
    """
    def fn(n: Call, args: tuple[Node, ...]) -> Node | None:
        if n.op.name != "nn.batch_norm":
            return None
        x, gamma, beta, mean, var = args
        axis = n.attrs.get("axis", 1)
        eps = const(n.attrs.get("epsilon", 1e-5), x.dtype)
        scale = call("divide", gamma, call("sqrt", call("add", var, eps)))
        shift = call("subtract", beta, call("multiply", mean, scale))
        shape = (x.shape[axis],) + (1,) * (x.ndim - 1 - axis)
        scale_b = call("reshape", scale, newshape=shape)
        shift_b = call("reshape", shift, newshape=shape)
        return call("add", call("multiply", x, scale_b), shift_b)

    return rewrite(g, fn)


def fold_constant(g: Graph, max_bytes: int = 1 << 26) -> Graph:
    """Evaluate, at compile time, every op whose inputs are all constants (with its numpy
    reference), replacing it by a constant. Results larger than ``max_bytes`` are left alone."""
    def fn(n: Call, args: tuple[Node, ...]) -> Node | None:
        if not all(isinstance(a, Constant) for a in args) or not args:
            return None
        if n.type.nbytes > max_bytes or n.op.name == "copy":
            return None
        value = eval_call(n, [cast(Constant, a).value for a in args])
        names = [a.name for a in args if isinstance(a, Constant) and a.name]
        return Constant(value, names[0] if names else "")

    return rewrite(g, fn)


def _key(n: Call, args: tuple[Node, ...]) -> tuple[Any, ...]:
    return (n.op.name, tuple(id(a) for a in args), tuple(sorted(n.attrs.items(), key=str)))


def eliminate_common_subexpr(g: Graph) -> Graph:
    """Merge calls of the same op with the same attributes on the same arguments, and
    identical small constants (so ``relu(x) + relu(x)`` computes ``relu(x)`` once)."""
    seen: dict[tuple[Any, ...], Node] = {}
    consts: dict[tuple[Any, ...], Constant] = {}
    keep: list[Node] = []  # keep keyed nodes alive so id() stays unique

    def canon(a: Node) -> Node:
        if isinstance(a, Constant) and a.value.size <= 64:
            k = (a.value.dtype.str, a.value.shape, a.value.tobytes())
            return consts.setdefault(k, a)
        return a

    def fn(n: Call, args: tuple[Node, ...]) -> Node | None:
        args = tuple(canon(a) for a in args)
        k = _key(n, args)
        if k in seen:
            return seen[k]
        out = n if all(a is b for a, b in zip(args, n.args)) else call(n.op, *args, **n.attrs)
        seen[k] = out
        keep.append(out)
        return out

    return rewrite(g, fn)


def eliminate_dead_code(g: Graph) -> Graph:
    """Drop every node the outputs do not need, and no-op reshapes (to the same shape)."""
    def fn(n: Call, args: tuple[Node, ...]) -> Node | None:
        if n.op.name == "reshape" and args[0].shape == n.shape:
            return args[0]
        return None

    out = rewrite(g, fn)
    return out


def count_nodes(g: Graph) -> int:
    return len(g.calls())


def unique_constant_bytes(g: Graph) -> int:
    return int(np.sum([n.value.nbytes for n in g.topo() if isinstance(n, Constant)]))
