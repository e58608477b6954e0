"""Trusted test cases: what each hidden check compares a student's export against.

An assignment's ``grader.py`` (``instructor/<name>/grader.py``, copied next to the grading
tests) defines ``CASES``, a list of :class:`Case` and :class:`TraceCase`. It never runs in the
student's kernel: the kernel only receives each case's inputs (arrays and keyword
parameters), and the grader process compares what the kernel exported with the reference.

    CASES = [
        Case("softmax_hidden", inputs={"x": ((7, 33), "float32")},
             reference=lambda x: np_softmax(x), rtol=1e-4),
    ]
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

SIZE_ENV = "AUTOGRADER_SIZE"
NEEDS_REVIEW = "needs review"  # a check's third value: the timing could not decide the credit

InputSpec = dict[str, tuple[tuple[int, ...], str]]


def random_inputs(spec: InputSpec, seed: int) -> dict[str, np.ndarray]:
    """Deterministic random arrays: floats uniform in [-1, 1), ints in [-8, 8)."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for name, (shape, dtype) in spec.items():
        if np.issubdtype(np.dtype(dtype), np.floating):
            arrays[name] = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        elif np.dtype(dtype) == np.bool_:
            arrays[name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            arrays[name] = rng.integers(-8, 8, size=shape).astype(dtype)
    return arrays


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` for text a kernel wrote: whatever is wrong with it (nesting past the
    recursion limit included, which ``json`` raises as a ``RecursionError``) is a
    ``ValueError``, so that a hostile export is the student's failure, never the grader's."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def linear_credit(ratio: float, floor: float, full: float) -> float:
    """The credit of a speed ratio: none at ``floor`` or slower, all from ``full``, linear in
    between (:meth:`TraceCase.score`; the judged replay's retiming rule uses it too)."""
    return float(np.clip((ratio - floor) / (full - floor), 0.0, 1.0))


def compare(expected: np.ndarray, got: Any, rtol: float, atol: float) -> tuple[bool, str]:
    """Compare a student's array with the expected one; return (ok, message for a student)."""
    if not isinstance(got, np.ndarray):
        return False, f"expected an array, got {type(got).__name__}"
    if got.shape != expected.shape:
        return False, f"wrong shape: expected {expected.shape}, got {got.shape}"
    if got.dtype.kind not in "fiub" or got.dtype == object:
        return False, f"wrong dtype {got.dtype}"
    if not np.all(np.isfinite(got.astype(np.float64))):
        return False, "the result contains NaN or inf"
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    tol = atol + rtol * np.abs(expected.astype(np.float64))
    bad = diff > tol
    if bad.any():
        where = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff - tol)), diff.shape))
        return False, (
            f"{int(bad.sum())} of {bad.size} values differ; worst at index {where}: "
            f"expected {expected[where]!r}, got {got[where]!r}"
        )
    return True, "matches the reference"


@dataclass
class Case:
    """A value check: the student's output on these inputs must match ``reference``."""

    id: str
    inputs: InputSpec
    reference: Callable[..., np.ndarray]
    params: dict[str, Any] = field(default_factory=dict)
    rtol: float = 1e-4
    atol: float = 1e-5
    seed: int = 0
    show_message: ClassVar[bool] = False  # hidden: students see pass/fail only

    def make_inputs(self) -> dict[str, np.ndarray]:
        return random_inputs(self.inputs, self.seed + zlib.crc32(self.id.encode()))

    def expected(self) -> np.ndarray:
        return np.asarray(self.reference(*self.make_inputs().values(), **self.params))

    def check_local(self, value: Any) -> tuple[float, str]:
        ok, message = compare(self.expected(), np.asarray(value), self.rtol, self.atol)
        return (1.0 if ok else 0.0), message

    def check_export(self, exports: Path, **_: Any) -> tuple[float, str]:
        path = exports / f"{self.id}.npy"
        if not path.is_file():
            return 0.0, "no result was produced (the cell failed or never ran)"
        try:
            got = np.load(path, allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - an empty or cut file is EOFError, and so on
            return 0.0, f"the exported result cannot be read: {type(err).__name__}: {err}"
        ok, message = compare(self.expected(), got, self.rtol, self.atol)
        return (1.0 if ok else 0.0), message


@dataclass
class TECase(Case):
    """A te check graded on the student's *program*, not on values the kernel computed.

    ``grading.check_te(case_id, fn)`` builds ``fn``'s computation for the case's shapes in the
    kernel and exports its loop program as TVMScript text (``PrimFunc.script()``). The grader
    parses it (``mlc.script``: nothing of it executes as Python), checks its signature against
    the case's inputs, builds it and runs it in a separate trusted process on inputs drawn
    afresh for this grading (not the ones the kernel saw), and compares with ``reference``. So
    a kernel that fakes its cells' replies, returns numpy's answer from ``fn`` or bakes the
    expected values into the program gets nothing: only a program that computes the answer
    scores.
    """

    def check_export(self, exports: Path, *, grader_path: Path | None = None,
                     run_trusted: Callable[[list[str], Path], tuple[int, str]] | None = None,
                     workdir: Path | None = None, **_: Any) -> tuple[float, str]:
        path = exports / f"{self.id}.json"
        if not path.is_file():
            if (exports / f"{self.id}.npy").is_file():
                return 0.0, ("an array was exported where the program was expected (use "
                             "grading.check_te with a function that returns a te tensor)")
            return 0.0, "no program was produced (the cell failed or never ran)"
        if grader_path is None or run_trusted is None or workdir is None:
            return 0.0, "the grader cannot run programs here (no trusted runner)"
        out_file = workdir / f"{self.id}.program-report.json"
        cmd = [sys.executable, "-m", "autograder.program", str(grader_path), self.id,
               str(path), str(out_file)]
        report = run_step(run_trusted, cmd, workdir, out_file, f"running {self.id}'s program")
        return (1.0 if report["correct"] else 0.0), report["message"]


@dataclass
class TraceCase:
    """A schedule check: the student's trace, replayed on a fresh copy of the reference
    computation, must compute the right values and is timed against ``reference_schedule``.

    ``make_func(**params)`` returns the reference PrimFunc; ``reference(*inputs, **params)``
    the expected output (numpy); ``inputs(**params)`` the input spec. ``params`` may name
    ``n``, which ``--size``/``$AUTOGRADER_SIZE`` overrides for quick runs.

    Speed score: with ``ratio = t_reference / t_student`` (1.0 at parity; the ratio of the
    medians of interleaved rounds), the fraction of points is
    ``clip((ratio - floor) / (full - floor), 0, 1)``: full points from ``full`` times the
    reference speed up (0.9 by default: the reference itself, replayed as a student, must get
    full points whatever the noise), zero at ``floor`` or slower, linear in between. A wrong
    result scores 0. With ``speed=False`` only correctness is graded.

    The ratio comes with an interval (:mod:`autograder.replay`); when the credit at its two
    ends differs by more than ``undecided_above`` (a tenth of the points) even after timing
    again, the credit is provisional and :meth:`check_export` says ``needs review``.
    """

    id: str
    make_func: Callable[..., Any]
    reference_schedule: Callable[[Any], None]
    reference: Callable[..., np.ndarray]
    inputs: Callable[..., InputSpec]
    params: dict[str, Any] = field(default_factory=dict)
    speed: bool = True
    floor: float = 0.25
    full: float = 0.9
    rtol: float = 1e-3
    atol: float = 1e-3
    seed: int = 0
    undecided_above: float = 0.1
    show_message: ClassVar[bool] = True  # the speed ratio is shown to the student

    def effective_params(self) -> dict[str, Any]:
        params = dict(self.params)
        if "n" in params and os.environ.get(SIZE_ENV):
            params["n"] = int(os.environ[SIZE_ENV])
        return params

    def make_inputs(self) -> dict[str, np.ndarray]:
        spec = self.inputs(**self.effective_params())
        return random_inputs(spec, self.seed + zlib.crc32(self.id.encode()))

    def score(self, ratio: float) -> float:
        return linear_credit(ratio, self.floor, self.full)

    def check_local(self, value: Any) -> tuple[float, str]:
        from autograder.replay import replay_and_time

        report = replay_and_time(self, str(value), rounds=6, min_time=0.005, settle=0.0)
        if not report["correct"]:
            return 0.0, report["message"]
        if not self.speed:
            return 1.0, report["message"]
        return 1.0, f"{report['message']}; {self.speed_message(report)}"

    def speed_message(self, report: dict[str, Any]) -> str:
        """Both times, the ratio with its spread, and the scale, for the student."""
        return (
            f"{report['ratio']:.2f}x the reference schedule's speed (90% interval "
            f"{report['ratio_low']:.2f} to {report['ratio_high']:.2f}; yours "
            f"{report['t_student'] * 1e3:.3g} ms, reference {report['t_reference'] * 1e3:.3g} ms "
            f"of CPU time on one core; medians of {report['rounds']} interleaved rounds, "
            f"per-round ratios {report['ratio_min']:.2f} to {report['ratio_max']:.2f}); scale: "
            f"0% at {self.floor:g}x or slower, 100% from {self.full:g}x"
        )

    def check_export(self, exports: Path, *, grader_path: Path, run_trusted: Callable[
            [list[str], Path], tuple[int, str]], workdir: Path,
            **_: Any) -> tuple[float, str] | tuple[float, str, str]:
        """``(fraction, message)``; ``(fraction, message, "needs review")`` when the timing
        could not decide the speed credit (the fraction is then provisional)."""
        report, why = replay_export(
            self.id, exports, workdir, run_trusted,
            lambda trace, out: [sys.executable, "-m", "autograder.replay", str(grader_path),
                                self.id, str(trace), str(out)])
        if report is None:
            return 0.0, why
        if not report["correct"]:
            return 0.0, report["message"]
        if not self.speed:
            return 1.0, report["message"]
        fraction = self.score(report["ratio"])
        message = f"correct; {self.speed_message(report)}: {fraction:.0%} of the points"
        if report.get("decided", True):
            return fraction, message
        return fraction, (
            f"{message}, provisionally: the timing's spread allows anything from "
            f"{report['credit_low']:.0%} to {report['credit_high']:.0%} even after timing "
            f"again ({report['rounds']} rounds), so your instructor will decide"), NEEDS_REVIEW


def replay_export(case_id: str, exports: Path, workdir: Path,
                  run_trusted: Callable[[list[str], Path], tuple[int, str]],
                  command: Callable[[Path, Path], list[str]]) -> tuple[Any, str]:
    """Replay the schedule trace a student exported for ``case_id`` in a trusted process:
    the trace is copied to ``workdir``, ``command(trace_file, report_file)`` is run there
    with ``run_trusted``, and its JSON report is returned. ``(None, why)`` when there is no
    trace, it cannot be read, or the replay failed (a reason a student can read)."""
    path = exports / f"{case_id}.json"
    if not path.is_file():
        return None, "no schedule trace was produced (the cell failed or never ran)"
    try:
        text = parse_json(path.read_bytes())["text"]
        if not isinstance(text, str):
            raise TypeError(f"the trace is a {type(text).__name__}, not text")
        text.encode()  # a lone surrogate ('\udcff' in the JSON): UnicodeEncodeError
    except (ValueError, KeyError, TypeError) as err:
        return None, f"the exported trace cannot be read: {err}"
    trace_file = workdir / f"{case_id}.trace.json"
    trace_file.write_text(text)
    out_file = workdir / f"{case_id}.replay.json"
    return run_step(run_trusted, command(trace_file, out_file), workdir, out_file,
                    f"replaying {case_id}'s schedule"), ""


class CheckNotRun(RuntimeError):
    """A check's trusted step failed for a reason that is not the student's (it crashed, was
    killed, ran past its limit, wrote no report): the grader makes it a ``grader-error`` row
    naming the step, never a zero. What the student's export does is judged inside the step,
    and reported; only the step itself failing lands here."""


def run_step(run_trusted: Callable[[list[str], Path], tuple[int, str]], cmd: list[str],
             workdir: Path, out_file: Path, what: str) -> Any:
    """Run a check's trusted step and return its JSON report; :class:`CheckNotRun` (or the
    sandbox's own error, for a judged step that could not start) when there is none."""
    from autograder.judged import raise_if_grader_error

    rc, output = run_trusted(cmd, workdir)
    raise_if_grader_error(output)
    if rc != 0 or not out_file.is_file():
        lines = output.strip().splitlines()
        tail = " / ".join(lines[-2:]) if lines else "no output"
        raise CheckNotRun(f"{what} failed (exit status {rc}, "
                          f"{'no report' if not out_file.is_file() else 'a report'}): {tail}")
    try:
        return parse_json(out_file.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise CheckNotRun(f"{what} wrote an unreadable report: {err}") from None


class Grader:
    """The loaded ``grader.py`` of an assignment."""

    def __init__(self, module: ModuleType, path: Path) -> None:
        self.module = module
        self.path = path
        self.cases: dict[str, Case | TECase | TraceCase] = {c.id: c for c in module.CASES}

    def case(self, case_id: str) -> Case | TECase | TraceCase:
        if case_id not in self.cases:
            raise KeyError(f"{self.path} defines no case {case_id!r}; it has {sorted(self.cases)}")
        return self.cases[case_id]


def load_grader(path: str | Path) -> Grader:
    """Import an assignment's ``grader.py`` (trusted code) under a private module name."""
    path = Path(path).resolve()
    with _load_lock:
        if path not in _graders:
            name = f"_autograder_grader_{zlib.crc32(str(path).encode()):08x}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            sys.path.insert(0, str(path.parent))  # helper modules next to grader.py
            try:
                spec.loader.exec_module(module)
            finally:
                sys.path.remove(str(path.parent))
            _graders[path] = Grader(module, path)
        return _graders[path]


_load_lock = threading.Lock()
_graders: dict[Path, Grader] = {}


def run_plain(cmd: list[str], cwd: Path) -> tuple[int, str]:
    """Run a trusted command without a sandbox (used by tests and local checks)."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr
