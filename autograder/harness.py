"""What a notebook's hidden test cells call: ``from autograder import harness as grading``.

These functions run *inside the student's kernel*, so they decide nothing. Each one takes a
case id (defined in the assignment's trusted ``grader.py``) and the student's function or
schedule, runs it on the case's inputs and **exports** the result:

* ``grading.check_call("softmax_hidden", softmax)``: calls ``softmax(*inputs, **params)`` on
  numpy arrays and exports the returned array;
* ``grading.check_te("softmax_hidden", softmax)``: makes one ``te.placeholder`` per input,
  calls ``softmax(*placeholders, **params)`` to get the output tensor, builds it with
  ``mlc.build`` (or runs it with the reference evaluator when no backend is there), runs it on
  the inputs and exports the output;
* ``grading.check_trace("gemm_speed", sch)``: exports ``sch.trace.as_json()``; the grader
  replays it on a fresh copy of the reference computation in a separate process;
* ``grading.check_graph("fold_mlp", fold_constants)``: rebuilds the case's hidden graph, calls
  the student's pass ``fold_constants(g) -> Graph`` and exports the graph (as JSON);
* ``grading.check_groups("fuse_mlp", fuse)``: rebuilds the hidden graph, calls
  ``fuse(g) -> list of lists of call nodes`` (or a graph with ``groups``) and exports the
  groups as node numbers.

Two modes:

* grading (the environment variable ``AUTOGRADER_EXCHANGE`` names a directory): inputs are
  read from ``$AUTOGRADER_EXCHANGE/inputs`` (written there by the grader), results are written
  to ``$AUTOGRADER_EXCHANGE/exports``. A separate trusted process compares them with the
  reference, so patching numpy, ``time`` or mlc in the notebook gains nothing;
* local (an instructor running the solution notebook): the case comes from ``grader.py`` next
  to the notebook (or ``$AUTOGRADER_GRADER``) and is checked at once; a failure raises
  ``AssertionError``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

EXCHANGE_ENV = "AUTOGRADER_EXCHANGE"
GRADER_ENV = "AUTOGRADER_GRADER"


def _exchange() -> Path | None:
    value = os.environ.get(EXCHANGE_ENV)
    return Path(value) if value else None


def _local_case(case_id: str) -> Any:
    from autograder.cases import load_grader

    path = Path(os.environ.get(GRADER_ENV, "grader.py"))
    if not path.is_file():
        raise FileNotFoundError(
            f"grading.check_*({case_id!r}): no grader.py next to this notebook and "
            f"${GRADER_ENV} is not set; hidden tests run only in the instructor's folder "
            "or under `python -m autograder grade`"
        )
    return load_grader(path).case(case_id)


def inputs(case_id: str) -> tuple[list[np.ndarray], dict[str, Any], list[str]]:
    """The case's input arrays (in order), its keyword parameters and the input names."""
    exchange = _exchange()
    if exchange is None:
        case = _local_case(case_id)
        arrays = case.make_inputs()
        return list(arrays.values()), dict(case.params), list(arrays)
    meta = json.loads((exchange / "inputs" / f"{case_id}.json").read_text())
    names: list[str] = meta["names"]
    with np.load(exchange / "inputs" / f"{case_id}.npz", allow_pickle=False) as data:
        arrays = [np.array(data[name]) for name in names]
    return arrays, dict(meta["params"]), names


def export(case_id: str, value: Any) -> None:
    """Hand ``value`` (an array, or a string for traces) to the grader for case ``case_id``."""
    exchange = _exchange()
    if exchange is None:
        case = _local_case(case_id)
        fraction, message = case.check_local(value)
        if fraction < 1.0:
            raise AssertionError(f"{case_id}: {message}")
        print(f"{case_id}: {message}")
        return
    out = exchange / "exports"
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(value, str):
        (out / f"{case_id}.json").write_text(json.dumps({"text": value}))
    else:
        np.save(out / f"{case_id}.npy", np.asarray(value), allow_pickle=False)


def check_call(case_id: str, fn: Callable[..., Any]) -> None:
    """Call ``fn(*inputs, **params)`` on numpy arrays and export what it returns."""
    arrays, params, _ = inputs(case_id)
    export(case_id, np.asarray(fn(*arrays, **params)))


def _int_shape(shape: Any) -> tuple[int, ...]:
    from mlc.tir.arith import evaluate_int

    dims = []
    for dim in shape:
        dims.append(dim if isinstance(dim, int) else int(evaluate_int(dim, {})))
    return tuple(dims)


def te_program(fn: Callable[..., Any], arrays: list[np.ndarray], names: list[str],
               params: dict[str, Any]) -> Any:
    """The loop program (PrimFunc) of the te computation ``fn`` returns for placeholders
    shaped like ``arrays``: inputs first, the output last."""
    from mlc import te

    placeholders = [
        te.placeholder(a.shape, name=name, dtype=str(a.dtype)) for a, name in zip(arrays, names)
    ]
    out = fn(*placeholders, **params)
    out_tensor = out[0] if isinstance(out, (list, tuple)) else out
    if not isinstance(out_tensor, te.Tensor):
        raise TypeError(f"the function must return a te tensor (te.compute...), got "
                        f"{type(out_tensor).__name__}")
    return te.create_prim_func([*placeholders, out_tensor])


def run_te(fn: Callable[..., Any], arrays: list[np.ndarray], names: list[str],
           params: dict[str, Any]) -> np.ndarray:
    """Build the te computation ``fn`` returns for placeholders shaped like ``arrays`` and run
    it; return the output array."""
    import mlc

    func = te_program(fn, arrays, names, params)
    out = func.params[-1]
    result = np.zeros(_int_shape(out.shape), dtype=out.dtype)
    mlc.build(func, target="llvm")(*arrays, result)
    return result


def check_te(case_id: str, fn: Callable[..., Any]) -> None:
    """Build ``fn(*placeholders, **params)`` for the case's shapes. Grading: export the loop
    program (TVMScript), which the grader runs itself on fresh inputs; locally: run it on the
    case's inputs and check the values at once."""
    arrays, params, names = inputs(case_id)
    if _exchange() is None:
        export(case_id, run_te(fn, arrays, names, params))
        return
    func = te_program(fn, arrays, names, params)
    out = _exchange() / "exports"  # type: ignore[operator]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{case_id}.json").write_text(json.dumps({"program": func.script()}))


def check_trace(case_id: str, sch: Any) -> None:
    """Export the schedule's trace (``sch.trace.as_json()``) for replay by the grader."""
    trace = sch.trace.as_json()
    export(case_id, trace if isinstance(trace, str) else json.dumps(trace))


def _case_graph(case_id: str) -> tuple[Any, list[Any]]:
    from autograder.graphio import load_graph

    _, params, _ = inputs(case_id)
    return load_graph(params["graph"])


def check_graph(case_id: str, fn: Callable[[Any], Any]) -> None:
    """Call the graph pass ``fn(g)`` on the case's graph and export the graph it returns."""
    from autograder.graphio import dump_graph
    from mlc.graph import Graph

    g, _ = _case_graph(case_id)
    out = fn(g)
    if not isinstance(out, Graph):
        raise TypeError(f"{case_id}: the pass must return a graph.Graph, got {type(out).__name__}")
    export(case_id, dump_graph(out)[0])


def check_groups(case_id: str, fn: Callable[[Any], Any]) -> None:
    """Call the fusion rule ``fn(g)`` on the case's graph; export its groups (node numbers)."""
    from autograder.graphio import dump_groups

    g, nodes = _case_graph(case_id)
    export(case_id, dump_groups(fn(g), nodes))
