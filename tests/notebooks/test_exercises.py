"""The exercises at the end of each lecture: blank ones fail their checks, solutions pass.

A source in ``notebooks/src`` with ``### BEGIN SOLUTION`` regions has exercises. Its exercise
section (from the markdown cell ``## Exercises`` to the end) must run on its own after the
notebook's first code cell, so this test runs just those cells, twice: as written (every check
must print ✓) and as the student gets them (every check must print ✗ with a hint). It also
checks that the committed student notebook is the one ``notebooks/build.py`` writes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import linecache
from pathlib import Path

import nbformat
import pytest

from mlc.testing import exercises

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
_spec = importlib.util.spec_from_file_location("notebook_build", NOTEBOOKS / "build.py")
assert _spec is not None and _spec.loader is not None
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

SOURCES = [p for p in sorted((NOTEBOOKS / "src").glob("*.py"))
           if build.has_exercises(p.read_text())]


def exercise_code(nb: nbformat.NotebookNode) -> str:
    """The first code cell (imports; IPython magics dropped) and every code cell of the
    exercise section."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    start = next((k for k, c in enumerate(nb.cells) if c.cell_type == "markdown"
                  and c.source.lstrip().startswith("## Exercises")), None)
    assert start is not None, "a notebook with exercises needs a '## Exercises' markdown cell"
    cells = [code[0]] + [c for c in nb.cells[start:] if c.cell_type == "code"]
    return "\n\n".join("\n".join(ln for ln in c.source.splitlines() if not ln.startswith("%"))
                       for c in cells)


def run_checks(source: str, label: str) -> list[exercises.Result]:
    exercises.RESULTS.clear()
    filename = f"<exercises of {label}>"  # mlc.script reads class sources through linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, filename, "exec"), {"__name__": "__main__"})  # noqa: S102
    return list(exercises.RESULTS)


def test_some_notebooks_have_exercises() -> None:
    assert len(SOURCES) >= 5


# a chapter whose checks time code runs with the `timing` tests (alone, after the parallel run)
TIMED = [pytest.param(p, marks=pytest.mark.timing) if "time_evaluator" in p.read_text()
         .split("## Exercises", 1)[-1] else p for p in SOURCES]


@pytest.mark.parametrize("src", TIMED, ids=[p.stem for p in SOURCES])
def test_solutions_pass_and_blanks_fail_with_a_hint(src: Path) -> None:
    text = src.read_text()
    solved = run_checks(exercise_code(build.parse(text)), src.name)
    assert 2 <= len(solved) <= 6, f"{src.name}: {len(solved)} checks ran; a chapter has 2 to 4"
    assert all(r.passed for r in solved), [r for r in solved if not r.passed]
    blank = run_checks(exercise_code(build.student_notebook(text)), src.name + " (student)")
    assert [r.title for r in blank] == [r.title for r in solved]
    for r in blank:
        assert not r.passed, f"{src.name}: the blank '{r.title}' passes its check"
        assert "hint:" in r.message and len(r.message) > 40, r


@pytest.mark.parametrize("src", SOURCES, ids=[p.stem for p in SOURCES])
def test_student_notebook_is_committed_and_current(src: Path) -> None:
    path = NOTEBOOKS / "student" / (src.stem + ".ipynb")
    assert path.exists(), f"run notebooks/build.py {src.stem[:2]} and commit {path}"
    committed = [c.source for c in nbformat.read(path, as_version=4).cells]
    expected = [c.source for c in build.student_notebook(src.read_text()).cells]
    assert committed == expected, f"{path.name} is stale: run notebooks/build.py {src.stem[:2]}"
    assert "BEGIN SOLUTION" not in "".join(committed)


def test_strip_solutions_keeps_the_indentation() -> None:
    src = "def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x + y\n    ### END SOLUTION\n"
    assert build.strip_solutions(src) == "def f(x):\n    y = 1\n    raise NotImplementedError()\n"
    with pytest.raises(ValueError):
        build.strip_solutions("### BEGIN SOLUTION\nx = 1\n")
