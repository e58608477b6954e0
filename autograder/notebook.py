"""Reading an instructor notebook: solution regions, test cells, hidden tests.

An instructor notebook is an ordinary notebook that runs top to bottom with the solutions in
place. Three markers turn it into an assignment:

* A solution region, inside any code cell::

      def softmax(x):
          ### BEGIN SOLUTION
          ...the instructor's code...
          ### END SOLUTION

  The student version keeps the code before ``### BEGIN SOLUTION`` and replaces the region
  by ``raise NotImplementedError()`` at the marker's indentation.

* A test cell is a code cell whose metadata carries ``"autograder": {"id": "t_softmax",
  "points": 2}`` (JupyterLab: Property Inspector -> Cell Metadata). The id is unique in the
  notebook and names the test in grades and feedback.

* A hidden region, inside a test cell::

      ### BEGIN HIDDEN TESTS
      grading.check_te("softmax_hidden", softmax)
      ### END HIDDEN TESTS

  It is removed from the student notebook and becomes an *export cell* of the grading tests:
  appended after the student's code at grading time, it only exports what the student's code
  produces; the decision is made by the trusted ``grader.py`` of the assignment.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import nbformat

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"

_ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


class AuthoringError(ValueError):
    """An instructor notebook whose markers or test metadata are malformed."""


@dataclass
class TestCell:
    """One graded test cell of an instructor notebook."""

    id: str
    points: float
    public_source: str
    hidden_source: str
    cell_index: int  # index among *all* cells of the instructor notebook
    case_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "points": self.points,
            "public_source": self.public_source,
            "hidden_source": self.hidden_source,
            "case_ids": self.case_ids,
        }


_CASE_CALL_RE = re.compile(r"""grading\.check_\w+\(\s*["']([A-Za-z0-9_\-]+)["']""")


def _split_region(
    source: str, begin: str, end: str, where: str
) -> list[tuple[str, list[str]]]:
    """Split ``source`` into ("text", lines) and ("region", lines) chunks."""
    chunks: list[tuple[str, list[str]]] = [("text", [])]
    inside = False
    for lineno, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped == begin:
            if inside:
                raise AuthoringError(f"{where}, line {lineno}: '{begin}' inside another region")
            chunks.append(("region", [line]))
            inside = True
        elif stripped == end:
            if not inside:
                raise AuthoringError(f"{where}, line {lineno}: '{end}' without a '{begin}'")
            chunks[-1][1].append(line)
            chunks.append(("text", []))
            inside = False
        else:
            chunks[-1][1].append(line)
    if inside:
        raise AuthoringError(f"{where}: '{begin}' is never closed by '{end}'")
    return chunks


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace each solution region by a ``raise NotImplementedError()`` stub.

    >>> src = "def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n    ### END SOLUTION"
    >>> print(strip_solutions(src))
    def f():
        raise NotImplementedError()
    """
    out: list[str] = []
    for kind, lines in _split_region(source, BEGIN_SOLUTION, END_SOLUTION, where):
        if kind == "text":
            out.extend(lines)
        else:
            indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
            out.append(f"{indent}raise NotImplementedError()")
    return "\n".join(out)


def split_hidden(source: str, where: str = "cell") -> tuple[str, str]:
    """Return (public part, hidden part) of a test cell's source, markers removed."""
    public: list[str] = []
    hidden: list[str] = []
    for kind, lines in _split_region(source, BEGIN_HIDDEN, END_HIDDEN, where):
        if kind == "text":
            public.extend(lines)
        else:
            hidden.extend(lines[1:-1])
    return "\n".join(public).strip("\n"), "\n".join(hidden).strip("\n")


def test_metadata(cell: Any) -> dict[str, Any] | None:
    """The ``autograder`` metadata of a cell, or None for an ordinary cell."""
    meta = cell.get("metadata", {}).get("autograder")
    return dict(meta) if isinstance(meta, dict) else None


def read_tests(nb: Any, where: str = "notebook") -> list[TestCell]:
    """All graded test cells of an instructor notebook, in order, validated."""
    tests: list[TestCell] = []
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        meta = test_metadata(cell)
        if meta is None:
            continue
        label = f"{where}, cell {index}"
        if cell.cell_type != "code":
            raise AuthoringError(f"{label}: only code cells can be test cells")
        test_id = meta.get("id")
        if not isinstance(test_id, str) or not _ID_RE.match(test_id):
            raise AuthoringError(f"{label}: metadata autograder.id must be a name like 't_softmax'")
        if test_id in seen:
            raise AuthoringError(f"{label}: test id {test_id!r} is used twice")
        points = meta.get("points")
        if not isinstance(points, (int, float)) or points < 0:
            raise AuthoringError(f"{label}: test {test_id!r} needs a number 'points' >= 0")
        public, hidden = split_hidden(cell.source, label)
        if not hidden:
            raise AuthoringError(
                f"{label}: test {test_id!r} has no '{BEGIN_HIDDEN}' region; every graded test "
                "needs at least one grading.check_*(...) call there, so that the grade is decided "
                "outside the student's kernel"
            )
        cases = _CASE_CALL_RE.findall(hidden)
        if not cases:
            raise AuthoringError(
                f"{label}: the hidden region of {test_id!r} calls no grading.check_*('case', ...)"
            )
        seen.add(test_id)
        tests.append(TestCell(test_id, float(points), public, hidden, index, cases))
    if not tests:
        raise AuthoringError(f"{where}: no test cell (metadata 'autograder': {{'id', 'points'}})")
    return tests


def student_notebook(nb: Any, where: str = "notebook") -> Any:
    """The student version: solutions stubbed, hidden tests removed, outputs cleared."""
    student = copy.deepcopy(nb)
    for index, cell in enumerate(student.cells):
        label = f"{where}, cell {index}"
        if cell.cell_type == "code":
            source = strip_solutions(cell.source, label)
            if test_metadata(cell) is not None:
                source, _ = split_hidden(source, label)
            cell.source = source
            cell.outputs = []
            cell.execution_count = None
        elif BEGIN_SOLUTION in cell.source:
            cell.source = strip_solutions(cell.source, label).replace(
                "raise NotImplementedError()", "YOUR ANSWER HERE"
            )
        cell["id"] = f"cell-{index}"  # stable ids: regenerating gives the same file
    student.metadata.pop("widgets", None)
    return student


def read_notebook(path: str) -> Any:
    return nbformat.read(path, as_version=4)
