"""Helpers for the autograder's tests: a numpy-only demo assignment and hostile notebooks."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.generate import generate

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generate the demo assignment into a temporary tree; return its paths."""
    root = tmp_path_factory.mktemp("demo")
    generate("demo_numpy", FIXTURES / "instructor", root / "assignments", root / "tests")
    # the reference solution `grade` grades before the class (autograder.reference)
    shutil.copyfile(FIXTURES / "instructor" / "demo_numpy" / "demo_numpy.ipynb",
                    root / "tests" / "demo_numpy" / "reference.ipynb")
    return {
        "root": root,
        "tests": root / "tests",
        "solution": FIXTURES / "instructor" / "demo_numpy" / "demo_numpy.ipynb",
        "blank": root / "assignments" / "demo_numpy" / "demo_numpy.ipynb",
    }


def variant(src: Path, dest: Path, insert: dict[int, str] | None = None,
            replace: dict[int, str] | None = None) -> Path:
    """Copy notebook ``src`` to ``dest`` with cells inserted before / replaced at indices."""
    nb = nbformat.read(str(src), as_version=4)
    for index, source in (replace or {}).items():
        nb.cells[index].source = source
    for index, source in sorted((insert or {}).items(), reverse=True):
        nb.cells.insert(index, nbformat.v4.new_code_cell(source))
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))
    return dest


def copy(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest
