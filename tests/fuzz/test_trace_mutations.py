"""A trace from a file or a tuning log is data: any malformed trace must be refused with a
ScheduleError (TraceError) naming the instruction, never another exception type.

Valid traces of a few schedules are mutated at random (values swapped for other JSON values,
arguments dropped or added, kinds renamed, handles redirected, instructions dropped,
duplicated or reordered, deep nesting, huge numbers, NaN, truncated text) and replayed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc import te, tir
from mlc.errors import ScheduleError, TraceError


def _matmul_func() -> tir.PrimFunc:
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((16, 16), lambda i, j: te.max(C[i, j], 0.0), name="D")
    return te.create_prim_func([A, B, D])


def _traces() -> list[list[Any]]:
    out = []
    sch = tir.Schedule(_matmul_func(), seed=1)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    f = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    i0, i1 = sch.split(i, factors=f)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(i0, j0, k, i1, j1)
    sch.vectorize(j1)
    sch.parallel(i0)
    d = sch.get_block("D")
    sch.reverse_compute_at(d, j0)
    sch.decompose_reduction(c, k)
    out.append(sch.trace.as_json())

    sch = tir.Schedule(_matmul_func(), seed=2)
    c = sch.get_block("C")
    cc = sch.cache_read(c, 0, "local")
    i, j, k = sch.get_loops(c)
    ij = sch.fuse(i, j)
    sch.compute_at(cc, ij)
    sch.annotate(ij, "pragma_unroll", 4)
    v = sch.sample_categorical([1, 2, 4], [0.2, 0.3, 0.5])
    sch.split(k, factors=[None, v])
    out.append(sch.trace.as_json())
    return out


TRACES = _traces()
KINDS = sorted({inst[0] for t in TRACES for inst in t} | {"bogus", "_update", "copy", "mod"})

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["$b0", "$l1", "$l2", "$v3", "$b99", "$", "$x1", "b0", "C", "D", "A"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    trace = json.loads(json.dumps(draw(st.sampled_from(TRACES))))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from([
            "value", "drop_arg", "add_arg", "kind", "drop_inst", "dup_inst", "swap",
            "outputs", "entry", "nest",
        ]))  # fmt: skip
        if not trace:
            break
        k = draw(st.integers(0, len(trace) - 1))
        inst = trace[k]
        if not (isinstance(inst, list) and len(inst) == 3 and isinstance(inst[1], dict)):
            op = draw(st.sampled_from(["drop_inst", "swap", "entry"]))
        if op == "value" and isinstance(inst[1], dict) and inst[1]:
            name = draw(st.sampled_from(sorted(inst[1])))
            inst[1][name] = draw(json_values)
        elif op == "drop_arg" and isinstance(inst[1], dict) and inst[1]:
            del inst[1][draw(st.sampled_from(sorted(inst[1])))]
        elif op == "add_arg" and isinstance(inst[1], dict):
            inst[1][draw(st.sampled_from(["extra", "loop", "block", "factors", "decision"]))] = (
                draw(json_values)
            )
        elif op == "kind":
            inst[0] = draw(st.sampled_from(KINDS) | json_values)
        elif op == "drop_inst":
            del trace[k]
        elif op == "dup_inst":
            trace.insert(k, json.loads(json.dumps(inst)))
        elif op == "swap":
            k2 = draw(st.integers(0, len(trace) - 1))
            trace[k], trace[k2] = trace[k2], trace[k]
        elif op == "outputs":
            inst[2] = draw(json_values)
        elif op == "entry":
            trace[k] = draw(json_values)
        elif op == "nest":
            depth = draw(st.sampled_from([5, 50, 500]))
            v: Any = 1
            for _ in range(depth):
                v = [v]
            if isinstance(inst[1], dict) and inst[1]:
                inst[1][draw(st.sampled_from(sorted(inst[1])))] = v
            else:
                trace[k] = v
    as_text = draw(st.sampled_from(["object", "text", "truncated"]))
    if as_text == "object":
        return trace
    text = json.dumps(trace, allow_nan=True)
    if as_text == "truncated":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    return text


def _replay(data: Any) -> None:
    tir.Trace.apply_json_to_schedule(data, tir.Schedule(_matmul_func()))


def test_valid_traces_replay() -> None:
    for t in TRACES:
        _replay(t)
        _replay(json.dumps(t))


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=mutated())
def test_mutated_traces_replay_or_raise_a_trace_error(data: Any) -> None:
    try:
        _replay(data)
    except ScheduleError as err:
        assert "trace" in str(err).split(":")[0]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[[", r"trace: the trace text is not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, r"trace: the trace text is not valid JSON"),
        ('[["get_block", {"name": NaN}, ["b0"]]]', r"not valid JSON \(NaN is not a number"),
        ({"kind": "split"}, r"a trace is a list of instructions"),
        ([["get_block", {"name": "C"}]], r"instruction 0 \(\?\): an instruction is \[kind"),
        ([["launch_missiles", {}, []]], r"instruction 0 \(launch_missiles\): unknown instruction"),
        ([["copy", {}, []]], r"instruction 0 \(copy\): unknown instruction kind 'copy'"),
        ([["get_block", {}, ["b0"]]], r"instruction 0 \(get_block\): missing argument name"),
        ([["get_block", {"name": "C", "x": 1}, ["b0"]]], r"\(get_block\): unknown argument x"),
        ([["get_loops", {"block": "$b7"}, ["l0"]]], r"refers to b7 before it is defined"),
        ([["get_block", {"name": 3}, ["b0"]]], r"argument 'name' must be a string, got 3"),
        ([["get_block", {"name": "C"}, ["b0"]], ["split", {"loop": "$b0", "factors": [4, 4]},
          ["l1", "l2"]]], r"instruction 1 \(split\): argument 'loop': b0 is a BlockRV"),
        ([["get_block", {"name": "C"}, ["b0"]], ["get_loops", {"block": "$b0"},
          ["l1", "l2", "l3"]], ["split", {"loop": "$l1", "factors": [2**80, 1]},
          ["l4", "l5"]]], r"instruction 2 \(split\): argument 'factors' must be a list"),
        ([["get_block", {"name": "C"}, ["b0"]], ["get_loops", {"block": "$b0"},
          ["l1", "l2", "l3"]], ["split", {"loop": "$l1", "factors": [3, 3]},
          ["l4", "l5"]]], r"instruction 2 \(split\):"),
        ([["get_block", {"name": "C"}, ["b0"]], ["get_loops", {"block": "$b0"}, ["l1"]]],
         r"instruction 1 \(get_loops\): returned 3 handles, the trace expects 1"),
        ([["get_block", {"name": "Nope"}, ["b0"]]], r"instruction 0 \(get_block\): there is no"),
    ],
)
def test_malformed_traces_name_the_instruction(data: Any, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        _replay(data)
