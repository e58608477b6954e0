"""a3_fusion and a4_tuning: their trusted checks."""

import json
from pathlib import Path

import numpy as np
import pytest

from autograder import harness
from autograder.cases import load_grader
from autograder.graphio import GraphFormatError, dump_graph, dump_groups, load_graph
from mlc import graph

REPO = Path(__file__).resolve().parents[2]

A3 = load_grader(REPO / "instructor" / "a3_fusion" / "grader.py")
A4 = load_grader(REPO / "instructor" / "a4_tuning" / "grader.py")


def _mlc_fold(g):
    return graph.fold_constant(g)


def _singletons(g):
    return [[n] for n in g.calls()]


@pytest.mark.parametrize("case_id", [c for c in A3.cases])
def test_graph_json_round_trip_keeps_values(case_id):
    g = A3.case(case_id).build()
    text, nodes = dump_graph(g)
    back, back_nodes = load_graph(text)
    assert [type(n) for n in nodes] == [type(n) for n in back_nodes]
    feed = {v.name: np.linspace(-1, 1, int(np.prod(v.shape))).reshape(v.shape).astype(v.dtype)
            for v in g.inputs}
    for a, b in zip(graph.evaluate(g, feed), graph.evaluate(back, feed)):
        np.testing.assert_array_equal(a, b)


def test_fold_check_accepts_a_correct_fold_and_refuses_an_unfolded_or_wrong_graph():
    case = A3.case("fold_batchnorm")
    g, _ = load_graph(case.params["graph"])
    assert case.check_local(dump_graph(_mlc_fold(g))[0])[0] == 1.0
    fraction, message = case.check_local(dump_graph(g)[0])  # the identity pass folds nothing
    assert fraction == 0.0 and "ops left" in message
    x = g.inputs[0]
    wrong = graph.Graph([x], [graph.nn.relu(graph.nn.conv2d(x, graph.const(
        np.zeros((4, 3, 3, 3), "float32")), padding=1))])
    fraction, message = case.check_local(dump_graph(wrong)[0])
    assert fraction == 0.0 and "differs" in message
    other = graph.var("y", x.shape)
    fraction, message = case.check_local(dump_graph(graph.Graph([other], [other * 1.0]))[0])
    assert fraction == 0.0 and "inputs changed" in message


def test_groups_check_compares_with_the_rule_and_needs_a_partition():
    case = A3.case("fuse_diamond")
    g, nodes = load_graph(case.params["graph"])
    ref = A3.module.reference_groups(g)
    assert case.check_local(dump_groups(ref, nodes))[0] == 1.0
    fraction, message = case.check_local(dump_groups(_singletons(g), nodes))
    assert fraction == 0.0 and "expected" in message
    fraction, message = case.check_local(dump_groups(ref[1:], nodes))
    assert fraction == 0.0 and "in no group" in message
    # TVM's post-dominator fusion makes the diamond one kernel: not the chain rule
    fused = graph.fuse_ops(g)
    assert case.check_local(dump_groups(fused, nodes))[0] == 0.0
    with pytest.raises(ValueError, match="not in the graph"):
        dump_groups([[graph.nn.relu(graph.var("z", (2,)))]], nodes)


@pytest.mark.parametrize("text, match", [
    ("not json", "not a graph"),
    (json.dumps({"nodes": [{"kind": "call", "op": "add", "args": [0, 1], "attrs": {}}],
                 "inputs": [], "outputs": [0]}), "earlier nodes"),
    (json.dumps({"nodes": [{"kind": "call", "op": "os.system", "args": [], "attrs": {}}],
                 "inputs": [], "outputs": [0]}), "no op named"),
    (json.dumps({"nodes": [{"kind": "const", "name": "", "shape": [4096, 4096, 4],
                            "dtype": "float32", "data": ""}], "inputs": [], "outputs": [0]}),
     "does not match"),
    (json.dumps({"nodes": [{"kind": "var", "name": "x", "shape": [1 << 40],
                            "dtype": "float32"}], "inputs": [0], "outputs": [0]}),
     "larger than"),
    (json.dumps({"nodes": [{"kind": "const", "name": "", "shape": [1], "dtype": "object",
                            "data": ""}], "inputs": [], "outputs": [0]}), "not numeric"),
])
def test_load_graph_refuses_bad_or_hostile_json(text, match):
    with pytest.raises(GraphFormatError, match=match):
        load_graph(text)


def test_harness_exports_graphs_and_groups_that_the_grader_reads(tmp_path, monkeypatch):
    from autograder.grade import _write_inputs

    ids = ["fold_mlp", "fuse_conv_injective"]
    _write_inputs(tmp_path, [A3.case(i) for i in ids])
    monkeypatch.setenv(harness.EXCHANGE_ENV, str(tmp_path))
    harness.check_graph("fold_mlp", _mlc_fold)
    harness.check_groups("fuse_conv_injective", A3.module.reference_groups)
    for i in ids:
        assert A3.case(i).check_export(tmp_path / "exports") == (
            1.0, A3.case(i).check_local(json.loads(
                (tmp_path / "exports" / f"{i}.json").read_text())["text"])[1])
    harness.check_groups("fuse_conv_injective", _singletons)
    assert A3.case("fuse_conv_injective").check_export(tmp_path / "exports")[0] == 0.0
    with pytest.raises(TypeError, match="must return a graph.Graph"):
        harness.check_graph("fold_mlp", lambda g: None)


def test_a4_needs_a_space_with_sampled_decisions(tmp_path):
    count = A4.module.count_samples
    assert count(json.dumps([["get_block", {"name": "C"}, ["b0"]]])) == 0
    assert count(json.dumps([["sample_perfect_tile", {}, ["v0", "v1"]],
                             ["sample_categorical", {}, ["v2"]],
                             ["split", {"loop": "$l0", "factors": ["$v0", "$v1"]}, []],
                             ["split", {"loop": "$l1", "factors": [None, "$v2"]}, []]])) == 2
    assert count("{broken") == 0
    exports = tmp_path / "exports"
    exports.mkdir()
    fixed = json.dumps([["get_block", {"name": "C"}, ["b0"]]])
    (exports / "tuned_correct.json").write_text(json.dumps({"text": fixed}))
    fraction, message = A4.case("tuned_correct").check_export(exports)
    assert fraction == 0.0 and "sampling decision" in message
    kw = {"grader_path": A4.path, "workdir": tmp_path,
          "run_trusted": lambda cmd, cwd: pytest.fail("no replay for a missing trace")}
    fraction, message = A4.case("tuned_speed").check_export(tmp_path / "missing", **kw)
    assert fraction == 0.0 and "no schedule trace" in message


# Full grading runs of a3 and a4 (reference full marks, blank zero, locally and on a Dask
# cluster): tests/autograder/test_dask_course.py, for every assignment.
