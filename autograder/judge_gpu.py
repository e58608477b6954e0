"""Replay, build and run a student's accelerator schedule (a5's cuda-sim GEMM, a6's VDLA
GEMM) on the student's side of the wall.

Grading such a schedule means replaying the student's trace (a list of primitives with the
student's values), building what it made and running it: in cuda-sim (its kernels are CPU
loops that LLVM compiles) or on the VDLA simulator, and asking the performance model or the
simulator how fast it is. All of that is derived from the submission, so none of it runs in
the grader's process that loaded ``grader.py``. The halves:

* trusted (:func:`judge_schedule`, called by the assignment's ``grader.py``): the reference
  computation is printed as TVMScript, the inputs are drawn; those and the student's trace
  are handed to
* the judged step (``python -m autograder.judge_gpu --judge in out``, started by
  :func:`autograder.judged.run_judged`: own uid, no capability, ``no_new_privs``, seccomp,
  no tests folder, no reference solutions), which parses the computation, applies the trace
  (:func:`run_schedule`), builds it (cuda-sim with ``allow_calls=False``; VDLA emits only its
  own instructions, which its simulator interprets, and refuses any other call), runs it and
  writes the raw output, plus the model's predicted time (cuda-sim, at a larger size) or the
  simulated cycles (VDLA).

The expected answer and the reference's time or cycles stay with the trusted side, which
checks what it reads back (the output's shape and dtype, numbers that are finite, positive
and of the right type, messages capped) and decides the credit. A step that could not start
with every wall raises :class:`JudgeUnavailable` (the grader's ``GRADER-ERROR``, never a
grade); a step that crashed or ran out of time or memory is a failed check with the reason.

The same :func:`run_schedule` runs in process for a student's own check in the notebook
(``check_local``): nothing is hidden from a student's own kernel.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from autograder.judged import JudgeUnavailable, pack_arrays, read_npy, unpack_arrays

MAX_MESSAGE = 2000
MAX_TIME_S = 1e6          # a predicted kernel time past this is not a number the model makes
MAX_CYCLES = 1 << 62
TARGETS = ("cuda-sim", "vdla")


@dataclass
class ScheduleRun:
    """What a replayed schedule did, as the trusted side may use it. ``ran`` is False with
    the reason in ``message`` when the trace did not replay, build, run (or, for a check,
    when the checker found a problem); ``out`` is the output array, ``time`` the predicted
    seconds (cuda-sim with ``predict``), ``cycles`` the simulated cycles (VDLA),
    ``predict_error`` why the prediction failed (the schedule at the larger size)."""

    ran: bool
    message: str
    out: np.ndarray | None = None
    time: float | None = None
    cycles: int | None = None
    predict_error: str = ""
    probe: dict[str, Any] | None = None  # what the judged process found out (tests only)


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"[:MAX_MESSAGE]


def _fresh_output(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if np.issubdtype(np.dtype(dtype), np.floating):
        return np.full(shape, np.nan, dtype)  # what the kernel leaves unwritten shows
    return np.zeros(shape, dtype)


def run_schedule(target: str, func: Any, trace_text: str, arrays: list[np.ndarray],
                 out_shape: tuple[int, ...], out_dtype: str, *, check: bool = False,
                 predict_func: Any = None, gpu: str = "h100") -> ScheduleRun:
    """Replay ``trace_text`` on ``func``, build it for ``target`` and run it on ``arrays``
    (the output last). ``check`` runs cuda-sim's checker instead (races, uninitialised
    shared reads, indices, barriers) and reports what it says; ``predict_func`` (cuda-sim)
    replays the trace on that larger computation too and asks the performance model for its
    time on ``gpu``. Whatever the student's schedule does wrong is in the result, never
    raised: this is what the judged step runs."""
    import mlc
    from autograder.replay import _schedule_from_trace

    if target not in TARGETS:
        raise ValueError(f"judge_gpu grades {TARGETS}, not {target!r}")
    if target == "vdla":
        import mlc.vdla  # noqa: F401 - declares the tensor intrinsics a trace may tensorize to
    out = _fresh_output(tuple(out_shape), out_dtype)
    try:
        sch = _schedule_from_trace(func, trace_text)
        if target == "cuda-sim":
            module = mlc.build(sch.mod, target="cuda-sim", allow_calls=False)
        else:  # VDLA instructions only, interpreted by its simulator: nothing native runs
            module = mlc.build(sch.mod, target="vdla")
        if check:
            from mlc.target import cuda_sim

            report = cuda_sim.check(module, *arrays, out)
            return ScheduleRun(True, str(report)[:MAX_MESSAGE], out)
        if target == "cuda-sim":
            module.check_on_first_call = False  # races are the checked case's business
        stats = module(*arrays, out)
        cycles = int(stats.cycles) if target == "vdla" else None
    except Exception as err:  # noqa: BLE001 - a student's schedule may fail in any way
        return ScheduleRun(False, _error(err))
    run = ScheduleRun(True, "", out, cycles=cycles)
    if predict_func is not None:
        from mlc.target import cuda_sim

        try:
            big = _schedule_from_trace(predict_func, trace_text)
            lowered = mlc.lower(big.mod, target="cuda-sim")
            zeros = [np.zeros(tuple(int(getattr(d, "value", d)) for d in b.shape), b.dtype)
                     for b in predict_func.params]  # the reference's own sizes
            run.time = float(cuda_sim.predict(lowered, *zeros, gpu=gpu).time)
        except Exception as err:  # noqa: BLE001
            run.predict_error = _error(err)
    return run


def judge_schedule(target: str, func: Any, trace_text: str, arrays: dict[str, np.ndarray],
                   out_shape: tuple[int, ...], out_dtype: str, workdir: Path, *,
                   check: bool = False, predict_func: Any = None, gpu: str = "h100",
                   hide: list[str] | None = None, probe: dict[str, Any] | None = None,
                   wall_s: float = 100.0) -> ScheduleRun:
    """:func:`run_schedule` in a judged step, its result checked on this (trusted) side.

    Raises :class:`JudgeUnavailable` when the step could not start with every wall (never a
    grade); a step that crashed, ran out of time or memory, or left something that is not what was
    asked for is ``ran=False`` with the reason. With ``probe`` (tests: paths to try to read
    and write), what the judged process is and could reach is in ``run.probe``."""
    from autograder.judged import run_judged

    spec = {"target": target, "names": list(arrays), "out_shape": [int(d) for d in out_shape],
            "out_dtype": str(np.dtype(out_dtype)), "check": bool(check), "gpu": gpu,
            "predict": predict_func is not None, "probe": probe}
    inputs = {"func.txt": func.script().encode(), "trace.json": trace_text.encode(),
              "inputs.npz": pack_arrays(arrays), "spec.json": json.dumps(spec).encode()}
    if predict_func is not None:
        inputs["predict_func.txt"] = predict_func.script().encode()
    nbytes = int(np.prod(out_shape)) * np.dtype(out_dtype).itemsize
    judged = run_judged("autograder.judge_gpu", workdir, inputs, outputs=("out.npy",),
                        hide=hide, wall_s=wall_s, cap=max(1 << 20, 2 * nbytes + 4096))
    if judged.problem:
        raise JudgeUnavailable(judged.problem)
    if judged.failure:
        return ScheduleRun(False, f"the schedule could not be checked: {judged.failure}")
    run = _checked(judged.result or {}, judged.files, tuple(out_shape), out_dtype, target,
                   predict_func is not None)
    if probe is not None:
        run.probe = (judged.result or {}).get("probe")
    return run


def _checked(result: dict[str, Any], files: dict[str, bytes], out_shape: tuple[int, ...],
             out_dtype: str, target: str, predict: bool) -> ScheduleRun:
    """The judged step's report as data: every field checked before anything uses it."""
    message = result.get("message")
    message = message[:MAX_MESSAGE] if isinstance(message, str) else ""
    if result.get("ran") is not True:
        return ScheduleRun(False, message or "the schedule did not run")
    out = read_npy(files.get("out.npy"), out_shape, out_dtype)
    if isinstance(out, str):
        return ScheduleRun(False, f"the schedule's output {out}")
    run = ScheduleRun(True, message, out)
    if target == "vdla":
        cycles = result.get("cycles")
        if not (type(cycles) is int and 0 < cycles < MAX_CYCLES):
            return ScheduleRun(False, f"the simulator's cycle count is not usable: "
                                      f"{str(cycles)[:100]}")
        run.cycles = cycles
    if predict:
        error = result.get("predict_error")
        time = result.get("time")
        if isinstance(error, str) and error:
            run.predict_error = error[:MAX_MESSAGE]
        elif isinstance(time, float) and math.isfinite(time) and 0 < time < MAX_TIME_S:
            run.time = time
        else:
            run.predict_error = f"the model's prediction is not usable: {str(time)[:100]}"
    return run


