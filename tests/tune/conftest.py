"""The template shared by the tuning tests: mlc.examples.tuning's small matmul with a few knobs."""

from __future__ import annotations

import pytest

from mlc import tune
from mlc.examples.tuning import MATMUL


@pytest.fixture
def matmul_task():
    return tune.create_task(MATMUL, args=(16, "float32"))
