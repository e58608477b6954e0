"""mlc: a small machine-learning compiler for teaching."""

# Load the ``mlc.lower`` package before the name ``mlc.lower`` is rebound to the driver
# function below (its passes stay importable as ``from mlc.lower import ...``).
from mlc import lower as _lower_package  # noqa: F401, E402
from mlc import tir  # noqa: E402
from mlc.driver import build, lower  # noqa: E402

try:  # noqa: SIM105
    from mlc import te  # noqa: F401
except ImportError:  # pragma: no cover - te is written separately
    pass
