"""Run a student's exported loop program on fresh inputs and compare it with the reference.

The grader runs ``python -m autograder.program GRADER CASE PROGRAM OUT`` for a
:class:`~autograder.cases.TECase`. The program is TVMScript text that ``grading.check_te``
exported from the student's kernel. Two processes, one on each side of the wall:

* this one, the *trusted* side, loads ``grader.py``, draws inputs with a seed the kernel never
  saw and computes the reference's answer (:func:`judge_program`);
* a *judged* step (``python -m autograder.program --judge in out``, started by
  :func:`autograder.judged.run_judged`: its own unprivileged user, no capability, seccomp,
  a file system with only the program text and the inputs) parses the text with
  ``mlc.script`` (which reads its syntax tree and never executes it), checks its parameters,
  builds it with ``allow_calls=False`` (the compiled module may call only math functions)
  and runs it (:func:`run_program`). It never sees the tests folder, ``grader.py`` or the
  expected answer: it writes the output array, and this side compares.

The report (JSON) says whether the program is correct and, if not, why in words a student
can act on. :func:`check_program` does both halves in one process (tests, local checks).
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from autograder.cases import TECase, compare, load_grader, parse_json, random_inputs

MAX_PROGRAM_BYTES = 4 << 20  # a te program of the course prints in a few KiB
MAX_MESSAGE = 2000  # characters of a judged step's message that reach the report


def fresh_seed() -> int:
    """A seed nobody in the kernel can know (the exchange's inputs used another)."""
    return int.from_bytes(os.urandom(4), "little")


def case_arrays(case: TECase, seed: int | None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Fresh inputs for ``case`` and the reference's answer on them (trusted side)."""
    seed = fresh_seed() if seed is None else seed
    arrays = random_inputs(case.inputs, seed ^ zlib.crc32(case.id.encode()))
    expected = np.asarray(case.reference(*arrays.values(), **case.params))
    return arrays, expected


def run_program(text: str, arrays: dict[str, np.ndarray], out_shape: tuple[int, ...],
                out_dtype: str) -> tuple[np.ndarray | None, str]:
    """Parse, check, build (no calls out) and run ``text`` on ``arrays``: (output, "") or
    (None, why not). What the judged step does; it never sees the expected values."""
    import mlc
    from mlc.errors import MLCError
    from mlc.script import from_source
    from mlc.tir import Call, post_order_visit
    from mlc.tir.stmt import PrimFunc

    if len(text.encode()) > MAX_PROGRAM_BYTES:
        return None, (f"the exported program is {len(text.encode()) >> 20} MiB; a te "
                      "computation prints in a few KiB (are constants baked into it?)")
    try:
        func = from_source(text)
    except MLCError as err:
        return None, f"the exported program cannot be read: {err}"
    if not isinstance(func, PrimFunc):
        return None, "the export is not one loop program (a @T.prim_func)"
    calls: list[str] = []  # the whole function: buffer shapes and strides are code too
    post_order_visit(func, lambda n: calls.append(n.op) if isinstance(n, Call) and n.op in
                     ("call_packed", "call_extern", "call_pure_extern") else None)
    if calls:  # a library (or any C function) would compute the answer: not graded code
        return None, (f"the program calls code outside it ({calls[0]}); a graded program "
                      "computes its answer with its own loops")
    if func.scalars:  # the case has arrays to give, no numbers: refuse rather than guess
        names = ", ".join(f"{v.name}: {v.dtype}" for _, v in func.scalars)
        return None, (f"the program takes scalar parameter(s) ({names}); this test passes "
                      f"only arrays ({len(arrays)} inputs and one output), so write "
                      "the value into the computation (a Python number in te.compute) "
                      "instead of passing a te.var")
    if len(func.params) != len(arrays) + 1:
        return None, (f"the program takes {len(func.params)} arrays; this test passes "
                      f"{len(arrays)} inputs and one output")
    wanted = [(name, tuple(a.shape), str(a.dtype)) for name, a in arrays.items()]
    wanted.append(("output", tuple(out_shape), str(np.dtype(out_dtype))))
    for buf, (name, shape_w, dtype_w) in zip(func.params, wanted):
        shape = tuple(_const(d) for d in buf.shape)
        if shape != shape_w or buf.dtype != dtype_w:
            return None, (f"the program's parameter {buf.name!r} is {buf.dtype}{list(shape)};"
                          f" the test's {name} is {dtype_w}{list(shape_w)}")
    try:
        module = mlc.build(func, target="llvm", allow_calls=False)
        dtype = np.dtype(out_dtype)
        out = np.full(out_shape, np.nan if dtype.kind == "f" else 0, dtype)
        module(*arrays.values(), out)
    except MLCError as err:
        return None, f"the program does not run: {type(err).__name__}: {err}"
    return out, ""


def check_program(case: TECase, text: str, seed: int | None = None) -> tuple[bool, str]:
    """Both halves in this process: (correct, message). For tests and local checks; the
    grader uses :func:`judge_program`, which keeps the halves apart."""
    arrays, expected = case_arrays(case, seed)
    out, why = run_program(text, arrays, expected.shape, str(expected.dtype))
    if out is None:
        return False, why
    return _verdict(case, expected, out)


def _verdict(case: TECase, expected: np.ndarray, out: np.ndarray) -> tuple[bool, str]:
    ok, message = compare(expected, out, case.rtol, case.atol)
    return ok, ("correct on fresh inputs" if ok else f"on fresh inputs: {message}")


def judge_program(case: TECase, text: str, workdir: Path, seed: int | None = None,
                  hide: list[str] | None = None, probe: dict[str, Any] | None = None,
                  wall_s: float = 100.0) -> tuple[bool, str, dict[str, Any]]:
    """Check ``text`` for ``case`` with the program run on the judged side of the wall
    (:func:`autograder.judged.run_judged`); the reference stays here. (correct, message,
    the judged step's report). ``probe`` (tests only) asks the judged step to report its
    user, capabilities and what it could read and write (:func:`_probe`).
    Raises :class:`~autograder.judged.JudgeUnavailable` when the step could not judge
    (never a grade)."""
    from autograder.judged import JudgeUnavailable, pack_arrays, read_npy, run_judged

    arrays, expected = case_arrays(case, seed)
    spec = {"names": list(arrays), "out_shape": list(expected.shape),
            "out_dtype": str(expected.dtype), "probe": probe}
    judged = run_judged("autograder.program", workdir,
                        {"program.txt": text.encode(), "inputs.npz": pack_arrays(arrays),
                         "spec.json": json.dumps(spec).encode()},
                        outputs=("out.npy",), hide=hide, wall_s=wall_s,
                        cap=max(1 << 20, 2 * expected.nbytes + 4096))
    if judged.problem:
        raise JudgeUnavailable(judged.problem)
    if judged.failure:
        return False, f"the program could not be checked: {judged.failure}", {}
    report = judged.result or {}
    message = str(report.get("message", ""))[:MAX_MESSAGE]
    if not report.get("ran"):
        return False, message or "the program did not run", report
    out = read_npy(judged.files.get("out.npy"), expected.shape, expected.dtype)
    if isinstance(out, str):
        return False, f"the program's output {out}", report
    ok, message = _verdict(case, expected, out)
    return ok, message, report


def _const(d: Any) -> int | str:
    """A shape's extent as an int (``9 + 2 - 3 + 1`` too), or its text if it is symbolic."""
    from mlc.tir.arith import evaluate_known

    value = evaluate_known(d, {})
    return int(value) if value is not None else str(d)


def _probe(probe: dict[str, Any]) -> dict[str, Any]:
    """What the judged process is (tests only): its user, capabilities, ``no_new_privs``,
    seccomp, and which of ``probe["read"]`` it could read and ``probe["write"]`` write."""
    from autograder._sandbox_exec import capabilities

    status = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Uid", "NoNewPrivs", "Seccomp"):
                status[key] = value.split()[0]
    found: dict[str, Any] = {"status": status, "caps": capabilities(), "read": {},
                             "write": {}}
    for path in probe.get("read", []):
        try:
            with open(path, "rb") as f:
                f.read(1)
            found["read"][path] = "read"
        except OSError as err:
            found["read"][path] = err.strerror
    for path in probe.get("write", []):
        try:
            with open(path, "w") as f:
                f.write("x")
            found["write"][path] = "written"
        except OSError as err:
            found["write"][path] = err.strerror
    if probe.get("compiled"):  # the same from compiled code that calls libc's open()
        found["compiled_read"] = {p: _compiled_open(p, os.O_RDONLY)
                                  for p in probe.get("read", [])}
        found["compiled_write"] = {p: _compiled_open(p, os.O_WRONLY | os.O_CREAT)
                                   for p in probe.get("write", [])}
    return found


def _compiled_open(path: str, flags: int) -> int:
    """``open(path, flags, 0644)`` called from a compiled program (as a call that got past
    every check would): the descriptor, or -1 (tests only: calls allowed here)."""
    import mlc
    from mlc.tir.expr import Call, StringImm, convert
    from mlc.tir.stmt import Buffer, BufferStore, PrimFunc

    name = Buffer("name", (convert(4096),), "uint8")
    fd = Buffer("fd", (convert(1),), "int32")
    call = Call("int32", "call_extern", (StringImm("open"), name.data, convert(flags),
                                         convert(0o644)))
    module = mlc.build(PrimFunc((name, fd), BufferStore(fd, call, (convert(0),))),
                       target="llvm")
    data = np.zeros(4096, np.uint8)
    raw = os.fsencode(path)[:4095]
    data[:len(raw)] = np.frombuffer(raw, np.uint8)
    out = np.full(1, -1, np.int32)
    module(data, out)
    return int(out[0])


def judge_main(in_dir: Path, out_dir: Path) -> int:
    """The judged step: read the program and inputs, run it, write ``out.npy`` and
    ``result.json`` (``{"ran": bool, "message": str}``)."""
    from autograder.judged import unpack_arrays

    spec = json.loads((in_dir / "spec.json").read_text())
    arrays = unpack_arrays(in_dir / "inputs.npz", spec["names"])
    report: dict[str, Any] = {}
    if spec.get("probe") is not None:
        report["probe"] = _probe(spec["probe"])
    text = (in_dir / "program.txt").read_bytes().decode("utf-8", "replace")
    try:
        out, why = run_program(text, arrays, tuple(spec["out_shape"]), spec["out_dtype"])
    except (Exception, RecursionError) as err:  # noqa: BLE001 - whatever it is, the export's
        out, why = None, f"the program cannot be checked: {type(err).__name__}: {err}"
    if out is not None:
        np.save(out_dir / "out.npy", out, allow_pickle=False)
    report.update({"ran": out is not None, "message": why})
    (out_dir / "result.json").write_text(json.dumps(report))
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--judge":
        return judge_main(Path(argv[1]), Path(argv[2]))
    grader_path, case_id, program_path, out_path = argv
    case = load_grader(grader_path).case(case_id)
    if not isinstance(case, TECase):
        raise SystemExit(f"{case_id} is not a TECase")
    try:
        text = parse_json(Path(program_path).read_bytes())["program"]
        if not isinstance(text, str):
            raise TypeError("the program is not text")
    except (ValueError, KeyError, TypeError) as err:
        ok, message = False, f"the exported program cannot be read: {err}"
    else:
        from autograder.judged import JudgeUnavailable, grader_error

        tests = Path(grader_path).resolve().parent
        try:
            ok, message, _ = judge_program(case, text, Path(out_path).resolve().parent,
                                           hide=[str(tests), str(tests.parent)])
        except JudgeUnavailable as err:
            return grader_error(err)
    Path(out_path).write_text(json.dumps({"correct": ok, "message": message}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
