"""Tuning on a Dask cluster: the same configs measured as locally, each exactly once, even when
a worker dies mid-run; timings hold the machine's timing lock; an unreachable scheduler fails
fast. A real LocalCluster: two worker processes on the loopback interface."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from mlc import tune
from mlc.errors import ClusterError
from mlc.examples.tuning import MATMUL
from mlc.tune.executor import DaskExecutor, start_local_cluster, timing_lock
from mlc.tune.measure import Measurer

pytest.importorskip("distributed")

TRIALS = 32


@pytest.fixture(scope="module")
def client():
    client, cluster = start_local_cluster("local:2")
    yield client
    client.close()
    cluster.close()


def _configs(log) -> list[int]:
    return [json.loads(line)["config"]["index"] for line in log.read_text().splitlines()]


def _tune(task, option, log) -> tune.Tuner:
    tuner = tune.RandomTuner(task, seed=0)
    tuner.tune(TRIALS, measure_option=option, callbacks=[tune.callback.log_to_file(log)])
    return tuner


@pytest.fixture(scope="module")
def local_configs(tmp_path_factory) -> list[int]:
    task = tune.create_task(MATMUL, args=(16, "float32"))
    log = tmp_path_factory.mktemp("local") / "local.json"
    _tune(task, tune.measure_option(number=1, timeout=20), log)
    return _configs(log)


@pytest.mark.timeout(120)
def test_tuning_on_two_workers_measures_what_a_local_run_measures(
        client, matmul_task, local_configs, tmp_path):
    option = tune.measure_option(number=1, timeout=20, runner=tune.DaskRunner(client))
    assert option.n_parallel == 2
    tuner = _tune(matmul_task, option, tmp_path / "dask.json")
    assert _configs(tmp_path / "dask.json") == local_configs
    assert len(set(local_configs)) == TRIALS
    assert all(r.ok for r in tuner.results), [r.error for r in tuner.results if not r.ok]


@pytest.mark.timeout(180)
def test_a_worker_killed_mid_tuning_loses_no_trial_and_measures_none_twice(
        client, matmul_task, local_configs, tmp_path):
    pids = client.run(os.getpid)
    killed: list[str] = []

    def kill_a_busy_worker() -> None:  # SIGKILL, as the kernel's OOM killer would
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            busy = [w for w, tasks in client.processing().items() if tasks and w in pids]
            if busy:
                killed.append(busy[0])
                os.kill(pids[busy[0]], signal.SIGKILL)
            time.sleep(0.005)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    option = tune.measure_option(number=1, timeout=20, runner=tune.DaskRunner(client))
    tuner = _tune(matmul_task, option, tmp_path / "dask.json")
    killer.join()
    assert killed, "no worker was busy long enough to be killed"
    assert _configs(tmp_path / "dask.json") == local_configs  # every trial once, none twice
    assert all(r.ok for r in tuner.results), [r.error for r in tuner.results if not r.ok]
    client.wait_for_workers(2, timeout=30)  # the nanny started a new one
    assert killed[0] not in client.scheduler_info()["workers"]


@pytest.mark.timeout(120)
def test_bad_candidates_cost_a_trial_on_the_cluster_never_a_worker(client):
    from test_measure import _crashing, _scale

    workers = set(client.scheduler_info()["workers"])
    option = tune.measure_option(number=1, timeout=5.0, runner=tune.DaskRunner(client))
    with Measurer(_scale(2.0), option, key="scale") as m:
        good, crash, wrong, good_again = m.measure(
            [_scale(2.0), _crashing(), _scale(3.0), _scale(2.0)])
    assert good.ok and good_again.ok
    assert crash.error is not None and crash.error.startswith("crash")
    assert wrong.error is not None and wrong.error.startswith("wrong answer in B")
    assert set(client.scheduler_info()["workers"]) == workers  # no Dask worker died


@pytest.mark.timeout(60)
def test_waiting_for_the_timing_lock_does_not_count_against_the_timeout(
        matmul_task, tmp_path, monkeypatch):
    monkeypatch.setenv("MLC_TIMING_LOCK", str(tmp_path / "timing.lock"))
    space = tune.Tuner(matmul_task).space
    option = tune.measure_option(number=1, timeout=2.0)
    with Measurer(space.reference(), option, space.target, space.key) as m:
        m.measure([space.build(0)])  # start the worker process (imports, reference)
        results: list = []
        with timing_lock():
            runner = threading.Thread(target=lambda: results.extend(m.measure([space.build(1)])))
            runner.start()
            time.sleep(3.0)  # longer than the timeout: the candidate waits for the lock
            assert runner.is_alive(), "timed while another process held the timing lock"
        runner.join()
    assert results[0].ok, results[0].error


def test_an_unreachable_scheduler_is_a_clear_error_at_once():
    start = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler"):
        DaskExecutor.connect("tcp://127.0.0.1:9", timeout=2.0)
    with pytest.raises(ClusterError, match="local:N"):
        tune.DaskRunner("local:two")
    assert time.monotonic() - start < 15
