"""Property tests: the simplifier never changes an integer expression's value, and bounds
contain every value an expression takes."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.tir import Analyzer, FloorDiv, FloorMod, Max, Min, Range, Select, Var, const
from mlc.tir.arith import evaluate_int

VARS = [Var("a"), Var("b"), Var("c")]
EXTENTS = [7, 32, 100]
LOWS = [0, -5, 3]


def exprs():
    leaf = st.one_of(
        st.sampled_from(VARS),
        st.integers(-40, 40).map(const),
    )

    def extend(children):
        pos = st.integers(1, 64).map(const)
        return st.one_of(
            st.tuples(children, children).map(lambda t: t[0] + t[1]),
            st.tuples(children, children).map(lambda t: t[0] - t[1]),
            st.tuples(children, st.integers(-8, 8)).map(lambda t: t[0] * t[1]),
            st.tuples(children, children).map(lambda t: t[0] * t[1]),
            st.tuples(children, pos).map(lambda t: FloorDiv(t[0], t[1])),
            st.tuples(children, pos).map(lambda t: FloorMod(t[0], t[1])),
            st.tuples(children, children).map(lambda t: Min(t[0], t[1])),
            st.tuples(children, children).map(lambda t: Max(t[0], t[1])),
            st.tuples(children, children, children).map(
                lambda t: Select(t[0] < t[1], t[1], t[2])
            ),
        )

    return st.recursive(leaf, extend, max_leaves=8)


def analyzer():
    ana = Analyzer()
    for v, lo, ext in zip(VARS, LOWS, EXTENTS):
        ana.bind(v, Range(const(lo), const(ext)))
    return ana


assignments = st.tuples(*[st.integers(lo, lo + ext - 1) for lo, ext in zip(LOWS, EXTENTS)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exprs(), st.lists(assignments, min_size=1, max_size=8))
def test_simplify_preserves_value(e, points):
    ana = analyzer()
    simple = ana.simplify(e)
    lo, hi = ana.const_int_bound(e)
    for p in points:
        env = dict(zip(VARS, p))
        want = evaluate_int(e, env)
        assert evaluate_int(simple, env) == want, (e, simple, env)
        assert lo <= want <= hi, (e, (lo, hi), env)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exprs(), exprs(), st.lists(assignments, min_size=1, max_size=8))
def test_proved_comparisons_hold(e1, e2, points):
    ana = analyzer()
    for cond in (e1 < e2, e1 <= e2, e1 == e2):
        if ana.can_prove(cond):
            for p in points:
                assert evaluate_int(cond, dict(zip(VARS, p)))


@settings(max_examples=60, deadline=None)
@given(exprs())
def test_simplify_is_idempotent(e):
    from mlc.tir.printer import expr_to_str

    ana = analyzer()
    once = ana.simplify(e)
    assert expr_to_str(ana.simplify(once)) == expr_to_str(once)
