"""A pytest plugin that reports each notebook cell's outcome as soon as it is known.

Loaded into the sandboxed ``pytest --nbval-lax`` run (``-p autograder._nbval_log``): this
process is the *driver*, trusted code that runs the student's kernel and reads its replies.
One JSON line per cell goes out at once, so that the outcomes of the cells that ran survive a
kernel that dies or a run that is killed at its time limit.

When grading, the line goes to a pipe whose descriptor the grader handed to the driver
(``$AUTOGRADER_OUTCOME_FD``). The student's kernel never gets that descriptor (it is closed on
exec and the variable is removed from the environment the kernel inherits), and the driver
makes itself non-dumpable at once, so that code running as the same user can neither ptrace it
nor open its ``/proc/PID/fd`` or memory: the kernel has no way to write an outcome. A student
running ``python -m autograder check`` gets a plain file (``$AUTOGRADER_CELL_LOG``) instead.
"""

from __future__ import annotations

import ctypes
import json
import os
from typing import IO, Any

OUTCOME_FD_ENV = "AUTOGRADER_OUTCOME_FD"
PR_SET_DUMPABLE = 4


def _open_channel() -> IO[str] | None:
    fd_text = os.environ.pop(OUTCOME_FD_ENV, None)
    if fd_text is None:
        return None
    fd = int(fd_text)
    os.set_inheritable(fd, False)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) refused")
    except OSError:
        os.close(fd)  # a dumpable driver's pipe could be stolen: report nothing at all
        return None
    return os.fdopen(fd, "w", buffering=1)


_channel = _open_channel()


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
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    name = report.nodeid.rsplit("::", 1)[-1]
    if not name.startswith("Cell "):
        return
    entry = {"cell": int(name.split()[1]), "outcome": report.outcome, "message": ""}
    if report.outcome != "passed":
        entry["message"] = _short(report)
    line = json.dumps(entry) + "\n"
    if _channel is not None:
        _channel.write(line)
        _channel.flush()
        return
    path = os.environ.get("AUTOGRADER_CELL_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line)