def judge_main(in_dir: Path, out_dir: Path) -> int:
    """The judged step (see the module docstring)."""
    from mlc.script import from_source

    spec = json.loads((in_dir / "spec.json").read_text())
    arrays = list(unpack_arrays(in_dir / "inputs.npz", spec["names"]).values())
    result: dict[str, Any] = {}
    if spec.get("probe") is not None:
        from autograder import program

        result["probe"] = program._probe(spec["probe"])
    predict_func = (from_source((in_dir / "predict_func.txt").read_text())
                    if spec["predict"] else None)
    run = run_schedule(spec["target"], from_source((in_dir / "func.txt").read_text()),
                       (in_dir / "trace.json").read_text(), arrays,
                       tuple(spec["out_shape"]), spec["out_dtype"], check=spec["check"],
                       predict_func=predict_func, gpu=spec["gpu"])
    result.update(ran=run.ran, message=run.message)
    if run.out is not None:
        np.save(out_dir / "out.npy", run.out, allow_pickle=False)
    if run.cycles is not None:
        result["cycles"] = run.cycles
    if run.time is not None:
        result["time"] = run.time
    if run.predict_error:
        result["predict_error"] = run.predict_error
    (out_dir / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--judge"]:
        sys.exit(judge_main(Path(sys.argv[2]), Path(sys.argv[3])))
    sys.exit("usage: python -m autograder.judge_gpu --judge IN OUT (run by the grader)")
