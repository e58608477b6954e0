"""``python -m autograder check NOTEBOOK``: run a notebook's public tests, for a student.

Runs every cell under ``pytest --nbval-lax`` (no sandbox: it is the student's own machine)
and prints, per test cell, passed or failed with the error. Hidden tests are not there:
a pass here is a good sign, not a grade.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder.notebook import test_metadata


def check_notebook(path: Path, timeout: float = 300.0) -> int:
    """Run ``path``'s cells; print the test cells' outcomes; return 0 if all passed."""
    nb = nbformat.read(str(path), as_version=4)
    tests: dict[int, tuple[str, float]] = {}
    code = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = test_metadata(cell)
        if meta and isinstance(meta.get("id"), str):
            tests[code] = (meta["id"], float(meta.get("points", 0)))
        code += 1
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "cells.jsonl"
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n")
        env = dict(os.environ, AUTOGRADER_CELL_LOG=str(log))
        env.pop("AUTOGRADER_EXCHANGE", None)
        subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
             f"--nbval-cell-timeout={timeout}", "-p", "autograder._nbval_log", "-p",
             "no:cacheprovider", "-c", str(ini), "--rootdir", str(path.parent.resolve()), "-q",
             str(path.resolve())],
            cwd=path.parent.resolve(), env=env, capture_output=True, text=True, check=False)
        outcomes: dict[int, tuple[str, str]] = {}
        if log.is_file():
            for line in log.read_text().splitlines():
                entry = json.loads(line)
                outcomes[entry["cell"]] = (entry["outcome"], entry["message"])
    failed = 0
    for cell_num, (test_id, points) in tests.items():
        outcome, message = outcomes.get(cell_num, ("not run", "the notebook stopped before it"))
        print(f"{test_id} ({points:g} points): {outcome}" + (f": {message}" if message else ""))
        failed += outcome != "passed"
    errors = [n for n, (o, _) in outcomes.items() if o != "passed" and n not in tests]
    for n in errors:
        print(f"code cell {n} raised: {outcomes[n][1]}")
    print("all public tests passed (hidden tests run when your work is graded)" if not failed
          else f"{failed} of {len(tests)} public tests did not pass")
    return 1 if failed else 0
