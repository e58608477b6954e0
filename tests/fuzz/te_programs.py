"""Random te programs as plain data, how to build them, and how to check one.

A program is a JSON-able dict (so it can travel over a pipe to a worker process)::

    {"shape": [3, 0], "symbolic": true, "dtype": "float32", "ybcast": [false, true],
     "reduce": {"kind": "max", "extent": 2} or null, "expr": tree, "seed": 7}

``expr`` trees: ["x"] (X at the output index, plus the reduce index), ["y"] (Y broadcast
to the output shape, size-1 dimensions as in numpy), ["i", d] (output index d as a value),
["c", v], ["bin", op, a, b], ["cmpsel", op, a, b, t, f] (te.if_then_else), ["cast", a]
(through the other dtype and back), ["gather", a] (X[..., G[j]] guarded by a range check;
["gather", a, "unguarded"] without one), ["div", op, a, divisor] (integer floordiv/floormod/
truncdiv/truncmod).

Switches for generators that produce what only the back end's run-time checks make safe:
``UNSAFE_INT_DIVISION`` (zero, and INT_MIN // -1, as divisors), ``UNGUARDED_GATHER``
(data-dependent indices out of range: the bounds checks, per dimension, must refuse them;
an out-of-range read whose value cannot change the result may be simplified away with its
check, which :func:`check` accepts) and ``NONFINITE_TO_INT_CAST`` (NaN/inf cast to an
integer, which LLVM leaves undefined).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

# Switches for the generators whose failures are the code generator's (see module doc).
UNSAFE_INT_DIVISION = True
UNGUARDED_GATHER = True
NONFINITE_TO_INT_CAST = False
# llvm codegen's Max/Min drop a NaN in first position (tests/te/test_reduce.py)
MINMAX_NAN_INPUTS = True
# Reductions over an empty range (extent 0): the init runs before the reduction loops when
# they may be empty (lower_blocks; tests/transform/test_empty_reduction.py).
EMPTY_REDUCTION = True

FLOAT_OPS = ["add", "sub", "mul", "max", "min", "div"]
INT_OPS = ["add", "sub", "mul", "max", "min", "and", "or"]
CMP_OPS = ["lt", "le", "eq", "ne", "gt", "ge"]


def _tree(dtype: str, depth: int) -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.just(["x"]),
        st.just(["y"]),
        st.tuples(st.just("i"), st.integers(0, 1)).map(list),
        (st.floats(-4, 4, width=32) if dtype == "float32" else st.integers(-5, 5)).map(
            lambda v: ["c", v]
        ),
        st.just(["gather", ["x"]]),
        st.just(["gather", ["x"], "unguarded"] if UNGUARDED_GATHER else ["gather", ["x"]]),
    )
    if depth == 0:
        return leaves
    sub = _tree(dtype, depth - 1)
    ops = FLOAT_OPS if dtype == "float32" else INT_OPS
    nodes = [
        st.tuples(st.just("bin"), st.sampled_from(ops), sub, sub).map(list),
        st.tuples(st.just("cmpsel"), st.sampled_from(CMP_OPS), sub, sub, sub, sub).map(list),
        st.tuples(st.just("cast"), sub).map(list),
    ]
    if dtype == "int32":
        divisors = st.integers(-4, 4) if UNSAFE_INT_DIVISION else st.sampled_from([2, 3, -3, 7])
        nodes.append(
            st.tuples(
                st.just("div"),
                st.sampled_from(["floordiv", "floormod", "truncdiv", "truncmod"]),
                sub,
                divisors if not UNSAFE_INT_DIVISION else st.one_of(divisors, sub),
            ).map(list)
        )
    return st.one_of(leaves, *nodes)


@st.composite
def programs(draw: st.DrawFn) -> dict[str, Any]:
    dtype = draw(st.sampled_from(["float32", "int32"]))
    rank = draw(st.integers(1, 2))
    shape = [draw(st.sampled_from([0, 1, 2, 3, 5])) for _ in range(rank)]
    red = draw(
        st.none()
        | st.fixed_dictionaries(
            {
                "kind": st.sampled_from(["sum", "max", "min"]),
                "extent": st.integers(0 if EMPTY_REDUCTION else 1, 3),
            }
        )
    )
    return {
        "shape": shape,
        "symbolic": draw(st.booleans()),
        "dtype": dtype,
        "ybcast": [draw(st.booleans()) for _ in range(rank)],
        "reduce": red,
        "expr": draw(_tree(dtype, draw(st.integers(0, 3)))),
        "edge": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
    }


# ---------------------------------------------------------------------------------------------
# building


def build(spec: dict[str, Any]) -> tuple[list[Any], Any, dict[str, np.ndarray]]:
    """(placeholders, output tensor, input arrays by name) for ``spec``."""
    from mlc import te

    dtype = spec["dtype"]
    shape = list(spec["shape"])
    n = te.var("n")
    sym_shape: list[Any] = [n, *shape[1:]] if spec["symbolic"] else list(shape)
    red = spec["reduce"]
    rext = red["extent"] if red else None
    X = te.placeholder((*sym_shape, rext) if red else tuple(sym_shape), dtype, name="X")
    yshape = [1 if b else s for b, s in zip(spec["ybcast"], sym_shape)]
    Y = te.placeholder(tuple(yshape), dtype, name="Y")
    last = shape[-1]
    G = te.placeholder((last,), "int32", name="G")
    other = "float64" if dtype == "float32" else "float32"
    k = te.reduce_axis((0, rext), name="k") if red else None

    def ev(t: list[Any], idx: tuple[Any, ...]) -> Any:
        tag = t[0]
        xi = (*idx, k) if red else idx
        if tag == "x":
            return X[xi]
        if tag == "y":
            return Y[tuple(0 if b else i for b, i in zip(spec["ybcast"], idx))]
        if tag == "i":
            return idx[min(t[1], len(idx) - 1)].astype(dtype)
        if tag == "c":
            return te.const(t[1], dtype)
        if tag == "gather":
            g = G[idx[-1]]
            src = (*idx[:-1], g, k) if red else (*idx[:-1], g)
            if len(t) > 2:  # no guard: the run-time bounds check must catch a bad index
                return X[src]
            ok = te.all(g >= 0, g < X.shape[len(idx) - 1])
            return te.if_then_else(ok, X[src], te.const(0, dtype))
        if tag == "bin":
            a, b = ev(t[2], idx), ev(t[3], idx)
            op = t[1]
            if op == "max":
                return te.max(a, b)
            if op == "min":
                return te.min(a, b)
            if op == "and":
                return te.if_then_else((a > 0) & (b > 0), a, b)
            if op == "or":
                return te.if_then_else((a > 0) | (b > 0), a, b)
            return {"add": a + b, "sub": a - b, "mul": a * b}[op] if op != "div" else a / b
        if tag == "cmpsel":
            a, b = ev(t[2], idx), ev(t[3], idx)
            cond = {"lt": a < b, "le": a <= b, "eq": a == b, "ne": a != b, "gt": a > b,
                    "ge": a >= b}[t[1]]  # fmt: skip
            return te.if_then_else(cond, ev(t[4], idx), ev(t[5], idx))
        if tag == "cast":
            a = ev(t[1], idx)
            if dtype == "float32" and not NONFINITE_TO_INT_CAST:
                return a.astype("float64").astype(dtype)
            return a.astype(other).astype(dtype) if dtype == "float32" else a.astype(
                "float64"
            ).astype(dtype)
        if tag == "div":
            a = ev(t[2], idx)
            b = ev(t[3], idx) if isinstance(t[3], list) else te.const(t[3], dtype)
            fn = {"floordiv": te.floordiv, "floormod": te.floormod, "truncdiv": te.truncdiv,
                  "truncmod": te.truncmod}[t[1]]  # fmt: skip
            return fn(a, b)
        raise ValueError(f"unknown node {tag!r}")

    def body(*idx: Any) -> Any:
        e = ev(spec["expr"], idx)
        if red:
            return getattr(te, red["kind"])(e, axis=k)
        return e

    names = ["i", "j"][: len(shape)]
    fcompute = (lambda i: body(i)) if len(names) == 1 else (lambda i, j: body(i, j))
    Out = te.compute(tuple(sym_shape), fcompute, name="Out")
    arrays = _arrays(spec, X, Y, G, shape, rext)
    return [X, Y, G], Out, arrays


def _arrays(
    spec: dict[str, Any], X: Any, Y: Any, G: Any, shape: list[int], rext: int | None
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    dtype = spec["dtype"]

    def fill(shp: tuple[int, ...]) -> np.ndarray:
        if dtype == "float32":
            a = rng.uniform(-3, 3, shp).astype("float32")
            if spec["edge"]:
                edge = [0.0, -0.0, np.inf, -np.inf, 1e30, -1e-30]
                if MINMAX_NAN_INPUTS:
                    edge.append(np.nan)
                m = rng.random(shp) < 0.3
                a[m] = rng.choice(np.array(edge, "float32"), size=int(m.sum()))
            return a
        a = rng.integers(-6, 7, shp).astype("int32")
        if spec["edge"]:
            m = rng.random(shp) < 0.3
            edge = np.array([0, 1, -1, 2**31 - 1, -(2**31)], "int64").astype("int32")
            a[m] = rng.choice(edge, size=int(m.sum()))
        return a

    xshape = (*shape, rext) if rext is not None else tuple(shape)
    yshape = tuple(1 if b else s for b, s in zip(spec["ybcast"], shape))
    # out-of-range indices too: the guard (or, with UNGUARDED_GATHER, the run-time bounds
    # check) must handle them
    lo, hi = -2, shape[-1] + 2
    g = rng.integers(lo, hi, (shape[-1],)).astype("int32")
    return {"X": fill(xshape), "Y": fill(yshape), "G": g}


def check(spec: dict[str, Any]) -> dict[str, Any]:
    """Build ``spec``, run it compiled (llvm) and with the reference evaluator; the verdict
    is ``ok``, ``mismatch`` (with a summary) or ``error`` (an exception, by type)."""
    import mlc
    from mlc.errors import EvaluationError, MLCError, RuntimeCheckError
    from mlc.testing import evaluate

    try:
        inputs, out, arrays = build(spec)
    except MLCError as err:
        return {"status": "refused", "detail": f"{type(err).__name__}: {err}"[:300]}
    shape = tuple(spec["shape"])
    try:
        with np.errstate(all="ignore"):
            sizes = {"n": spec["shape"][0]} if spec["symbolic"] else None
            expected = evaluate([out], {t: arrays[t.name] for t in inputs}, sizes)["Out"]
    except EvaluationError as err:  # e.g. an out-of-range gather: compiled code must refuse
        expected, no_answer = None, f"{err}"[:200]
    try:
        f = mlc.build(te_create(inputs, out), target="llvm")
        got = np.empty(shape, "float32" if spec["dtype"] == "float32" else "int32")
        used = [p.name for p in f_params(inputs, out)]
        f(*[arrays[name] for name in used], got)
    except RuntimeCheckError as err:  # a run-time check (division by zero, bounds) fired
        return {"status": "checked", "detail": f"{type(err).__name__}: {err}"[:300]}
    except Exception as err:  # noqa: BLE001 - every failure is counted by type
        return {"status": "error", "detail": f"{type(err).__name__}: {err}"[:300]}
    if expected is None:
        if _bad_reads_were_dead(spec, out, inputs, arrays, got):
            return {"status": "ok", "detail": "out-of-range reads whose values were unused"}
        return {"status": "unchecked", "detail": f"ran although the reference says: {no_answer}"}
    if not _same(spec, got, expected):
        bad = np.argwhere(~np.isclose(got, expected, equal_nan=True))[:3].tolist()
        return {"status": "mismatch", "detail": f"at {bad}: got {got.ravel()[:6].tolist()} "
                f"expected {expected.ravel()[:6].tolist()}"}  # fmt: skip
    return {"status": "ok"}


def _bad_reads_were_dead(
    spec: dict[str, Any], out: Any, inputs: list[Any], arrays: dict[str, np.ndarray],
    got: np.ndarray,
) -> bool:
    """Did the compiled code skip out-of-range gathers whose values cannot change the result
    (``X[G[i]] - X[G[i]]``, ``select(c, a, a)``: the simplifier drops such reads, and their
    checks with them)? Yes when it computed what the reference computes with the bad indices
    moved into range, whichever element they are moved to."""
    from mlc.errors import EvaluationError
    from mlc.testing import evaluate

    g = arrays["G"]
    size = spec["shape"][-1]
    bad = (g < 0) | (g >= size)
    if size == 0 or not bad.any():
        return False
    sizes = {"n": spec["shape"][0]} if spec["symbolic"] else None
    for fill in (0, size - 1):
        moved = dict(arrays, G=np.where(bad, fill, g).astype(g.dtype))
        try:
            with np.errstate(all="ignore"):
                ref = evaluate([out], {t: moved[t.name] for t in inputs}, sizes)["Out"]
        except EvaluationError:
            return False
        if not _same(spec, got, ref):
            return False
    return True


def _same(spec: dict[str, Any], got: np.ndarray, expected: np.ndarray) -> bool:
    if spec["dtype"] == "float32":
        same = np.allclose(got, expected, rtol=1e-4, atol=1e-5, equal_nan=True)
        return bool(same and np.array_equal(np.isnan(got), np.isnan(expected)))
    return bool(np.array_equal(got, expected))


def f_params(inputs: list[Any], out: Any) -> list[Any]:
    """The placeholders ``out`` reads, in the order of ``inputs``."""
    from mlc.te.prim_func import _topo_order

    used = {id(t) for t in _topo_order([out])}
    return [t for t in inputs if id(t) in used]


def te_create(inputs: list[Any], out: Any) -> Any:
    from mlc import te

    return te.create_prim_func([*f_params(inputs, out), out])
