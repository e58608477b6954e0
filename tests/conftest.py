"""Shared by every test folder: the line budget printed at the end of a run."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Core lines per folder after every run (also under xdist), so CI shows growth."""
    from test_layering import line_table  # tests/ is on sys.path (rootdir conftest)

    terminalreporter.write_line(line_table())
