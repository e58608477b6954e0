"""Graph exports (a3) are loaded and evaluated on the student's side of the wall (issue 25).

The trusted side keeps the reference graph, the inputs it feeds and the values it expects;
the judged step (its own uid, no capability, no tests folder) only loads the student's JSON
and evaluates it. The verdicts must be the ones the in-process check gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from autograder.cases import load_grader
from autograder.graphio import dump_graph, judge_graph, load_graph
from mlc import graph

REPO = Path(__file__).resolve().parents[2]
GRADER = REPO / "instructor" / "a3_fusion" / "grader.py"
A3 = load_grader(GRADER)


def _exports(tmp_path: Path, case_id: str, text: str) -> Path:
    exports = tmp_path / "exports"
    exports.mkdir(exist_ok=True)
    (exports / f"{case_id}.json").write_text(json.dumps({"text": text}))
    return exports


def test_judged_verdicts_equal_the_in_process_ones(tmp_path):
    case = A3.case("fold_batchnorm")
    g, _ = load_graph(case.params["graph"])
    x = g.inputs[0]
    wrong = graph.Graph([x], [graph.nn.relu(graph.nn.conv2d(x, graph.const(
        np.zeros((4, 3, 3, 3), "float32")), padding=1))])
    other = graph.var("y", x.shape)
    for out, words in [(graph.fold_constant(g), "equivalent graph"), (g, "ops left"),
                       (wrong, "differs"), (graph.Graph([other], [other * 1.0]),
                                            "inputs changed")]:
        text = dump_graph(out)[0]
        judged = judge_graph(case, text, tmp_path, hide=[str(GRADER.parent)])
        assert judged == case.check_local(text), words
        assert words in judged[1]
    fraction, message = judge_graph(case, '{"nodes": [{"kind": "call", "op": "nope", '
                                          '"args": [], "attrs": {}}], "inputs": [], '
                                          '"outputs": [0]}', tmp_path)
    assert fraction == 0.0 and "cannot be read back" in message


def test_the_grader_path_evaluates_the_graph_in_a_separate_process(tmp_path):
    from autograder.grade import GradingConfig, _run_trusted

    case = A3.case("fold_mlp")
    g, _ = load_graph(case.params["graph"])
    config = GradingConfig("a3_fusion")
    run = lambda cmd, cwd: _run_trusted(cmd, cwd, config)  # noqa: E731
    exports = _exports(tmp_path, "fold_mlp", dump_graph(graph.fold_constant(g))[0])
    assert case.check_export(exports, grader_path=GRADER, workdir=tmp_path,
                             run_trusted=run) == (1.0, "equivalent graph with the expected ops")
    exports = _exports(tmp_path, "fold_mlp", dump_graph(g)[0])
    fraction, message = case.check_export(exports, grader_path=GRADER, workdir=tmp_path,
                                          run_trusted=run)
    assert fraction == 0.0 and "ops left" in message


def test_values_the_judged_step_could_forge_are_read_only_as_stored_arrays(tmp_path,
                                                                         monkeypatch):
    """Were code to run in the judged step, its values file is still data: a compressed
    archive (a zip bomb for the trusted side's memory) or a wrong one scores nothing."""
    import io
    import zipfile

    from autograder import judged
    from autograder.judged import Judged

    case = A3.case("fold_mlp")
    g, _ = load_graph(case.params["graph"])
    text = dump_graph(graph.fold_constant(g))[0]
    report = {"ran": True, "message": "", "outputs": len(g.outputs),
              "inputs": [[v.name, list(v.shape), v.dtype] for v in g.inputs],
              "ops": [n.op.name for n in graph.fold_constant(g).calls()]}
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("t0_o0.npy", b"\0" * (64 << 20))
    monkeypatch.setattr(judged, "run_judged", lambda *a, **k: Judged(
        report, {"values.npz": bomb.getvalue()}, {}, ""))
    fraction, message = judge_graph(case, text, tmp_path)
    assert fraction == 0.0 and "compressed or larger" in message
