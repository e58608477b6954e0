"""Property: any schedule the primitives accept computes what numpy computes.

Hypothesis draws random sequences of primitives (splits with factors that may not divide,
fuse, reorder, parallel, vectorize, unroll, compute_at, compute_inline, cache_write,
decompose_reduction, rfactor...) on small computations. A primitive may refuse with a
ScheduleError (the step is skipped); any other exception, and any accepted schedule whose
result differs from numpy, is a bug. Each scheduled program runs in the reference
interpreter and natively (compiled with LLVM); its trace must replay
to the same program.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.testing import eval_prim_func
from mlc.tir.schedule import state
from mlc.tir.stmt import For, ForKind


@dataclass
class Case:
    """A computation: its PrimFunc, inputs, and the numpy reference of its output."""

    func: tir.PrimFunc
    inputs: list[np.ndarray]
    out_shape: tuple[int, ...]
    expected: np.ndarray


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _vadd() -> Case:
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    rng = np.random.default_rng(1)
    a, b = _rand(rng, 11), _rand(rng, 11)
    return Case(te.create_prim_func([A, B, C]), [a, b], (11,), a + b)


def _matmul() -> Case:
    A = te.placeholder((6, 7), name="A")
    B = te.placeholder((7, 5), name="B")
    k = te.reduce_axis((0, 7), name="k")
    C = te.compute((6, 5), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    rng = np.random.default_rng(2)
    a, b = _rand(rng, 6, 7), _rand(rng, 7, 5)
    return Case(te.create_prim_func([A, B, C]), [a, b], (6, 5), a @ b)


def _matmul_t() -> Case:
    A = te.placeholder((6, 4), name="A")
    B = te.placeholder((5, 6), name="B")
    k = te.reduce_axis((0, 6), name="k")
    C = te.compute((4, 5), lambda i, j: te.sum(A[k, i] * B[j, k], axis=k), name="C")
    rng = np.random.default_rng(3)
    a, b = _rand(rng, 6, 4), _rand(rng, 5, 6)
    return Case(te.create_prim_func([A, B, C]), [a, b], (4, 5), a.T @ b.T)


def _conv2d() -> Case:
    C_in, H, F, KS = 2, 5, 3, 3
    X = te.placeholder((C_in, H, H), name="X")
    W = te.placeholder((F, C_in, KS, KS), name="W")
    P = te.compute(
        (C_in, H + 2, H + 2),
        lambda c, y, x: te.if_then_else(
            te.all(y >= 1, y < H + 1, x >= 1, x < H + 1), X[c, y - 1, x - 1], 0.0
        ),
        name="P",
    )
    rc = te.reduce_axis((0, C_in), name="rc")
    ry = te.reduce_axis((0, KS), name="ry")
    rx = te.reduce_axis((0, KS), name="rx")
    Y = te.compute(
        (F, H, H),
        lambda f, y, x: te.sum(P[rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="Y",
    )
    rng = np.random.default_rng(4)
    x, w = _rand(rng, C_in, H, H), _rand(rng, F, C_in, KS, KS)
    p = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    ref = np.zeros((F, H, H), np.float32)
    for dy in range(KS):
        for dx in range(KS):
            ref += np.einsum("fc,cyx->fyx", w[:, :, dy, dx], p[:, dy : dy + H, dx : dx + H])
    return Case(te.create_prim_func([X, W, Y]), [x, w], (F, H, H), ref)


def _softmax() -> Case:
    X = te.placeholder((3, 6), name="X")
    k1 = te.reduce_axis((0, 6), name="k1")
    M = te.compute((3,), lambda i: te.max(X[i, k1], axis=k1), name="M")
    E = te.compute((3, 6), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, 6), name="k2")
    S = te.compute((3,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    Y = te.compute((3, 6), lambda i, j: E[i, j] / S[i], name="Y")
    x = _rand(np.random.default_rng(5), 3, 6)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return Case(te.create_prim_func([X, Y]), [x], (3, 6), e / e.sum(axis=1, keepdims=True))


def _maxpool() -> Case:
    X = te.placeholder((2, 6, 6), name="X")
    ry = te.reduce_axis((0, 2), name="ry")
    rx = te.reduce_axis((0, 2), name="rx")
    Y = te.compute(
        (2, 3, 3),
        lambda c, y, x: te.max(X[c, y * 2 + ry, x * 2 + rx], axis=[ry, rx]),
        name="Y",
    )
    x = _rand(np.random.default_rng(6), 2, 6, 6)
    return Case(
        te.create_prim_func([X, Y]), [x], (2, 3, 3), x.reshape(2, 3, 2, 3, 2).max(axis=(2, 4))
    )


def _chain() -> Case:
    A = te.placeholder((4, 6), name="A")
    B = te.compute((4, 6), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 6), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((4, 6), lambda i, j: te.if_then_else(C[i, j] > 0.0, C[i, j], 0.0), name="D")
    a = _rand(np.random.default_rng(7), 4, 6)
    return Case(te.create_prim_func([A, D]), [a], (4, 6), np.maximum(a * 2 + 1, 0))


CASES: dict[str, Callable[[], Case]] = {
    "vadd_symbolic": _vadd,
    "matmul": _matmul,
    "matmul_transposed": _matmul_t,
    "conv2d_pad": _conv2d,
    "softmax": _softmax,
    "maxpool": _maxpool,
    "elementwise_chain": _chain,
}

# ---------------------------------------------------------------------------------------------
# random steps


def _blocks(sch: tir.Schedule) -> list[str]:
    return [loc.stmt.block.name for loc in state.all_blocks(sch.mod)]  # type: ignore[attr-defined]


def _for(sch: tir.Schedule, loop: tir.LoopRV) -> For:
    return sch._get_loop(loop).stmt  # type: ignore[return-value]


def _step(sch: tir.Schedule, data: st.DataObject, kind: str) -> None:  # noqa: C901
    """Apply one random primitive of ``kind``; ScheduleError propagates to the caller."""
    draw = data.draw
    block = sch.get_block(draw(st.sampled_from(_blocks(sch)), label="block"))
    loops = sch.get_loops(block)
    if kind == "split":
        if not loops:
            return
        loop = draw(st.sampled_from(loops), label="loop")
        f = draw(st.integers(1, 5), label="factor")
        shape = draw(st.sampled_from(["inner", "outer", "three"]), label="split")
        factors = {"inner": [None, f], "outer": [f, None], "three": [None, f, 2]}[shape]
        sch.split(loop, factors=factors)
    elif kind == "fuse":
        if len(loops) < 2:
            return
        k = draw(st.integers(0, len(loops) - 2), label="fuse_at")
        n = draw(st.integers(2, min(3, len(loops) - k)), label="fuse_n")
        sch.fuse(*loops[k : k + n])
    elif kind == "reorder":
        if len(loops) < 2:
            return
        chosen = draw(st.permutations(loops), label="order")[: draw(st.integers(2, len(loops)))]
        sch.reorder(*chosen)
    elif kind == "parallel":
        if loops:
            sch.parallel(draw(st.sampled_from(loops), label="loop"))
    elif kind == "vectorize":
        if loops:  # any loop: one with loops inside is vectorized or left serial by lowering
            sch.vectorize(draw(st.sampled_from(loops), label="loop"))
    elif kind == "unroll":
        if loops and isinstance(_for(sch, loops[-1]).extent, tir.IntImm):
            sch.unroll(loops[-1])
    elif kind == "compute_at":
        others = [b for b in _blocks(sch) if b != sch._block_name(block)]
        if others:
            target = sch.get_loops(sch.get_block(draw(st.sampled_from(others), label="target")))
            if target:
                sch.compute_at(block, draw(st.sampled_from(target), label="at"))
    elif kind == "reverse_compute_at":
        others = [b for b in _blocks(sch) if b != sch._block_name(block)]
        if others:
            target = sch.get_loops(sch.get_block(draw(st.sampled_from(others), label="target")))
            if target:
                sch.reverse_compute_at(block, draw(st.sampled_from(target), label="at"))
    elif kind == "compute_inline":
        sch.compute_inline(block)
    elif kind == "cache_write":
        sch.cache_write(block, 0, draw(st.sampled_from(["global", "local"]), label="scope"))
    elif kind == "cache_read":
        sch.cache_read(block, 0, draw(st.sampled_from(["global", "local"]), label="scope"))
    elif kind == "decompose_reduction":
        if loops:
            sch.decompose_reduction(block, draw(st.sampled_from(loops), label="loop"))
    elif kind == "rfactor":
        if loops:
            sch.rfactor(draw(st.sampled_from(loops), label="loop"), 0)


LOOP_STEPS = ["split", "split", "fuse", "reorder", "parallel", "vectorize", "unroll"]
OTHER_STEPS = [
    "compute_at", "reverse_compute_at", "compute_inline", "cache_write", "cache_read",
    "decompose_reduction", "rfactor",
]  # fmt: skip


STEPS = LOOP_STEPS + OTHER_STEPS


def _run(func: tir.PrimFunc, case: Case) -> np.ndarray:
    out = np.full(case.out_shape, np.nan, np.float32)
    eval_prim_func(func, *[a.copy() for a in case.inputs], out)
    return out


def _run_built(func: tir.PrimFunc, case: Case) -> np.ndarray:
    mod = mlc.build(func, target="llvm")
    out = np.full(case.out_shape, np.nan, np.float32)
    mod(*[a.copy() for a in case.inputs], out)
    return out


def _kinds_ok(func: tir.PrimFunc) -> None:
    """Vectorized loops have constant extents; no parallel loop is inside another."""
    for loc in state.walk(func.body):
        f = loc.stmt
        if isinstance(f, For) and f.kind == ForKind.PARALLEL:
            assert not any(isinstance(p, For) and p.kind == ForKind.PARALLEL for p in loc.path)
        if isinstance(f, For) and f.kind == ForKind.VECTORIZED:
            assert isinstance(f.extent, tir.IntImm)


# Examples per computation: 7 x 45 = 315 random schedules in CI.
EXAMPLES = 45


@pytest.mark.parametrize("name", list(CASES))
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_schedule_computes_the_same(name: str, data: st.DataObject) -> None:
    case = CASES[name]()
    sch = tir.Schedule(case.func, seed=0)
    n_steps = data.draw(st.integers(1, 6), label="steps")
    for _ in range(n_steps):
        kind = data.draw(st.sampled_from(STEPS), label="primitive")
        before = len(sch.trace)
        try:
            _step(sch, data, kind)
        except ScheduleError:
            # refused: the program must be unchanged apart from recorded lookups
            assert all(i.kind.startswith("get_") for i in sch.trace.insts[before:])
    _kinds_ok(sch.mod)
    np.testing.assert_allclose(_run(sch.mod, case), case.expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_run_built(sch.mod, case), case.expected, rtol=1e-4, atol=1e-5)
    replay = tir.Schedule(case.func)
    tir.Trace.apply_json_to_schedule(json.dumps(sch.trace.as_json()), replay)
    assert str(replay.mod) == str(sch.mod)


# Public Schedule members that are not primitives the fuzzers draw, each with the reason.
NOT_FUZZED = {
    # lookups and views: they change nothing
    "get": "a lookup", "get_block": "a lookup", "get_loops": "a lookup",
    "get_child_blocks": "a lookup", "get_consumers": "a lookup", "get_producers": "a lookup",
    "mod": "a view", "func": "a view", "show": "a view", "copy": "a copy, no transformation",
    # primitives that these CPU programs cannot exercise meaningfully
    "bind": "GPU only: fuzzed in tests/gpu_schedules/test_random_gpu_schedules.py",
    "blockize": "needs a tensor intrinsic's shape to matter: tests/tir/schedule/test_blockize*.py",
    "tensorize": "needs a declared tensor intrinsic: tests/tir/schedule/test_tensorize.py",
    "annotate": "free-form annotations that no lowering pass reads",
    "unannotate": "free-form annotations that no lowering pass reads",
    "sample_perfect_tile": "a decision, not a transformation: test_sampling.py",
    "sample_categorical": "a decision, not a transformation: test_sampling.py",
}  # fmt: skip


def _block_fuzzer_steps() -> list[str]:
    """STEPS of the block fuzzer beside this file (loaded by path: tests are not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("test_random_block_schedules.py")
    spec = importlib.util.spec_from_file_location("_random_block_schedules", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.STEPS)


def test_fuzzers_cover_every_public_primitive() -> None:
    public = {n for n in dir(tir.Schedule) if not n.startswith("_")}
    fuzzed = set(STEPS) | set(_block_fuzzer_steps())
    missing = public - fuzzed - set(NOT_FUZZED)
    assert not missing, f"add these Schedule primitives to a random-schedule test: {missing}"
    stale = (fuzzed | set(NOT_FUZZED)) - public
    assert not stale, f"no longer Schedule members: {stale}"
