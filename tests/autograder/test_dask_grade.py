"""Grading on a Dask cluster: a dozen submissions on two workers of a real LocalCluster, one
worker SIGKILLed while it grades, give the local run's grades, one row per student; every
job still runs in the sandbox; an unreachable scheduler stops the run at once."""

from __future__ import annotations

import csv
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import copy, variant

from autograder.cli import main
from mlc.tune.executor import start_local_cluster

pytest.importorskip("distributed")

FIRST_TEST = 3  # indices of the test cells in the demo notebook
SOFTMAX_TEST = 5
# Full marks only if the job cannot see the grader's files: the hidden tests, the folder a
# Dask worker unpacks a job into, and (as root) only if it runs under its own user id.
SNOOP = """
import glob, os
seen = glob.glob('{tests}/**/*.py', recursive=True) + glob.glob('/tmp/ag-shipped-*')
if seen or os.getuid() == 0:
    def add_scaled(a, b, alpha):
        return a
"""
WRONG_SOFTMAX = "def row_softmax(x):\n    return x"


def _grade(subs: list[Path], tests: Path, out: Path, *where: str) -> tuple[int, dict]:
    rc = main(["grade", "--assignment", "demo_numpy", "--tests", str(tests), "--out", str(out),
               "--timeout", "10", "--memory-mb", "3072", "--quiet", *where, *map(str, subs)])
    with (out / "grades.csv").open() as f:
        rows = list(csv.DictReader(f))
    return rc, rows


@pytest.fixture(scope="module")
def variants(demo, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("variants")
    sol = demo["solution"]
    return {
        "solution": copy(sol, d / "solution.ipynb"),
        "blank": copy(demo["blank"], d / "blank.ipynb"),
        "partial": variant(sol, d / "partial.ipynb", insert={SOFTMAX_TEST: WRONG_SOFTMAX}),
        "snoop": variant(sol, d / "snoop.ipynb",
                         insert={FIRST_TEST: SNOOP.format(tests=demo["tests"])}),
    }


@pytest.fixture(scope="module")
def local_rows(demo, variants, tmp_path_factory) -> dict[str, dict]:
    rc, rows = _grade(list(variants.values()), demo["tests"], tmp_path_factory.mktemp("local"),
                      "--jobs", "2")
    assert rc == 0
    return {r["student"]: r for r in rows}


@pytest.mark.timeout(240)
def test_a_dozen_on_two_workers_one_killed_grade_as_locally(demo, variants, local_rows,
                                                            tmp_path):
    assert [local_rows[k]["score"] for k in variants] == ["5", "0", "2", "5"]
    subs = [copy(variants[kind], tmp_path / "subs" / f"{kind}_{n}.ipynb")
            for n in range(3) for kind in variants]
    client, cluster = start_local_cluster("local:2")
    pids = client.run(os.getpid)
    killed: list[str] = []

    def kill_a_busy_worker() -> None:  # SIGKILL mid-job, as the kernel's OOM killer would
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            busy = [w for w, tasks in client.processing().items() if tasks and w in pids]
            if busy:
                time.sleep(1.0)  # well inside the job: its notebook is running
                killed.append(busy[0])
                os.kill(pids[busy[0]], signal.SIGKILL)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    try:
        rc, rows = _grade(subs, demo["tests"], tmp_path / "out",
                          "--scheduler", cluster.scheduler_address)
    finally:
        killer.join()
        client.close()
        cluster.close()
    assert killed, "no worker was killed"
    assert rc == 0
    assert sorted(r["student"] for r in rows) == sorted(p.stem for p in subs)  # once each
    for row in rows:
        local = local_rows[row["student"].rsplit("_", 1)[0]]
        assert {k: v for k, v in row.items() if k != "student"} == \
            {k: v for k, v in local.items() if k != "student"}, row["student"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == \
        sorted([*(p.stem for p in subs), "reference-check"])  # the reference, graded first


def test_an_unreachable_scheduler_stops_the_run_at_once(demo, variants, tmp_path, capsys):
    start = time.monotonic()
    rc = main(["grade", "--assignment", "demo_numpy", "--tests", str(demo["tests"]),
               "--out", str(tmp_path), "--scheduler", "tcp://127.0.0.1:9",
               "--connect-timeout", "2", "--quiet", str(variants["solution"])])
    assert rc == 3
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err
    assert time.monotonic() - start < 15
    assert not (tmp_path / "grades.csv").exists()


def test_a_worker_on_the_graders_machine_hides_the_original_tests_folder(demo, tmp_path):
    """A Dask job is graded from the copy it unpacks; the instructor's own tests folder, the
    reference and the output folder must stay hidden too when the worker shares the grader's
    file system (a LocalCluster, a shared mount): only the unpacked copy was hidden, so a
    tests folder outside /tmp and the homes (/srv/hidden, say) was readable by the notebook."""
    import shutil
    import tempfile

    base = Path("/srv") if os.access("/srv", os.W_OK) else Path(__file__).resolve().parents[2]
    tests = Path(tempfile.mkdtemp(prefix="ag-hidden-", dir=base))
    try:
        shutil.copytree(demo["tests"], tests, dirs_exist_ok=True)
        snoop = variant(demo["solution"], tmp_path / "subs" / "snoop.ipynb",
                        insert={FIRST_TEST: SNOOP.format(tests=tests)})
        client, cluster = start_local_cluster("local:1")
        try:
            rc, rows = _grade([snoop], tests, tmp_path / "out",
                              "--scheduler", cluster.scheduler_address)
        finally:
            client.close()
            cluster.close()
        assert rc == 0 and rows[0]["score"] == "5", rows
    finally:
        shutil.rmtree(tests, ignore_errors=True)
