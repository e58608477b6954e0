"""Build the lecture notebooks from their sources in ``notebooks/src`` and run them.

    .venv/bin/python notebooks/build.py                 # all of them
    .venv/bin/python notebooks/build.py 02 04           # the ones whose names start so
    .venv/bin/python notebooks/build.py --no-execute 01 # write the .ipynb only

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
                tags = ast.literal_eval(header.split("=", 1)[1]) if header.startswith("tags") else []
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


def build(src: Path, execute: bool = True) -> Path:
    out = HERE / (src.stem + ".ipynb")
    nbformat.write(parse(src.read_text()), out)
    if execute:
        jupyter = Path(sys.executable).parent / "jupyter"
        subprocess.run(
            [str(jupyter), "nbconvert", "--to", "notebook", "--execute", "--inplace",
             "--ExecutePreprocessor.timeout=300", str(out)],
            check=True, cwd=HERE,
        )
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
