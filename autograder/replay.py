"""Replay a student's schedule trace on the reference computation, check it, time it.

Run by the grader in its own process (``python -m autograder.replay GRADER CASE TRACE OUT``),
with resource limits and no network: the trace is data from the student, everything else is
trusted. The student's schedule is rebuilt from scratch (a fresh ``tir.Schedule`` of the
reference PrimFunc, then ``tir.Trace.apply_json_to_schedule``), checked against numpy and
timed *interleaved* with the reference schedule over at least five rounds, with a settle
pause before each (:func:`time_interleaved`), so that machine noise hits both alike; the
ratio of the medians decides, and the per-round spread is reported. Nothing of the student's
code runs here: the trace is a list of schedule primitives, so whatever the notebook did to
its own timer, cache or modules is not in this process. The result is a JSON report.
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


def _calls_for(module: Any, args: list[np.ndarray], min_time: float) -> int:
    """How many calls make one timing last at least ``min_time`` (after a warm-up call)."""
    module(*args)
    once = _time_once(module, args, 1)
    return max(1, min(10_000, int(np.ceil(min_time / max(once, 1e-9)))))


def page_aligned(array: np.ndarray, page: int = 4096, offset: int = 0) -> np.ndarray:
    """A copy of ``array`` whose data starts on a page boundary.

    numpy places a small array wherever malloc puts it (16-byte aligned), and where a kernel's
    output starts decides whether its vector stores split cache lines: identical code measured
    0.84-0.89 against itself when only the output's alignment differed (issue 11, CI at be748c0).
    Timing both sides on page-aligned copies makes the ratio depend on the schedule alone.
    """
    array = np.asarray(array)
    raw = np.empty(array.nbytes + page + offset, dtype=np.uint8)
    start = (-raw.ctypes.data) % page + offset
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def time_interleaved(student: Any, args_s: list[np.ndarray], reference: Any,
                     args_r: list[np.ndarray], rounds: int = 7, min_time: float = 0.02,
                     settle: float = 0.02, give_up_below: float = 0.0) -> dict[str, Any]:
    """Time ``student`` against ``reference`` in interleaved rounds; medians and spread.

    Each side is warmed up and gets its own number of calls per timing (at least
    ``min_time`` seconds each). Every round sleeps ``settle`` seconds, then times both, the
    order alternating (ref, student; student, ref; ...) so drifts in clock speed or load hit
    both alike. The ratio is the median of the per-round ratios ``t_reference / t_student``
    (each round's pair shares the machine's state at that moment, so a burst of load from
    elsewhere cancels out); the spread is the lowest and highest per-round ratio; the times
    reported are the medians of each side. Both sides run on page-aligned copies of their
    arguments (:func:`page_aligned`), so where numpy happened to put an array cannot decide a
    grade. At least five rounds always run; after five, a student
    whose best round is below ``give_up_below`` (far under the scale's floor) stops early.
    """
    rounds = max(5, rounds)
    # argument k starts k * 320 bytes past a page (64-byte aligned, the same on both sides):
    # all at offset 0 would put A[i], B[i] and C[i] on the same 4 KiB offset (4K aliasing)
    args_s = [page_aligned(a, offset=320 * k) if isinstance(a, np.ndarray) else a
              for k, a in enumerate(args_s)]
    args_r = [page_aligned(a, offset=320 * k) if isinstance(a, np.ndarray) else a
              for k, a in enumerate(args_r)]
    number_s = _calls_for(student, args_s, min_time)
    number_r = _calls_for(reference, args_r, min_time)
    if max(number_s, number_r) <= 2 * min(number_s, number_r):
        # similar speeds: the same number of calls per timing, so the fixed cost of a
        # timing (thread pools waking after the settle pause) weighs alike on both sides;
        # calibrated separately, identical code measured ~0.87 under load
        number_s = number_r = max(number_s, number_r)
    t_stu: list[float] = []
    t_ref: list[float] = []
    for r in range(rounds):
        time.sleep(settle)
        if r % 2 == 0:
            t_ref.append(_time_once(reference, args_r, number_r))
            t_stu.append(_time_once(student, args_s, number_s))
        else:
            t_stu.append(_time_once(student, args_s, number_s))
            t_ref.append(_time_once(reference, args_r, number_r))
        per_round = [a / max(b, 1e-12) for a, b in zip(t_ref, t_stu)]
        if len(per_round) >= 5 and max(per_round) < give_up_below:
            break
    per_round = [a / max(b, 1e-12) for a, b in zip(t_ref, t_stu)]
    ts, tr = statistics.median(t_stu), statistics.median(t_ref)
    # a round timed (ref, student) and the next one timed (student, ref) make a pair whose
    # geometric mean cancels whatever going first or second costs; the ratio is the median
    # over pairs (a last unpaired round counts on its own)
    pairs = [(per_round[k] * per_round[k + 1]) ** 0.5 for k in range(0, len(per_round) - 1, 2)]
    if len(per_round) % 2:
        pairs.append(per_round[-1])
    return {"t_student": ts, "t_reference": tr, "ratio": statistics.median(pairs),
            "ratio_min": min(per_round), "ratio_max": max(per_round), "rounds": len(per_round),
            "calls": [number_s, number_r]}


def replay_and_time(case: TraceCase, trace_text: str, rounds: int = 7,
                    min_time: float = 0.02, settle: float = 0.02) -> dict[str, Any]:
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
    report: dict[str, Any] = {"correct": True, "message": "correct"}
    if not case.speed:
        return report
    ref_sch = tir.Schedule(case.make_func(**params))
    case.reference_schedule(ref_sch)
    reference = mlc.build(ref_sch.mod, target="llvm")
    ref_out = np.zeros_like(expected)
    report.update(time_interleaved(student, [*arrays.values(), out], reference,
                                   [*arrays.values(), ref_out], rounds=rounds,
                                   min_time=min_time, settle=settle,
                                   give_up_below=case.floor / 2))
    return report


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
