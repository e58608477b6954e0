"""Build the lecture notebooks from their sources in ``notebooks/src`` and run them.

    .venv/bin/python notebooks/build.py                 # all of them
    .venv/bin/python notebooks/build.py 02 04           # the ones whose names start so
    .venv/bin/python notebooks/build.py --no-execute 01 # the student notebook only (the
                                                        # solved one is kept, not run)

Each source gives the executed notebook: ``notebooks/NN_name.ipynb``, executed, with the exercises
solved (what nbval runs and GitHub shows), and ``notebooks/student/NN_name.ipynb``, without
outputs, where every region between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is
replaced by ``raise NotImplementedError()`` (what ``make lab`` opens); the student notebook
keeps the outputs of every cell before ``## Exercises`` whose source is the solved one's, so
GitHub and nbviewer show its pictures before anything runs. See
``notebooks/README.md`` for how to write an exercise.

A source is a Python file in "percent" format: ``# %% [markdown]`` starts a markdown cell
(each line's leading ``# `` is dropped), ``# %%`` a code cell, and ``# %% tags=["a", "b"]``
gives a code cell tags (``nbval-ignore-output`` for outputs that vary from run to run).
Executed notebooks are committed with their outputs, so they read well on GitHub and nbval
has something to compare.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
STUDENT = HERE / "student"
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"


def strip_solutions(text: str) -> str:
    """The student's source: each solution region becomes ``raise NotImplementedError()``
    at the indentation of its ``### BEGIN SOLUTION`` line (the assignments' convention)."""
    out: list[str] = []
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if inside:
                raise ValueError(f"line {number}: {BEGIN_SOLUTION} inside a solution")
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + "raise NotImplementedError()")
        elif marker == END_SOLUTION:
            if not inside:
                raise ValueError(f"line {number}: {END_SOLUTION} without a {BEGIN_SOLUTION}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN_SOLUTION} without an {END_SOLUTION}")
    return "\n".join(out) + "\n"


def has_exercises(text: str) -> bool:
    return BEGIN_SOLUTION in text


def parse(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    cells: list[tuple[str, list[str], list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            header = line[4:].strip()
            if header.startswith("[markdown]"):
                cells.append(("markdown", [], []))
            else:
                tags = (ast.literal_eval(header.split("=", 1)[1]) if header.startswith("tags")
                        else [])
                cells.append(("code", [], list(tags)))
        elif cells:
            cells[-1][1].append(line)
    for kind, lines, tags in cells:
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "markdown":
            src = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in lines)
            nb.cells.append(nbformat.v4.new_markdown_cell(src))
        else:
            cell = nbformat.v4.new_code_cell("\n".join(lines))
            if tags:
                cell.metadata["tags"] = tags
            nb.cells.append(cell)
    for k, cell in enumerate(nb.cells):  # stable ids keep diffs small
        cell["id"] = f"cell-{k:02d}"
    return nb


def student_notebook(text: str) -> nbformat.NotebookNode:
    """The blank version of a source: solutions stubbed, no outputs (nothing is run)."""
    return parse(strip_solutions(text))


def failed_checks(nb: nbformat.NotebookNode) -> list[str]:
    """The lines of ``✗`` verdicts that exercise checks printed in an executed notebook."""
    return [line for cell in nb.cells if cell.cell_type == "code"
            for o in cell.get("outputs", []) for line in o.get("text", "").splitlines()
            if line.startswith("✗ ")]


def exercises_start(nb: nbformat.NotebookNode) -> int:
    """The index of the ``## Exercises`` markdown cell (the number of cells if none)."""
    return next((k for k, c in enumerate(nb.cells) if c.cell_type == "markdown"
                 and c.source.lstrip().startswith("## Exercises")), len(nb.cells))


def carry_outputs(student: nbformat.NotebookNode, solved: nbformat.NotebookNode) -> None:
    """Give the student notebook the solved one's outputs for the cells before the
    exercises whose source is the same (the lecture's cells; exercises stay blank)."""
    for k in range(min(exercises_start(student), exercises_start(solved))):
        mine, theirs = student.cells[k], solved.cells[k]
        if mine.cell_type == theirs.cell_type == "code" and mine.source == theirs.source:
            mine.outputs = theirs.get("outputs", [])
            mine.execution_count = theirs.get("execution_count")


def write_student(text: str, out: Path) -> None:
    """The student notebook of a source, with the lecture outputs of ``out`` if it exists."""
    STUDENT.mkdir(exist_ok=True)
    nb = student_notebook(text)
    if out.exists():
        carry_outputs(nb, nbformat.read(out, as_version=4))
    nbformat.write(nb, STUDENT / out.name)


def build(src: Path, execute: bool = True) -> Path:
    text = src.read_text()
    out = HERE / (src.stem + ".ipynb")
    if execute or not out.exists():
        nbformat.write(parse(text), out)
    write_student(text, out)
    if execute:
        jupyter = Path(sys.executable).parent / "jupyter"
        subprocess.run(
            [str(jupyter), "nbconvert", "--to", "notebook", "--execute", "--inplace",
             "--ExecutePreprocessor.timeout=300", str(out)],
            check=True, cwd=HERE,
        )
        failed = failed_checks(nbformat.read(out, as_version=4))
        if failed:
            raise SystemExit(f"{out.name}: a solution fails its check:\n" + "\n".join(failed))
        write_student(text, out)
    return out


def main(argv: list[str]) -> None:
    execute = "--no-execute" not in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    for src in sorted((HERE / "src").glob("*.py")):
        if not prefixes or any(src.stem.startswith(p) for p in prefixes):
            print("building", src.stem, flush=True)
            build(src, execute)


if __name__ == "__main__":
    main(sys.argv[1:])
