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


def _forged(monkeypatch, case, values: bytes, **changes):
    """judge_graph of ``case`` with the judged step replaced by one that leaves ``values``
    (and an honest report, but for ``changes``)."""
    from autograder import judged
    from autograder.judged import Judged

    g, _ = load_graph(case.params["graph"])
    report = {"ran": True, "message": "", "outputs": len(g.outputs),
              "inputs": [[v.name, list(v.shape), v.dtype] for v in g.inputs],
              "ops": [n.op.name for n in graph.fold_constant(g).calls()], **changes}
    monkeypatch.setattr(judged, "run_judged", lambda *a, **k: Judged(
        report, {"values.npz": values}, {}, ""))
    return judge_graph(case, dump_graph(graph.fold_constant(g))[0], Path("."))


def _stored(**members: bytes) -> bytes:
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        for name, data in members.items():
            z.writestr(f"{name}.npy", data)
    return archive.getvalue()


def _header(shape, descr="<f8") -> bytes:
    import io

    from numpy.lib import format as npy

    f = io.BytesIO()
    npy.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
    return f.getvalue()


def test_a_forged_value_header_is_refused_before_anything_is_allocated(monkeypatch):
    """A stored member whose header claims 8 TiB (MemoryError), 1 GiB of 64 bytes (the
    gigabyte allocated, then ValueError) or objects (pickles refused: ValueError) crashed the
    trusted side: a grader-error row the student's values forced. Each is now a failed check
    naming the output."""
    case = A3.case("fold_mlp")
    for data in (_header((1 << 40,)) + b"x" * 64, _header((1 << 27,)) + b"x" * 64,
                 _header((4,), "|O") + b"x" * 64):
        fraction, message = _forged(monkeypatch, case, _stored(t0_o0=data))
        assert fraction == 0.0 and "output 0 of the returned graph" in message, message


def test_a_forged_ops_list_is_refused_with_a_reason(monkeypatch):
    case = A3.case("fold_mlp")
    g, _ = load_graph(case.params["graph"])
    import io
    import zlib

    rng = np.random.default_rng(case.seed + zlib.crc32(case.id.encode()))  # judge_graph's
    feeds = [{v.name: rng.uniform(-1, 1, v.shape).astype(v.dtype) for v in g.inputs}
             for _ in range(case.trials)]
    buffer = io.BytesIO()
    np.savez(buffer, **{f"t{k}_o{j}": np.asarray(v) for k, feed in enumerate(feeds)
                        for j, v in enumerate(graph.evaluate(g, feed))})
    assert _forged(monkeypatch, case, buffer.getvalue())[0] == 1.0  # honest values pass
    fraction, message = _forged(monkeypatch, case, buffer.getvalue(), ops=7)
    assert fraction == 0.0 and "ops" in message, message
