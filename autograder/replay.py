"""Replay a student's schedule trace on the reference computation, check it, time it.

Run by the grader in its own process (``python -m autograder.replay GRADER CASE TRACE OUT``),
with resource limits and no network: the trace is data from the student, everything else is
trusted. The student's schedule is rebuilt from scratch (a fresh ``tir.Schedule`` of the
reference PrimFunc, then ``tir.Trace.apply_json_to_schedule``), checked against numpy and
timed *interleaved* with the reference schedule (ref, student, ref, student, ...), so that
machine noise hits both alike. The result is a JSON report.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

import numpy as np

from autograder.cases import TraceCase, compare


def _schedule_from_trace(func: Any, text: str) -> Any:
    from mlc import tir

    sch = tir.Schedule(func)
    probe = tir.Schedule(func).trace.as_json()
    payload = text if isinstance(probe, str) else json.loads(text)
    tir.Trace.apply_json_to_schedule(payload, sch)
    return sch


def _time_once(module: Any, args: list[np.ndarray], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        module(*args)
    return (time.perf_counter() - start) / number


def replay_and_time(case: TraceCase, trace_text: str, number: int = 3,
                    repeat: int = 5) -> dict[str, Any]:
    """Replay ``trace_text`` on ``case``'s reference computation; return a report dict."""
    import mlc
    from mlc import tir

    params = case.effective_params()
    arrays = case.make_inputs()
    expected = np.asarray(case.reference(*arrays.values(), **params))
    try:
        sch = _schedule_from_trace(case.make_func(**params), trace_text)
        student = mlc.build(sch.mod, target="llvm")
    except Exception as err:  # noqa: BLE001 - any failure is the schedule's
        return {"correct": False, "message": f"the schedule does not replay: "
                f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
    out = np.zeros_like(expected)
    student(*arrays.values(), out)
    ok, message = compare(expected, out, case.rtol, case.atol)
    if not ok:
        return {"correct": False, "message": f"wrong result: {message}"}
    ref_sch = tir.Schedule(case.make_func(**params))
    case.reference_schedule(ref_sch)
    reference = mlc.build(ref_sch.mod, target="llvm")
    ref_out = np.zeros_like(expected)
    args_s = [*arrays.values(), out]
    args_r = [*arrays.values(), ref_out]
    t_ref = [_time_once(reference, args_r, 1)]
    t_stu = [_time_once(student, args_s, 1)]
    if t_stu[0] * case.floor < t_ref[0] / 2:  # far below the floor: no need to time more
        repeat = 0
    for _ in range(repeat):
        t_ref.append(_time_once(reference, args_r, number))
        t_stu.append(_time_once(student, args_s, number))
    tr = statistics.median(t_ref[1:] or t_ref)
    ts = statistics.median(t_stu[1:] or t_stu)
    return {"correct": True, "message": "correct", "t_student": ts, "t_reference": tr,
            "ratio": tr / ts if ts > 0 else float("inf")}


def main(argv: list[str]) -> int:
    from autograder.cases import load_grader

    grader_path, case_id, trace_path, out_path = argv
    case = load_grader(grader_path).case(case_id)
    if not isinstance(case, TraceCase):
        print(f"{case_id} is not a TraceCase", file=sys.stderr)
        return 2
    with open(trace_path) as f:
        text = f.read()
    report = replay_and_time(case, text)
    with open(out_path, "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
