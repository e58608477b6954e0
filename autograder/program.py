"""Run a student's exported loop program on fresh inputs and compare it with the reference.

Run by the grader in its own process (``python -m autograder.program GRADER CASE PROGRAM
OUT``), with resource limits and no network, for a :class:`~autograder.cases.TECase`. The
program is TVMScript text that ``grading.check_te`` exported from the student's kernel; it is
parsed by ``mlc.script`` (which reads the text's syntax tree and never executes it), its
parameters are checked against the case's inputs and output, and it is built for the CPU
and run on inputs drawn with a seed the kernel never saw. The report (JSON) says whether it
is correct and, if not, why in words a student can act on.
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


def fresh_seed() -> int:
    """A seed nobody in the kernel can know (the exchange's inputs used another)."""
    return int.from_bytes(os.urandom(4), "little")


def check_program(case: TECase, text: str, seed: int | None = None) -> tuple[bool, str]:
    """Parse, check, build and run ``text`` for ``case``; (correct, message)."""
    import mlc
    from mlc.errors import MLCError
    from mlc.script import from_source
    from mlc.tir.stmt import PrimFunc

    if len(text.encode()) > MAX_PROGRAM_BYTES:
        return False, (f"the exported program is {len(text.encode()) >> 20} MiB; a te "
                       "computation prints in a few KiB (are constants baked into it?)")
    try:
        func = from_source(text)
    except MLCError as err:
        return False, f"the exported program cannot be read: {err}"
    if not isinstance(func, PrimFunc):
        return False, "the export is not one loop program (a @T.prim_func)"
    from mlc.tir import Call, post_order_visit

    calls: list[str] = []
    post_order_visit(func, lambda n: calls.append(n.op) if isinstance(n, Call) and n.op in
                     ("call_packed", "call_extern", "call_pure_extern") else None)
    if calls:  # a library (or any C function) would compute the answer: not graded code
        return False, (f"the program calls code outside it ({calls[0]}); a graded program "
                       "computes its answer with its own loops")
    if func.scalars:  # the case has arrays to give, no numbers: refuse rather than guess
        names = ", ".join(f"{v.name}: {v.dtype}" for _, v in func.scalars)
        return False, (f"the program takes scalar parameter(s) ({names}); this test passes "
                       f"only arrays ({len(case.inputs)} inputs and one output), so write "
                       "the value into the computation (a Python number in te.compute) "
                       "instead of passing a te.var")
    seed = fresh_seed() if seed is None else seed
    arrays = random_inputs(case.inputs, seed ^ zlib.crc32(case.id.encode()))
    expected = np.asarray(case.reference(*arrays.values(), **case.params))
    if len(func.params) != len(arrays) + 1:
        return False, (f"the program takes {len(func.params)} arrays; this test passes "
                       f"{len(arrays)} inputs and one output")
    for buf, (name, arr) in zip(func.params, [*arrays.items(), ("output", expected)]):
        shape = tuple(_const(d) for d in buf.shape)
        if shape != arr.shape or buf.dtype != str(arr.dtype):
            return False, (f"the program's parameter {buf.name!r} is {buf.dtype}{list(shape)};"
                           f" the test's {name} is {arr.dtype}{list(arr.shape)}")
    try:
        module = mlc.build(func, target="llvm", allow_calls=False)
        out = np.full(expected.shape, np.nan if expected.dtype.kind == "f" else 0,
                      expected.dtype)
        module(*arrays.values(), out)
    except MLCError as err:
        return False, f"the program does not run: {type(err).__name__}: {err}"
    ok, message = compare(expected, out, case.rtol, case.atol)
    return ok, ("correct on fresh inputs" if ok else f"on fresh inputs: {message}")


def _const(d: Any) -> int | str:
    """A shape's extent as an int (``9 + 2 - 3 + 1`` too), or its text if it is symbolic."""
    from mlc.tir.arith import evaluate_known

    value = evaluate_known(d, {})
    return int(value) if value is not None else str(d)


def main(argv: list[str]) -> int:
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
        ok, message = check_program(case, text)
    Path(out_path).write_text(json.dumps({"correct": ok, "message": message}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
