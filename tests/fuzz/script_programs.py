"""Random TVMScript programs of plain loops run at once (``T.parallel``, ``T.vectorized``,
``T.thread_binding``), with indices read from data, as plain data, and how to check one.

A program is a JSON-able dict: the loop ``kind`` (``parallel``, ``vectorized``, ``threads``
or ``serial``), an ``inner`` loop or none, the store's target index and value, and whether
it updates (``B[w] = B[w] + value``). Indices are chosen among the forms that race
(``0``, ``i // 2``, ``I[i]``, a neighbour ``B[i + 1]``) and the ones that do not (``i``,
``n - 1 - i``, ``i * 2 + 1``), so both verdicts are drawn.

The oracle is the same program with every loop ``T.serial``, built for llvm. A program the
parser refuses (``ScriptError``: a race it cannot rule out) is ``refused``; one that runs
must give the serial program's answer, on every call (``mismatch`` otherwise: a silent
wrong result).
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
from hypothesis import strategies as st

N = 64  # elements of A, I and B; an inner loop runs 8 times

TARGETS = ["i", "n1 - i", "i * 2", "i // 2", "0", "I[i]", "(i * 5) % n", "i % 8"]
VALUES = ["A[i]", "A[I[i]]", "A[(i + 3) % n]", "B[i]", "B[(i + 1) % n]", "A[I[I[i]]]", "1",
          "T.Cast('{dt}', i)"]


@st.composite
def programs(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["parallel", "parallel", "vectorized", "threads", "serial"]))
    inner = draw(st.sampled_from([None, "serial", "vectorized"])) if kind == "parallel" else None
    return {
        "kind": kind,
        "inner": inner,
        "dtype": draw(st.sampled_from(["float32", "int32"])),
        "target": draw(st.sampled_from(TARGETS)),
        "value": draw(st.sampled_from(VALUES)),
        "other": draw(st.sampled_from(VALUES)),
        "update": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
        "duplicates": draw(st.booleans()),
    }


def source(spec: dict[str, Any], serial: bool = False) -> str:
    """The script of ``spec`` (every loop serial when ``serial``)."""
    dt = spec["dtype"]
    n = N // 2 if spec["target"] in ("i * 2",) else N
    target = spec["target"].replace("n1", str(n - 1)).replace("n", str(n))
    value = spec["value"].replace("n", str(N)).replace("{dt}", dt)
    other = spec["other"].replace("n", str(N)).replace("{dt}", dt)
    if dt == "float32":
        value, other = ("1.0" if value == "1" else value), ("1.0" if other == "1" else other)
    expr = f"{value} * 2 + {other}" if value != other else f"{value} + 1"
    if spec["update"]:
        expr = f"B[{target}] + {expr}"
    store = f"B[{target}] = {expr}"
    params = (f'A: T.Buffer(({N},), "{dt}"), I: T.Buffer(({N},), "int32"), '
              f'B: T.Buffer(({N},), "{dt}")')

    def loop(var: str, extent: int, kind: str | None, thread: str | None = None) -> str:
        if serial or kind in (None, "serial"):
            return f"for {var} in T.serial({extent}):"
        if kind == "threads":
            return f'for {var} in T.thread_binding({extent}, thread="{thread}"):'
        return f"for {var} in T.{kind}({extent}):"

    if spec["kind"] == "threads":
        body = (f"{loop('bx', n // 8, 'threads', 'blockIdx.x')}\n"
                f"    {loop('tx', 8, 'threads', 'threadIdx.x')}\n"
                f"        i = bx * 8 + tx\n"
                f"        {store}\n")
    elif spec["inner"] is not None:
        body = (f"{loop('io', n // 8, spec['kind'])}\n"
                f"    {loop('ii', 8, spec['inner'])}\n"
                f"        i = io * 8 + ii\n"
                f"        {store}\n")
    else:
        extent = 8 if spec["kind"] == "vectorized" else n
        body = f"{loop('i', extent, spec['kind'])}\n    {store}\n"
    return "@T.prim_func\ndef f(" + params + "):\n" + textwrap.indent(body, "    ")


def _arrays(spec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    dt = spec["dtype"]
    a = (rng.integers(-50, 50, N)).astype(dt)
    index = rng.permutation(N) if not spec["duplicates"] else rng.integers(0, N, N)
    b = (rng.integers(-50, 50, N)).astype(dt)
    return a, index.astype("int32"), b


def check(spec: dict[str, Any]) -> dict[str, Any]:
    """``ok``, ``refused`` (ScriptError), ``checked`` (a run-time check fired, in both
    programs alike), ``mismatch`` (a silent wrong result) or ``error``."""
    import mlc
    from mlc.errors import MLCError, RuntimeCheckError, ScriptError
    from mlc.script import from_source

    try:
        func = from_source(source(spec))
    except ScriptError as err:
        return {"status": "refused", "detail": f"{err}".splitlines()[0][:300]}
    reference = from_source(source(spec, serial=True))
    target = "cuda-sim" if spec["kind"] == "threads" else "llvm"
    a, index, b0 = _arrays(spec)
    try:
        want = b0.copy()
        mlc.build(reference, target="llvm")(a, index, want)
    except RuntimeCheckError as err:
        expected_error: str | None = type(err).__name__
    else:
        expected_error = None
    try:
        f = mlc.build(func, target=target)
        results = []
        for _ in range(3):
            got = b0.copy()
            f(a, index, got)
            results.append(got)
    except RuntimeCheckError as err:
        if expected_error is not None:
            return {"status": "checked", "detail": f"{type(err).__name__}"}
        return {"status": "checked", "detail": f"{type(err).__name__}: {err}"[:300]}
    except MLCError as err:
        return {"status": "refused", "detail": f"{type(err).__name__}: {err}"[:300]}
    except Exception as err:  # noqa: BLE001 - every failure is counted by type
        return {"status": "error", "detail": f"{type(err).__name__}: {err}"[:300]}
    if expected_error is not None:
        return {"status": "mismatch", "detail": f"ran although serially {expected_error}"}
    for got in results:
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[:3].ravel().tolist()
            return {"status": "mismatch",
                    "detail": f"at {bad}: got {got[bad].tolist()} serial {want[bad].tolist()}"}
    return {"status": "ok"}


@st.composite
def lowered_schedules(draw: st.DrawFn) -> dict[str, Any]:
    """A te program (matmul + relu, or a 2-D stencil-free elementwise chain) with a random
    tiling, parallel outer loop, vectorized inner loop and compute_at: its *lowered*
    program, printed and read back, must be accepted by the parse-time check and compute
    what numpy computes."""
    return {
        "op": draw(st.sampled_from(["matmul_relu", "add_mul"])),
        "n": draw(st.sampled_from([16, 24, 32])),
        "ty": draw(st.sampled_from([2, 4, 8])),
        "tx": draw(st.sampled_from([4, 8])),
        "at": draw(st.booleans()),
        "fuse": draw(st.booleans()),
        "symbolic": draw(st.booleans()),
        "seed": draw(st.integers(0, 1000)),
    }


def check_lowered(spec: dict[str, Any]) -> dict[str, Any]:
    import mlc
    from mlc import te
    from mlc.errors import ScriptError
    from mlc.script import from_source

    n = spec["n"]
    size = te.var("n") if spec.get("symbolic") else n
    A = te.placeholder((size, size), name="A")
    B = te.placeholder((size, size), name="B")
    if spec["op"] == "matmul_relu":
        k = te.reduce_axis((0, size), name="k")
        C = te.compute((size, size), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    else:
        C = te.compute((size, size), lambda i, j: A[i, j] + B[j, i], name="C")
    D = te.compute((size, size), lambda i, j: te.max(C[i, j], 0.0) * 2.0, name="D")
    s = te.create_schedule(D.op)
    io, jo, ii, ji = s[D].tile(*D.op.axis, spec["ty"], spec["tx"])
    if spec["at"]:
        s[C].compute_at(s[D], jo)
    else:
        s[C].compute_inline() if spec["op"] == "add_mul" else None
    # not drawn: a fused loop over a symbolic size (f // ((n + 3) // 4)): the parse-time
    # check cannot separate such indices yet and refuses the printed program
    fuse = spec["fuse"] and not spec["at"] and not spec.get("symbolic")
    outer = s[D].fuse(io, jo) if fuse else io
    s[D].parallel(outer)
    s[D].vectorize(ji)
    text = str(mlc.lower(s, [A, B, D]))
    try:
        func = from_source(text)
    except ScriptError as err:
        return {"status": "false refusal", "detail": f"{err}".splitlines()[0][:300]}
    rng = np.random.default_rng(spec["seed"])
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    d = np.zeros((n, n), "float32")
    mlc.build(func, target="llvm")(a, b, d)
    c = a @ b if spec["op"] == "matmul_relu" else a + b.T
    if not np.allclose(d, np.maximum(c, 0) * 2, rtol=1e-4):
        return {"status": "mismatch", "detail": "lowered program read back computes otherwise"}
    return {"status": "ok"}
