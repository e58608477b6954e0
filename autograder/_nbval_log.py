"""A pytest plugin that logs each notebook cell's outcome as soon as it is known.

Loaded into the sandboxed ``pytest --nbval-lax`` run (``-p autograder._nbval_log``). One JSON
line per cell goes to ``$AUTOGRADER_CELL_LOG``, flushed at once, so that the outcomes of the
cells that ran survive a kernel that dies or a run that is killed at its time limit.
"""

from __future__ import annotations

import json
import os
from typing import Any


def _short(report: Any) -> str:
    text = str(getattr(report, "longrepr", "") or "")
    lines = [line for line in text.splitlines() if line.strip()]
    # nbval's failure text ends with the traceback; keep the exception line(s).
    for line in reversed(lines):
        stripped = _strip_ansi(line).strip()
        if stripped and not stripped.startswith(("File ", "Cell In", "--")) and ":" in stripped:
            return stripped[:500]
    return _strip_ansi(lines[-1]).strip()[:500] if lines else ""


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def pytest_runtest_logreport(report: Any) -> None:
    path = os.environ.get("AUTOGRADER_CELL_LOG")
    if not path:
        return
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    name = report.nodeid.rsplit("::", 1)[-1]
    if not name.startswith("Cell "):
        return
    entry = {"cell": int(name.split()[1]), "outcome": report.outcome, "message": ""}
    if report.outcome != "passed":
        entry["message"] = _short(report)
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
