"""Graphs across the sandbox wall: JSON (de)serialization of ``mlc.graph`` graphs, and the
trusted checks of graph passes (:class:`GraphCase`).

A graph travels as JSON text: one entry per node in topological order (inputs first), call
arguments as indices of earlier entries, constants as base64 of their raw bytes (never
pickles)::

    {"nodes": [{"kind": "var", "name": "x", "shape": [2, 3], "dtype": "float32"},
               {"kind": "const", "name": "w", "shape": [3], "dtype": "float32", "data": "..."},
               {"kind": "call", "op": "add", "args": [0, 1], "attrs": {}}],
     "inputs": [0], "outputs": [2]}

Loading re-makes every call with :func:`mlc.graph.call`, so types are inferred again and an op
the registry does not know is an error, not code. Loading refuses graphs whose tensors are
larger than ``MAX_TENSOR_BYTES`` or with more than ``MAX_NODES`` nodes, so a hostile export
cannot exhaust the grader's memory.

``GraphCase`` (in an assignment's ``grader.py``) names a trusted graph builder and what to
check: ``kind="graph"`` (the student's pass returns a graph: it must compute the same outputs
and keep exactly the expected ops) or ``kind="groups"`` (the pass returns fusion groups: they
must match the reference partition).
"""

from __future__ import annotations

import base64
import json
import sys
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from autograder.cases import parse_json

MAX_TENSOR_BYTES = 16 << 20
MAX_NODES = 5000


class GraphFormatError(ValueError):
    """The JSON text does not describe a valid graph."""


