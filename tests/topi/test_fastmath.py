"""fast_exp / fast_erf (mlc.topi.fastmath) against numpy, over their whole float32 range and
at the edges, compiled in a vectorized loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.topi.fastmath import fast_erf, fast_exp


def _run(fn, x: np.ndarray) -> tuple[np.ndarray, str]:  # type: ignore[no-untyped-def]
    a = te.placeholder(x.shape, name="a")
    b = te.compute(x.shape, lambda i: fn(a[i]), name="b")
    sch = tir.Schedule(te.create_prim_func([a, b]))
    (i,) = sch.get_loops(sch.get_block("b"))
    _, ii = sch.split(i, factors=[None, 16])
    sch.vectorize(ii)
    out = np.zeros_like(x)
    mlc.build(sch.mod, target="llvm")(x, out)
    return out, str(mlc.lower(sch.mod))


def test_fast_exp_matches_numpy() -> None:
    x = np.concatenate([np.linspace(-87, 88, 100000, dtype=np.float32),
                        np.float32([0, -0.0, 1, -1, 1e-8, -1e-8, 88, -87])])
    x = x[: len(x) // 16 * 16]
    got, text = _run(fast_exp, x)
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=2e-6)
    assert "exp(" not in text.replace("fast_exp", "")  # no libm call left


def test_fast_exp_clamps_instead_of_overflowing() -> None:
    x = np.float32([-1e30, -1000, -88.5, -87.0, 88.0, 89, 1000, 1e30] * 2)
    got, _ = _run(fast_exp, x)
    assert np.all(np.isfinite(got)) and np.all(got >= 0)
    np.testing.assert_allclose(got[x <= -87], np.exp(np.float64(-87)), rtol=2e-6)
    np.testing.assert_allclose(got[x >= 88], np.exp(np.float64(88)), rtol=2e-6)


def test_fast_erf_matches_math_erf() -> None:
    x = np.linspace(-7, 7, 70000, dtype=np.float32)
    x[:4] = [0.0, -0.0, 1e-30, -1e-30]
    got, text = _run(fast_erf, x)
    ref = np.array([math.erf(float(v)) for v in x])
    np.testing.assert_allclose(got, ref, atol=5e-7)
    assert "erf(" not in text.replace("fast_erf", "")


@pytest.mark.parametrize("v", [np.inf, -np.inf])
def test_fast_erf_at_infinity(v: float) -> None:
    got, _ = _run(fast_erf, np.full(16, v, np.float32))
    np.testing.assert_allclose(got, np.sign(v), atol=1e-7)


@pytest.mark.parametrize("shape,axis", [((4, 128, 128), -1), ((3, 48), -1), ((2, 40), -1),
                                        ((5, 16), -1), ((6, 64), 0)])
def test_softmax_stats_in_vector_lanes(shape: tuple[int, ...], axis: int) -> None:
    """Softmax's row max and exp-sum run 16 lanes at a time when the row is a multiple of 16
    (at least 32 long); other rows keep the scalar reductions. Both compute numpy's answer."""
    from mlc import topi
    from mlc.graph.op import get_op

    x = te.placeholder(shape, name="x")
    y = topi.nn.softmax(x, axis=axis)
    sch = topi.default_schedule([x, y])
    text = str(mlc.lower(sch.mod))
    lanes = shape[axis] % 16 == 0 and shape[axis] >= 32 and axis == -1
    assert ("softmax_expsum_part[ramp(" in text) == lanes
    xa = (np.random.default_rng(8).standard_normal(shape) * 10).astype("float32")
    xa.flat[0] = 80.0  # one large score
    out = np.zeros(shape, "float32")
    mlc.build(sch.mod, target="llvm")(xa, out)
    np.testing.assert_allclose(out, get_op("nn.softmax").ref(xa, axis=axis), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("shape,axis", [((1, 128, 256), -1), ((3, 48), -1), ((4, 40), -1),
                                        ((6, 64), 0)])
def test_layer_norm_stats_in_vector_lanes(shape: tuple[int, ...], axis: int) -> None:
    """layer_norm's sum and squared deviations run 16 lanes at a time on a last axis that is
    a multiple of 16 (at least 32); other shapes keep the scalar reductions."""
    from mlc import topi
    from mlc.graph.op import get_op

    x = te.placeholder(shape, name="x")
    n = shape[axis]
    g, b = te.placeholder((n,), name="g"), te.placeholder((n,), name="b")
    y = topi.nn.layer_norm(x, g, b, axis=axis)
    sch = topi.default_schedule([x, g, b, y])
    text = str(mlc.lower(sch.mod))
    assert ("ln_sqsum_part[ramp(" in text) == (n % 16 == 0 and n >= 32 and axis == -1)
    rng = np.random.default_rng(9)
    xa = (rng.standard_normal(shape) * 3 + 100).astype("float32")  # a large mean
    ga, ba = rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype("float32")
    out = np.zeros(shape, "float32")
    mlc.build(sch.mod, target="llvm")(xa, ga, ba, out)
    np.testing.assert_allclose(out, get_op("nn.layer_norm").ref(xa, ga, ba, axis=axis),
                               rtol=1e-4, atol=1e-4)
