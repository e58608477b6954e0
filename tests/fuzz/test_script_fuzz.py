"""Random TVMScript programs of loops run at once (T.parallel, T.vectorized, nested,
T.thread_binding on cuda-sim) with indices read from data, each built and run three
times in a worker process and compared with the same program run serially: a racing
program must be refused (ScriptError) or checked at run time, never give another answer.
MLC_FUZZ_EXAMPLES runs more."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from script_programs import check_lowered, lowered_schedules, programs, source  # noqa: E402
from te_runner import Worker  # noqa: E402

EXAMPLES = int(os.environ.get("MLC_FUZZ_EXAMPLES", "120"))
SCRIPT_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "script_worker.py")


class ScriptWorker(Worker):
    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, SCRIPT_WORKER], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
            )  # fmt: skip
        return self.proc


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    w = ScriptWorker()
    yield w
    w.close()
    print(f"\nscript fuzzer: {dict(w.counts)}")
    for spec, verdict in w.failures[:20]:
        print(verdict, source(spec))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("MLC_FUZZ_RANDOM") is None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
    database=None,
)  # fmt: skip
@given(spec=programs())
def test_random_parallel_script_matches_its_serial_twin(worker: Worker, spec: dict) -> None:  # type: ignore[type-arg]
    verdict = worker.run(spec)
    assert verdict["status"] in ("ok", "refused", "checked"), (verdict, source(spec))


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, database=None,
          derandomize=os.environ.get("MLC_FUZZ_RANDOM") is None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=lowered_schedules())
def test_lowered_parallel_programs_read_back_and_run(spec: dict) -> None:  # type: ignore[type-arg]
    # these programs are race-free: the parse-time check must accept them
    verdict = check_lowered(spec)
    assert verdict["status"] == "ok", (verdict, spec)
