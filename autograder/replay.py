"""Replay a student's schedule trace on the reference computation, check it, time it.

Run by the grader in its own process (``python -m autograder.replay GRADER CASE TRACE OUT``),
with resource limits and no network: the trace is data from the student, everything else is
trusted. The student's schedule is rebuilt from scratch (a fresh ``tir.Schedule`` of the
reference PrimFunc, then ``tir.Trace.apply_json_to_schedule``), checked against numpy and
timed *interleaved* with the reference schedule (:func:`time_interleaved`).

Speed is what the code costs, not how long the machine took: both sides run on one CPU, one
thread (:func:`one_cpu`), and each timing reads that thread's CPU clock, so a busy machine
(two CPU-bound processes beside the grader on two cores) takes time from neither side. The
ratio is the median over interleaved pairs of rounds, with a ~90% interval
(:func:`median_interval`); when the credit at the two ends of that interval differs by more
than the case allows, the timing is repeated, and if it still cannot decide, the report says
so (``decided: false``) and the grader marks the submission ``needs review`` instead of
giving a noisy number. Nothing of the student's code runs here: the trace is a list of
schedule primitives, so whatever the notebook did to its own timer, cache or modules is not
in this process. The result is a JSON report.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
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
    """CPU seconds per call of ``module``, counted on this thread only
    (``CLOCK_THREAD_CPUTIME_ID``): the time the code cost, not the time the machine took.
    A process beside that takes the CPU away does not count; with the replay on one CPU and
    parallel loops run by this thread (:func:`one_cpu`), nothing else runs the code."""
    start = time.thread_time()
    for _ in range(number):
        module(*args)
    return (time.thread_time() - start) / number


def _calls_for(module: Any, args: list[np.ndarray], min_time: float) -> int:
    """How many calls make one timing last at least ``min_time`` (after a warm-up call)."""
    module(*args)
    once = _time_once(module, args, 1)
    return max(1, min(10_000, int(np.ceil(min_time / max(once, 1e-9)))))


@contextlib.contextmanager
def one_cpu() -> Iterator[None]:
    """Replay and time on one CPU, with one thread: this thread is pinned to the last CPU it
    may use, and programs built inside run their ``parallel`` loops on it
    (``MLC_NUM_THREADS=1``), so the student's schedule and the reference, timed by
    :func:`_time_once`, share the same CPU and the same caches, and their thread CPU time is
    all the work they did. Affinity and the variable are restored afterwards."""
    before = os.environ.get("MLC_NUM_THREADS")
    try:
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {allowed[-1]})
    except (AttributeError, OSError):  # not Linux: the thread clock alone
        allowed = []
    os.environ["MLC_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MLC_NUM_THREADS", None)
        else:
            os.environ["MLC_NUM_THREADS"] = before
        if allowed:
            os.sched_setaffinity(0, set(allowed))


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


def median_interval(values: list[float]) -> tuple[float, float]:
    """A distribution-free interval that holds the true median with about 90% confidence:
    the k-th smallest and k-th largest of ``values``, k the largest with
    P(Binomial(n, 1/2) < k) <= 5%. Five values give their range; ten, the second smallest
    to the second largest; twenty, the sixth to the fifteenth."""
    xs = sorted(values)
    n = len(xs)
    k, below = 1, 0.0
    while k < (n + 1) // 2:
        below += math.comb(n, k - 1) / 2 ** n  # P(B = k - 1)
        if below + math.comb(n, k) / 2 ** n > 0.05:
            break
        k += 1
    return xs[k - 1], xs[n - k]


def summarize(t_ref: list[float], t_stu: list[float]) -> dict[str, Any]:
    """Medians, the ratio, its interval and the per-round spread of interleaved rounds.

    A round timed (ref, student) and the next one timed (student, ref) make a pair whose
    geometric mean cancels whatever going first or second costs; the ratio is the median over
    pairs (a last unpaired round counts on its own), and ``ratio_low``/``ratio_high`` are its
    ~90% interval (:func:`median_interval`): what the grade may be decided on.
    """
    per_round = [a / max(b, 1e-12) for a, b in zip(t_ref, t_stu)]
    pairs = [(per_round[k] * per_round[k + 1]) ** 0.5 for k in range(0, len(per_round) - 1, 2)]
    if len(per_round) % 2:
        pairs.append(per_round[-1])
    low, high = median_interval(pairs)
    return {"t_student": statistics.median(t_stu), "t_reference": statistics.median(t_ref),
            "ratio": statistics.median(pairs), "ratio_low": low, "ratio_high": high,
            "ratio_min": min(per_round), "ratio_max": max(per_round),
            "rounds": len(per_round), "clock": "thread CPU time"}


def time_interleaved(student: Any, args_s: list[np.ndarray], reference: Any,
                     args_r: list[np.ndarray], rounds: int = 10, min_time: float = 0.02,
                     settle: float = 0.02, give_up_below: float = 0.0) -> dict[str, Any]:
    """Time ``student`` against ``reference`` in interleaved rounds; medians and spread.

    Each side is warmed up and gets its own number of calls per timing (at least
    ``min_time`` CPU seconds each). Every round sleeps ``settle`` seconds, then times both,
    the order alternating (ref, student; student, ref; ...) so drifts in clock speed or load
    hit both alike. Each timing counts the CPU time of this thread (:func:`_time_once`), so
    a process beside that takes the CPU away costs neither side anything. Both sides run on
    page-aligned copies of their arguments (:func:`page_aligned`), so where numpy happened
    to put an array cannot decide a grade. At least five rounds always run; after five, a
    student whose best round is below ``give_up_below`` (far under the scale's floor) stops
    early. The raw times per round come back too (``t_reference_rounds``,
    ``t_student_rounds``), so that a second batch can join the first (:func:`summarize`).
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
        # timing weighs alike on both sides
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
    report = summarize(t_ref, t_stu)
    report.update(t_reference_rounds=t_ref, t_student_rounds=t_stu, calls=[number_s, number_r])
    return report


def time_until_decided(student: Any, args_s: list[np.ndarray], reference: Any,
                       args_r: list[np.ndarray], undecided: Callable[[dict[str, Any]], bool],
                       rounds: int, min_time: float, settle: float,
                       give_up_below: float = 0.0) -> dict[str, Any]:
    """:func:`time_interleaved`; when ``undecided(timing)`` says the first batch leaves the
    credit open, a second batch twice as long, both batches summarized together
    (:func:`summarize`, ``retimed: True``). The raw times of every round stay in the result
    (``t_reference_rounds``, ``t_student_rounds``)."""
    timing = time_interleaved(student, args_s, reference, args_r, rounds=rounds,
                              min_time=min_time, settle=settle, give_up_below=give_up_below)
    if not undecided(timing):
        return timing
    more = time_interleaved(student, args_s, reference, args_r, rounds=2 * rounds,
                            min_time=min_time, settle=settle)
    t_ref = timing["t_reference_rounds"] + more["t_reference_rounds"]
    t_stu = timing["t_student_rounds"] + more["t_student_rounds"]
    return {**summarize(t_ref, t_stu), "t_reference_rounds": t_ref, "t_student_rounds": t_stu,
            "retimed": True}


def decide(case: TraceCase, report: dict[str, Any]) -> dict[str, Any]:
    """The speed credit, and whether the measurement can decide it: the credit at both ends
    of the ratio's interval may differ by at most ``case.undecided_above`` of the points."""
    low, high = case.score(report["ratio_low"]), case.score(report["ratio_high"])
    return {"credit": case.score(report["ratio"]), "credit_low": low, "credit_high": high,
            "decided": high - low <= case.undecided_above}


def replay_and_time(case: TraceCase, trace_text: str, rounds: int = 10,
                    min_time: float = 0.02, settle: float = 0.02) -> dict[str, Any]:
    """Replay ``trace_text`` on ``case``'s reference computation; return a report dict.

    With ``case.speed``, the report has the timing (:func:`time_interleaved`) and the
    decision (:func:`decide`): when the ratio's interval spans more credit than the case
    allows, the timing is repeated once, twice as long, and both batches decide together;
    still undecided, ``decided`` is false and the grader marks the submission for review."""
    with one_cpu():
        return _replay_and_time(case, trace_text, rounds, min_time, settle)


def _replay_and_time(case: TraceCase, trace_text: str, rounds: int, min_time: float,
                     settle: float) -> dict[str, Any]:
    import mlc
    from mlc import tir

    params = case.effective_params()
    arrays = case.make_inputs()
    expected = np.asarray(case.reference(*arrays.values(), **params))
    try:
        sch = _schedule_from_trace(case.make_func(**params), trace_text)
        student = mlc.build(sch.mod, target="llvm", allow_calls=False)
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
    args_s, args_r = [*arrays.values(), out], [*arrays.values(), ref_out]
    timing = time_until_decided(student, args_s, reference, args_r,
                                lambda t: not decide(case, t)["decided"], rounds, min_time,
                                settle, give_up_below=case.floor / 2)
    report.update(timing)
    report.update(decide(case, timing))
    for name in ("t_reference_rounds", "t_student_rounds"):
        report.pop(name, None)
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
    from pathlib import Path

    from autograder.judge_trace import decide_report, judge_trace
    from autograder.judged import JudgeUnavailable, grader_error

    tests = Path(grader_path).resolve().parent
    try:  # replayed, built, run and timed on the student's side of the wall (issue 25)
        report = decide_report(case, judge_trace(case, text, Path(out_path).resolve().parent,
                                                 hide=[str(tests), str(tests.parent)]))
    except JudgeUnavailable as err:  # the judged step could not judge
        return grader_error(err)
    with open(out_path, "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
