"""Wall times of grading and tuning on a local pool and on a Dask LocalCluster, and what a
worker killed mid-run costs.

    python benchmarks/dask_scaling.py [--students 12] [--trials 32] [--out FILE.json]

Grading: the demo assignment (tests/autograder/fixtures) for a class of ``--students``
notebooks (full marks, blank, half right, in turn), with ``--jobs 1``, ``--jobs 2``, on 1 and
2 Dask workers, and on 2 workers with one SIGKILLed mid-job. Tuning: ``--trials`` random
trials of a 64 x 64 matmul template, locally and on 1 and 2 Dask workers, and on 2 workers
with one killed. Every run checks that each submission / trial is accounted for once.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.cli import main as grader  # noqa: E402
from autograder.generate import generate  # noqa: E402
from mlc import tune  # noqa: E402
from mlc.examples.tuning import MATMUL  # noqa: E402
from mlc.tune.executor import start_local_cluster  # noqa: E402

FIXTURES = ROOT / "tests" / "autograder" / "fixtures" / "instructor"


class Killer(threading.Thread):
    """SIGKILL one busy worker of ``client`` after ``delay`` seconds of its first task."""

    def __init__(self, client: Any, delay: float) -> None:
        super().__init__()
        self.client, self.delay, self.killed = client, delay, ""
        self.pids = client.run(os.getpid)

    def run(self) -> None:
        deadline = time.monotonic() + 300
        while not self.killed and time.monotonic() < deadline:
            busy = [w for w, t in self.client.processing().items() if t and w in self.pids]
            if busy:
                time.sleep(self.delay)
                self.killed = busy[0]
                os.kill(self.pids[busy[0]], signal.SIGKILL)
            time.sleep(0.005)


def _class(root: Path, students: int) -> tuple[Path, list[Path]]:
    tests = root / "tests"
    generate("demo_numpy", FIXTURES, root / "assignments", tests)
    sol = FIXTURES / "demo_numpy" / "demo_numpy.ipynb"
    blank = root / "assignments" / "demo_numpy" / "demo_numpy.ipynb"
    half = nbformat.read(str(sol), as_version=4)
    half.cells.insert(5, nbformat.v4.new_code_cell("def row_softmax(x):\n    return x"))
    nbformat.write(half, str(root / "half.ipynb"))
    kinds = [sol, blank, root / "half.ipynb"]
    subs = []
    for n in range(students):
        dest = root / "subs" / f"student{n:03d}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kinds[n % 3], dest)
        subs.append(dest)
    return tests, subs


def bench_grading(root: Path, students: int) -> dict[str, Any]:
    tests, subs = _class(root, students)
    runs: dict[str, Any] = {}
    reference: list[dict[str, str]] | None = None

    def grade(name: str, *where: str, kill: bool = False, workers: int = 0) -> None:
        nonlocal reference
        out = root / f"out-{name}"
        client = cluster = killer = None
        if workers:
            client, cluster = start_local_cluster(f"local:{workers}")
            where = ("--scheduler", cluster.scheduler_address)
            if kill:
                killer = Killer(client, delay=1.0)
                killer.start()
        start = time.perf_counter()
        rc = grader(["grade", "--assignment", "demo_numpy", "--tests", str(tests), "--out",
                     str(out), "--timeout", "30", "--quiet", *where, *map(str, subs)])
        wall = time.perf_counter() - start
        if killer is not None:
            killer.join()
        if client is not None:
            client.close()
            cluster.close()
        with (out / "grades.csv").open() as f:
            rows = list(csv.DictReader(f))
        reference = reference or rows
        runs[name] = {"wall_s": round(wall, 2), "rc": rc, "rows": len(rows),
                      "per_submission_s": round(wall / len(subs), 2),
                      "same_as_local": rows == reference,
                      **({"killed": killer.killed} if killer is not None else {})}
        print(f"grading {name}: {runs[name]}", flush=True)

    grade("local --jobs 1", "--jobs", "1")
    grade("local --jobs 2", "--jobs", "2")
    grade("dask 1 worker", workers=1)
    grade("dask 2 workers", workers=2)
    grade("dask 2 workers, one killed", workers=2, kill=True)
    return runs


def bench_tuning(root: Path, trials: int) -> dict[str, Any]:
    task = tune.create_task(MATMUL, args=(64, "float32"))
    runs: dict[str, Any] = {}
    reference: list[int] | None = None

    def run(name: str, workers: int = 0, kill: bool = False) -> None:
        nonlocal reference
        client = cluster = killer = None
        runner = None
        if workers:
            client, cluster = start_local_cluster(f"local:{workers}")
            runner = tune.DaskRunner(client)
        option = tune.measure_option(number=3, timeout=20, runner=runner)
        log = root / f"tune-{name.replace(' ', '_').replace(',', '')}.json"
        if kill:
            killer = Killer(client, delay=0.0)
            killer.start()
        start = time.perf_counter()
        tuner = tune.RandomTuner(task, seed=0)
        tuner.tune(trials, measure_option=option, callbacks=[tune.callback.log_to_file(log)])
        wall = time.perf_counter() - start
        if killer is not None:
            killer.join()
        if client is not None:
            client.close()
            cluster.close()
        configs = [json.loads(line)["config"]["index"] for line in log.read_text().splitlines()]
        reference = reference or configs
        runs[name] = {"wall_s": round(wall, 2), "trials": len(configs),
                      "distinct": len(set(configs)), "same_configs_as_local": configs == reference,
                      "errors": sum(not r.ok for r in tuner.results),
                      "best_gflops": round(tuner.best_flops / 1e9, 1),
                      **({"killed": killer.killed} if killer is not None else {})}
        print(f"tuning {name}: {runs[name]}", flush=True)

    run("local 1 process")
    run("dask 1 worker", workers=1)
    run("dask 2 workers", workers=2)
    run("dask 2 workers, one killed", workers=2, kill=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dask_scaling.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {"cpus": len(os.sched_getaffinity(0)),
                   "load_before": os.getloadavg()[0],
                   "tuning": bench_tuning(Path(tmp), args.trials),
                   "grading": bench_grading(Path(tmp), args.students)}
    results["load_after"] = os.getloadavg()[0]
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
