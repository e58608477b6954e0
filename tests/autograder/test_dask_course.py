"""Every assignment of the course graded on a real Dask cluster (a LocalCluster of two worker
processes) gives the local run's grades: the reference solution full marks, a blank notebook
zero. The Dask path unpacks the tests into /tmp on each worker, where the trusted replay and
program runs could not see them: a1-a6 scored 0 for everyone on a cluster (a1's solution 10
locally, 0 on a LocalCluster), while the demo assignment's test passed because its checks run
inside the grader process. This also replaces the local course runs (test_grade_course.py,
the a3/a4 runs of test_grade_a3_a4.py): the local path here grades the same notebooks."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from autograder.cli import main

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]
ASSIGNMENTS = sorted(p.name for p in (REPO / "autograder" / "tests").iterdir()
                     if (p / "tests.json").is_file())
SIZE = {"a2_gemm_schedule": ["--size", "128"], "a4_tuning": ["--size", "128"]}  # quick
SPEED = {"a2_gemm_schedule", "a4_tuning"}  # a speed decision: run with the timing tests


def _grade(name: str, blank: Path, out: Path, *where: str) -> tuple[dict, dict]:
    """Grade the reference first (it is the solution) and then the blank notebook; return the
    reference's per-test scores and the blank's gradebook row."""
    rc = main(["grade", "--assignment", name, "--out", str(out), "--timeout", "90",
               "--quiet", *SIZE.get(name, []), *where, str(blank)])
    feedback = out / "reference-check" / "feedback.md"
    assert rc == 0, feedback.read_text() if feedback.is_file() else f"exit status {rc}"
    with (out / "grades.csv").open() as f:
        [row] = list(csv.DictReader(f))
    reference = json.loads((out / "reference-check" / "results.json").read_text())
    return reference, row


@pytest.fixture(scope="module")
def cluster():
    from mlc.tune.executor import start_local_cluster

    client, cluster = start_local_cluster("local:2")
    try:
        yield cluster.scheduler_address
    finally:
        client.close()
        cluster.close()


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.timing] if n in SPEED
                                               else []) for n in ASSIGNMENTS])
def test_the_reference_and_a_blank_grade_on_a_cluster_as_locally(name, cluster, tmp_path):
    """On each path the reference solution is graded first (it must get full marks or the
    run stops), then a blank notebook; the course's solutions full marks, blanks zero, and
    every test's points the same on the cluster as in local jobs."""
    blank = Path(shutil.copyfile(REPO / "assignments" / name / f"{name}.ipynb",
                                 tmp_path / "blank.ipynb"))
    ref_dask, blank_dask = _grade(name, blank, tmp_path / "dask", "--scheduler", cluster)
    ref_local, blank_local = _grade(name, blank, tmp_path / "local", "--jobs", "2")
    assert ref_dask["score"] == ref_dask["max_score"] > 0
    assert [(t["name"], t["score"]) for t in ref_dask["tests"]] == \
        [(t["name"], t["score"]) for t in ref_local["tests"]]
    assert float(blank_dask["score"]) == 0.0 and blank_dask["status"] == "ok"
    assert blank_dask == blank_local
