"""Random te programs (elementwise, broadcast, reduce, gather, if_then_else, casts, integer
ops; size-0/size-1 and symbolic shapes; NaN/inf/INT_MIN inputs), each built and run in a
worker process and compared with the numpy reference evaluator. ``make fuzz`` runs many
more (MLC_FUZZ_EXAMPLES)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from te_programs import programs  # noqa: E402
from te_runner import Worker  # noqa: E402

EXAMPLES = int(os.environ.get("MLC_FUZZ_EXAMPLES", "300"))


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    w = Worker()
    yield w
    w.close()
    print(f"\nte fuzzer: {dict(w.counts)}")
    for spec, verdict in w.failures[:20]:
        print(verdict, spec)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("MLC_FUZZ_RANDOM") is None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
    database=None,
)  # fmt: skip
@given(spec=programs())
def test_random_te_program_matches_numpy(worker: Worker, spec: dict) -> None:  # type: ignore[type-arg]
    verdict = worker.run(spec)
    assert verdict["status"] in ("ok", "refused", "checked"), (verdict, spec)