def _attr_json(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_attr_json(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise GraphFormatError(f"attribute value {value!r} cannot be written as JSON")


def dump_graph(g: Any) -> tuple[str, list[Any]]:
    """``g`` as JSON text, and its nodes in the order the text numbers them."""
    from mlc.graph import Call, Constant, Var

    nodes = g.topo()
    index = {n: k for k, n in enumerate(nodes)}
    entries: list[dict[str, Any]] = []
    for n in nodes:
        if isinstance(n, Var):
            entries.append({"kind": "var", "name": n.name, "shape": list(n.shape),
                            "dtype": n.dtype})
        elif isinstance(n, Constant):
            data = base64.b64encode(np.ascontiguousarray(n.value).tobytes()).decode("ascii")
            entries.append({"kind": "const", "name": n.name, "shape": list(n.shape),
                            "dtype": n.dtype, "data": data})
        elif isinstance(n, Call):
            entries.append({"kind": "call", "op": n.op.name,
                            "args": [index[a] for a in n.args],
                            "attrs": {k: _attr_json(v) for k, v in n.attrs.items()}})
        else:
            raise GraphFormatError(f"unknown node type {type(n).__name__}")
    text = json.dumps({"nodes": entries, "inputs": [index[v] for v in g.inputs],
                       "outputs": [index[o] for o in g.outputs]})
    return text, nodes


def _shape(entry: dict[str, Any]) -> tuple[int, ...]:
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and 0 <= s for s in shape):
        raise GraphFormatError(f"bad shape {shape!r}")
    return tuple(shape)


def _attr_value(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_attr_value(v) for v in value)
    return value


def load_graph(text: str) -> tuple[Any, list[Any]]:
    """The graph that ``text`` (from :func:`dump_graph`) describes, and its nodes by number."""
    from mlc import graph

    try:
        data = parse_json(text)
        entries = data["nodes"]
        inputs, outputs = data["inputs"], data["outputs"]
    except (ValueError, KeyError, TypeError) as err:
        raise GraphFormatError(f"not a graph: {err}") from None
    if not isinstance(entries, list) or len(entries) > MAX_NODES:
        raise GraphFormatError(f"a graph needs a list of at most {MAX_NODES} nodes")
    nodes: list[Any] = []
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise GraphFormatError(f"node {k} is not an object")
        kind = entry.get("kind")
        node: Any
        try:
            if kind == "var":
                shape = _shape(entry)
                node = graph.var(str(entry["name"]), shape, str(entry["dtype"]))
            elif kind == "const":
                shape, dtype = _shape(entry), np.dtype(str(entry["dtype"]))
                if dtype.kind not in "fiub":
                    raise GraphFormatError(f"constant dtype {dtype} is not numeric")
                raw = base64.b64decode(str(entry["data"]), validate=True)
                if len(raw) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
                    raise GraphFormatError(f"constant {k}: data does not match its shape")
                node = graph.const(np.frombuffer(raw, dtype=dtype).reshape(shape),
                                   name=str(entry.get("name", "")))
            elif kind == "call":
                args = entry["args"]
                if not isinstance(args, list) or not all(
                        isinstance(a, int) and 0 <= a < k for a in args):
                    raise GraphFormatError(f"node {k}: arguments must be earlier nodes")
                attrs = {str(a): _attr_value(v) for a, v in dict(entry["attrs"]).items()}
                node = graph.call(str(entry["op"]), *[nodes[a] for a in args], **attrs)
            else:
                raise GraphFormatError(f"node {k}: unknown kind {kind!r}")
        except GraphFormatError:
            raise
        except Exception as err:  # noqa: BLE001 - bad data of any kind is a format error
            raise GraphFormatError(f"node {k}: {type(err).__name__}: {err}") from None
        if node.type.nbytes > MAX_TENSOR_BYTES:
            raise GraphFormatError(f"node {k} is larger than {MAX_TENSOR_BYTES} bytes")
        nodes.append(node)
    try:
        g = graph.Graph([nodes[i] for i in inputs], [nodes[i] for i in outputs])
    except Exception as err:  # noqa: BLE001
        raise GraphFormatError(f"inputs/outputs: {type(err).__name__}: {err}") from None
    return g, nodes


def dump_groups(groups: Any, nodes: list[Any]) -> str:
    """Fusion groups (lists of call nodes of the graph whose nodes are ``nodes``) as JSON
    text of node numbers; a node from another graph is an error for the student."""
    index = {id(n): k for k, n in enumerate(nodes)}
    if hasattr(groups, "groups") and groups.groups is not None:  # a fused Graph
        groups = [grp.nodes for grp in groups.groups]
    out: list[list[int]] = []
    for grp in groups:
        members = list(getattr(grp, "nodes", grp))
        numbers = []
        for n in members:
            if id(n) not in index:
                raise ValueError(f"the group {[getattr(m, 'op', m) for m in members]} holds a "
                                 f"node that is not in the graph that was passed in: {n!r}")
            numbers.append(index[id(n)])
        out.append(numbers)
    return json.dumps({"groups": out})


def partition_message(groups: list[list[int]], nodes: list[Any]) -> str | None:
    """Why ``groups`` is not a partition of the graph's calls (None when it is)."""
    from mlc.graph import Call

    calls = {k for k, n in enumerate(nodes) if isinstance(n, Call)}
    seen: Counter[int] = Counter(k for grp in groups for k in grp)
    twice = [k for k, c in seen.items() if c > 1]
    if twice:
        return f"{len(twice)} op(s) are in more than one group"
    missing = calls - set(seen)
    if missing:
        return f"{len(missing)} op(s) are in no group"
    if set(seen) - calls:
        return "a group holds a node that is not an op (an input or a constant)"
    if any(not grp for grp in groups):
        return "a group is empty"
    return None


def describe_groups(groups: list[list[int]], nodes: list[Any]) -> str:
    names = [" -> ".join(nodes[k].op.name for k in sorted(grp)) for grp in groups]
    return "; ".join(f"[{n}]" for n in sorted(names))


@dataclass
class GraphCase:
    """A graph-pass check. ``build()`` makes the hidden graph (trusted code); the student's
    pass receives it (through JSON) and exports a graph or fusion groups.

    * ``kind="graph"``: the student's graph must take the same inputs, compute the same
      outputs (``graph.evaluate`` on ``trials`` random inputs, ``rtol``/``atol``) and keep
      exactly the ops ``expected_ops(g)`` names (a multiset of op names), e.g. the ops that
      depend on an input after constant folding.
    * ``kind="groups"``: the groups must partition the graph's ops exactly as
      ``reference_groups(g)`` (lists of call nodes of ``g``) does.
    """

    id: str
    build: Callable[[], Any]
    kind: str = "graph"
    expected_ops: Callable[[Any], list[str]] | None = None
    reference_groups: Callable[[Any], list[list[Any]]] | None = None
    trials: int = 2
    rtol: float = 1e-4
    atol: float = 1e-5
    seed: int = 0
    show_message: ClassVar[bool] = False  # hidden: students see pass/fail only
    kernel_inputs: ClassVar[bool] = True  # the grader sends the graph (params) to the kernel

    def __post_init__(self) -> None:
        if self.kind not in ("graph", "groups"):
            raise ValueError(f"GraphCase {self.id!r}: kind must be 'graph' or 'groups'")

    # what the kernel receives: no arrays, the graph's JSON as a parameter
    @property
    def params(self) -> dict[str, Any]:
        if not hasattr(self, "_text"):
            self._text = dump_graph(self.build())[0]
        return {"graph": self._text}

    def make_inputs(self) -> dict[str, np.ndarray]:
        return {}

    def _check(self, text: Any) -> tuple[float, str]:
        g, nodes = load_graph(self.params["graph"])
        if not isinstance(text, str):
            return 0.0, f"expected exported JSON text, got {type(text).__name__}"
        if self.kind == "groups":
            return self._check_groups(g, nodes, text)
        # the judged step's two halves in this process (a local check)
        feeds, expected = _feeds_and_answers(self, g)
        report, arrays = evaluate_export(text, feeds)
        return _graph_verdict(self, g, expected, report,
                              lambda name: arrays.get(name, "is missing"))

    def _check_groups(self, g: Any, nodes: list[Any], text: str) -> tuple[float, str]:
        try:
            groups = parse_json(text)["groups"]
            groups = [[int(k) for k in grp] for grp in groups]
        except (ValueError, KeyError, TypeError, OverflowError) as err:  # Infinity: Overflow
            return 0.0, f"the exported groups cannot be read: {err}"
        problem = partition_message(groups, nodes)
        if problem:
            return 0.0, f"not a partition of the graph's ops: {problem}"
        assert self.reference_groups is not None
        index = {id(n): k for k, n in enumerate(nodes)}
        ref = [[index[id(n)] for n in grp] for grp in self.reference_groups(g)]
        if {frozenset(x) for x in ref} != {frozenset(x) for x in groups}:
            return 0.0, (f"groups {describe_groups(groups, nodes)}; expected "
                         f"{describe_groups(ref, nodes)}")
        return 1.0, f"the expected {len(ref)} group(s)"

    def check_local(self, value: Any) -> tuple[float, str]:
        return self._check(value)

    def check_export(self, exports: Path, *, grader_path: Path | None = None,
                     run_trusted: Callable[[list[str], Path], tuple[int, str]] | None = None,
                     workdir: Path | None = None, **_: Any) -> tuple[float, str]:
        """Check the kernel's export. The grader passes ``run_trusted``: the graph is then
        loaded and evaluated in a process of its own, under the job's memory and time limits
        (a few KiB of JSON can ask for thousands of 16 MiB tensors); without it (a local
        check) it is checked here."""
        path = exports / f"{self.id}.json"
        if not path.is_file():
            return 0.0, "no result was produced (the cell failed or never ran)"
        if grader_path is None or run_trusted is None or workdir is None:
            return self.check_file(path)
        out_file = workdir / f"{self.id}.graph-report.json"
        cmd = [sys.executable, "-m", "autograder.graphio", str(grader_path), self.id,
               str(path), str(out_file)]
        from autograder.cases import run_step

        # a step that could not judge (crashed, killed, no walls): a grader-error row
        report = run_step(run_trusted, cmd, workdir, out_file, f"checking {self.id}'s graph")
        return float(report["fraction"]), str(report["message"])

    def check_file(self, path: Path) -> tuple[float, str]:
        """Check the export at ``path`` in this process."""
        if path.stat().st_size > 64 * MAX_TENSOR_BYTES:
            return 0.0, "the exported result is too large"
        try:
            text = parse_json(path.read_bytes())["text"]
        except (ValueError, KeyError, TypeError, OSError) as err:
            return 0.0, f"the exported result cannot be read: {err}"
        try:
            return self._check(text)
        except GraphFormatError as err:
            return 0.0, f"the exported result is not valid: {err}"


def evaluate_export(text: str, feeds: list[dict[str, np.ndarray]]) -> tuple[dict[str, Any],
                                                                             dict[str, Any]]:
    """The judged half of a ``kind="graph"`` check: load the student's graph and run it on
    ``feeds``. (report, arrays): the report names its inputs, outputs and ops (or says why it
    cannot be read or run); the arrays are output ``j`` of feed ``k`` as ``"t{k}_o{j}"``. It
    never sees the reference graph's values."""
    from mlc import graph

    try:
        got, _ = load_graph(text)
    except GraphFormatError as err:
        return {"ran": False, "message": f"the returned graph cannot be read back: {err}"}, {}
    report: dict[str, Any] = {
        "ran": True, "message": "",
        "inputs": [[v.name, list(v.shape), v.dtype] for v in got.inputs],
        "outputs": len(got.outputs), "ops": [n.op.name for n in got.calls()]}
    arrays: dict[str, Any] = {}
    names = {v.name for v in got.inputs}
    for k, feed in enumerate(feeds):
        if set(feed) != names:
            break  # the trusted side refuses the inputs by name
        try:
            values = graph.evaluate(got, feed)
        except Exception as err:  # noqa: BLE001 - the student's graph failed to run
            return {"ran": False, "message": f"the returned graph does not run: "
                                             f"{type(err).__name__}: {err}"}, {}
        arrays.update({f"t{k}_o{j}": np.asarray(v) for j, v in enumerate(values)})
    return report, arrays


def judge_graph(case: GraphCase, text: str, workdir: Path,
                hide: list[str] | None = None) -> tuple[float, str]:
    """Check a graph export with the student's graph loaded and evaluated on the judged side
    of the wall (:func:`autograder.judged.run_judged`); the reference graph, its values and
    the expected ops stay here. Fusion groups are numbers: checked here, nothing to run."""
    import io

    from autograder.judged import JudgeUnavailable, pack_arrays, read_npy, run_judged

    if case.kind == "groups":
        return case._check(text)
    g, _ = load_graph(case.params["graph"])
    feeds, expected = _feeds_and_answers(case, g)
    packed = pack_arrays({f"t{k}_{name}": a for k, feed in enumerate(feeds)
                          for name, a in feed.items()})
    spec = {"inputs": [v.name for v in g.inputs], "trials": case.trials}
    # what honest values take, with room for the npz's headers: more is refused unread
    cap = 2 * sum(e.nbytes for row in expected for e in row) + (1 << 20)
    judged = run_judged("autograder.graphio", workdir,
                        {"graph.json": text.encode(), "feeds.npz": packed,
                         "spec.json": json.dumps(spec).encode()},
                        outputs=("values.npz",), hide=hide, cap=cap)
    if judged.problem:
        raise JudgeUnavailable(judged.problem)
    if judged.failure:
        return 0.0, f"the graph could not be checked: {judged.failure}"
    shapes = {f"t{k}_o{j}": e.shape for k, row in enumerate(expected) for j, e in enumerate(row)}
    try:
        with zipfile.ZipFile(io.BytesIO(judged.files["values.npz"])) as archive:
            # stored as np.savez writes it, and each member's header read before its data
            # (a header claiming 8 TiB): :func:`autograder.judged.read_npy`
            if any(i.compress_type != zipfile.ZIP_STORED or i.file_size > cap
                   for i in archive.infolist()):
                raise ValueError("compressed or larger than the outputs can be")
            members = set(archive.namelist())
            values = {name: archive.read(f"{name}.npy") for name in shapes
                      if f"{name}.npy" in members}
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as err:
        return 0.0, f"the graph's values cannot be read: {err}"
    return _graph_verdict(case, g, expected, judged.result or {},
                          lambda name: read_npy(values.get(name), shapes[name]))


def _feeds_and_answers(case: GraphCase, g: Any) -> tuple[list[dict[str, np.ndarray]],
                                                          list[list[np.ndarray]]]:
    """The inputs a ``kind="graph"`` check feeds (``case.trials`` draws from its seed) and
    the reference graph ``g``'s outputs on each (trusted side)."""
    from mlc import graph

    rng = np.random.default_rng(case.seed + zlib.crc32(case.id.encode()))
    feeds = [{v.name: rng.uniform(-1, 1, v.shape).astype(v.dtype) for v in g.inputs}
             for _ in range(case.trials)]
    return feeds, [[np.asarray(e) for e in graph.evaluate(g, feed)] for feed in feeds]


def _graph_verdict(case: GraphCase, g: Any, expected: list[list[np.ndarray]],
                   report: dict[str, Any], value: Callable[[str], Any]) -> tuple[float, str]:
    """The verdict on a student's graph from what :func:`evaluate_export` reported of it
    (checked here: it may come from a judged step) and ``value(name)``: its output ``j`` on
    feed ``k`` (``name`` is ``"t{k}_o{j}"``) as an array, or why there is none."""
    from autograder.cases import compare

    if not report.get("ran"):
        return 0.0, str(report.get("message", "the graph was not checked"))[:2000]
    want = [[v.name, list(v.shape), v.dtype] for v in g.inputs]
    if report.get("inputs") != want:
        have = report.get("inputs")
        if isinstance(have, list) and all(isinstance(v, list) and len(v) == 3 for v in have):
            have = [(n, tuple(s) if isinstance(s, list) else s, d) for n, s, d in have]
        return 0.0, (f"the graph's inputs changed: expected "
                     f"{[(v.name, v.shape, v.dtype) for v in g.inputs]}, got {have}")
    if report.get("outputs") != len(g.outputs):
        return 0.0, f"expected {len(g.outputs)} outputs, got {report.get('outputs')}"
    for k, row in enumerate(expected):
        for j, e in enumerate(row):
            got = value(f"t{k}_o{j}")
            if isinstance(got, str):
                return 0.0, f"output {j} of the returned graph {got}"
            ok, message = compare(e, got, case.rtol, case.atol)
            if not ok:
                return 0.0, f"output {j} differs from the original graph's: {message}"
    ops = report.get("ops", [])
    if not (isinstance(ops, list) and all(isinstance(op, str) for op in ops)):
        return 0.0, f"the graph's ops were reported as {str(ops)[:100]}, not a list of names"
    if case.expected_ops is not None:
        want_ops = Counter(case.expected_ops(g))
        have_ops = Counter(ops)
        if want_ops != have_ops:
            return 0.0, (f"same values, but the ops left are {sorted(have_ops.elements())}; "
                         f"expected {sorted(want_ops.elements())}")
    return 1.0, "equivalent graph with the expected ops"


def judge_main(in_dir: Path, out_dir: Path) -> int:
    """The judged step: evaluate ``graph.json`` on the feeds, write ``values.npz`` and
    ``result.json``."""
    spec = json.loads((in_dir / "spec.json").read_text())
    with np.load(in_dir / "feeds.npz", allow_pickle=False) as data:
        feeds = [{name: np.array(data[f"t{k}_{name}"]) for name in spec["inputs"]}
                 for k in range(spec["trials"])]
    text = (in_dir / "graph.json").read_bytes().decode("utf-8", "replace")
    report, arrays = evaluate_export(text, feeds)
    np.savez(out_dir / "values.npz", **arrays)
    (out_dir / "result.json").write_text(json.dumps(report))
    return 0


def main(argv: list[str]) -> int:
    """``python -m autograder.graphio GRADER CASE EXPORT OUT``: check one graph export (what
    the grader runs, with limits) and write ``{"fraction", "message"}``; the student's graph
    is evaluated in a judged step (:func:`judge_graph`). ``--judge IN OUT`` is that step."""
    if argv and argv[0] == "--judge":
        return judge_main(Path(argv[1]), Path(argv[2]))
    from autograder import graphio  # this file runs as __main__: grader.py's GraphCase is there
    from autograder.cases import load_grader
    from autograder.judged import JudgeUnavailable, grader_error

    grader_path, case_id, export_path, out_path = argv
    case = load_grader(grader_path).case(case_id)
    if not isinstance(case, graphio.GraphCase):
        raise SystemExit(f"{case_id} is not a GraphCase")
    path = Path(export_path)
    if path.stat().st_size > 64 * MAX_TENSOR_BYTES:
        fraction, message = 0.0, "the exported result is too large"
    else:
        try:
            text = parse_json(path.read_bytes())["text"]
            if not isinstance(text, str):
                raise TypeError(f"expected exported JSON text, got {type(text).__name__}")
        except (ValueError, KeyError, TypeError, OSError) as err:
            fraction, message = 0.0, f"the exported result cannot be read: {err}"
        else:
            tests = Path(grader_path).resolve().parent
            try:
                fraction, message = graphio.judge_graph(
                    case, text, Path(out_path).resolve().parent,
                    hide=[str(tests), str(tests.parent)])
            except GraphFormatError as err:
                fraction, message = 0.0, f"the exported result is not valid: {err}"
            except JudgeUnavailable as err:
                return grader_error(err)
    Path(out_path).write_text(json.dumps({"fraction": fraction, "message": message}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
