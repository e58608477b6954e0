"""mlc.nd: TVM's array-and-device spelling over numpy arrays."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import ArgumentError


def test_nd_arrays_call_compiled_functions() -> None:
    dev = mlc.cpu(0)
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B], name="add_one")
    a = mlc.nd.array(np.arange(8, dtype="float32"), dev)
    b = mlc.nd.empty((8,), "float32", dev)
    f(a, b)
    np.testing.assert_equal(b.numpy(), np.arange(8) + 1)
    np.testing.assert_equal(b.asnumpy(), b.numpy())
    assert type(b.numpy()) is np.ndarray and b.device == dev
    assert repr(dev) == "cpu(0)"
    assert type(pickle.loads(pickle.dumps(b))) is np.ndarray  # plain data across processes
    c = mlc.nd.empty((8,), "float32").copyfrom(np.ones(8))
    np.testing.assert_equal(c.numpy(), 1)
    with pytest.raises(ArgumentError, match="shape"):
        c.copyfrom(np.ones(3))
    with pytest.raises(ArgumentError, match="device"):
        mlc.nd.array([1.0], "cpu")
    with pytest.raises(ArgumentError, match="index"):
        mlc.cpu(-1)
