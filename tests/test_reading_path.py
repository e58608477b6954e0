"""docs/reading.md leads a student through the lines that teach: every stop names a file, a
function or class in it and its line range. This test keeps each stop true as the code moves.

    python tests/test_reading_path.py --fix     # rewrite the ranges after an edit
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reading.md"
STOP = re.compile(r"^(?P<n>\d+)\. `(?P<file>[^`]+)` `(?P<sym>[^`]+)` "
                  r"\(lines (?P<a>\d+)-(?P<b>\d+)\): (?P<text>.+)$")


def stops() -> list[re.Match[str]]:
    found = [STOP.match(line) for line in DOC.read_text().splitlines()]
    return [m for m in found if m]


def span(file: str, symbol: str) -> tuple[int, int]:
    """The lines of ``symbol`` (``name`` or ``Class.method``) in ``file``, decorators included."""
    path = ROOT / file
    if not path.is_file():
        raise LookupError(f"docs/reading.md names {file}, which does not exist")
    body: list[ast.stmt] = ast.parse(path.read_text()).body
    node: ast.AST | None = None
    for part in symbol.split("."):
        node = next((n for n in body if _name_of(n) == part), None)
        if node is None:
            raise LookupError(f"docs/reading.md names {symbol} in {file}, which has no {part!r}")
        body = getattr(node, "body", [])
    assert node is not None
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return first, node.end_lineno or node.lineno


def _name_of(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def test_the_path_has_its_stops_in_order() -> None:
    found = stops()
    assert len(found) >= 12, "docs/reading.md lost its stops"
    assert [int(m["n"]) for m in found] == list(range(1, len(found) + 1))
    marked = DOC.read_text().count("<!-- stop -->")
    assert marked == len(found), "a '<!-- stop -->' line without a well-formed stop below it"


@pytest.mark.parametrize("stop", stops(), ids=lambda m: f"{m['n']}-{m['sym']}")
def test_each_stop_names_real_lines(stop: re.Match[str]) -> None:
    first, last = span(stop["file"], stop["sym"])
    assert (int(stop["a"]), int(stop["b"])) == (first, last), (
        f"docs/reading.md stop {stop['n']}: {stop['sym']} is now at lines {first}-{last} of "
        f"{stop['file']} (run python tests/test_reading_path.py --fix)")
    assert stop["text"].endswith("."), "each stop ends with its one sentence"


def test_the_path_stays_short() -> None:
    """The point of the path: a few hundred lines out of tens of thousands."""
    total = sum(span(m["file"], m["sym"])[1] - span(m["file"], m["sym"])[0] + 1 for m in stops())
    assert total < 1200, f"the reading path grew to {total} lines; cut it or split a stop"


def fix() -> None:
    lines = DOC.read_text().splitlines()
    for i, line in enumerate(lines):
        m = STOP.match(line)
        if m:
            a, b = span(m["file"], m["sym"])
            lines[i] = line.replace(f"(lines {m['a']}-{m['b']})", f"(lines {a}-{b})", 1)
    DOC.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if "--fix" in sys.argv:
        fix()
    for m in stops():
        a, b = span(m["file"], m["sym"])
        print(f"{m['n']:>3}. {m['file']}:{a}-{b}  {m['sym']}")


def test_architecture_lists_the_passes_lower_runs() -> None:
    """docs/architecture.md's 'one build, step by step' names the passes of PASSES, in order."""
    from mlc.transform.pipeline import PASSES

    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("transform.lower", 1)[1].split("run_passes(backend.passes)", 1)[0]
    named = [w.strip() for w in block.replace("\n", " ").split(",")]
    assert named == [name for name, _ in PASSES]
