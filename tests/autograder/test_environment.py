"""binder/environment.yml and environment.yml list what pyproject.toml depends on."""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]

# pip name -> conda-forge name, where they differ
PIP_TO_CONDA = {"xgboost-cpu": "py-xgboost-cpu", "xgboost": "py-xgboost-cpu",
                "graphviz": "python-graphviz"}
# conda-only packages (no pip counterpart in pyproject) and the interpreter
CONDA_ONLY = {"python", "graphviz", "pip"}
# pip-only developer tools that the course environment does not need
COURSE_EXTRAS = ("dev", "notebook")
PIP_ONLY = {"ruff", "mypy", "pytest-xdist", "pytest-timeout", "playwright"}


def _pip_names() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in COURSE_EXTRAS:  # frontends/bench/cuda extras are optional, not in the course
        reqs += project["optional-dependencies"][extra]
    names = {re.split(r"[<>=!;\[ ]", r, maxsplit=1)[0].strip().lower() for r in reqs}
    return {PIP_TO_CONDA.get(n, n) for n in names} - {PIP_TO_CONDA.get(n, n) for n in PIP_ONLY}


def _conda_names(path: Path) -> set[str]:
    names = set()
    in_deps = False
    for line in path.read_text().splitlines():
        if line.startswith("dependencies:"):
            in_deps = True
            continue
        if in_deps and re.match(r"^\s+-\s+[A-Za-z]", line):
            names.add(re.split(r"[<>=! ]", line.strip()[2:].strip(), maxsplit=1)[0].lower())
        elif in_deps and line and not line.startswith(" "):
            in_deps = False
    return names


def test_binder_and_top_level_environments_are_the_same():
    assert _conda_names(REPO / "binder" / "environment.yml") == _conda_names(
        REPO / "environment.yml")


def test_environment_lists_the_pyproject_dependencies():
    conda = _conda_names(REPO / "environment.yml") - CONDA_ONLY
    assert conda == _pip_names()


def test_postbuild_installs_the_package():
    text = (REPO / "binder" / "postBuild").read_text()
    assert "pip install" in text and "-e ." in text
