"""Two Python threads calling modules that call packed functions at once: each call keeps
its own record of what its packed functions raised. With one record for the process, a
call starting in another thread cleared a failed call's error, which then returned its
partial output as if all went well."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import PackedFuncError
from mlc.runtime import registry

N = 1 << 22  # the slow stage after the failed call: long enough for the other thread's call


@pytest.fixture
def names():
    registered: list[str] = []
    yield registered
    for n in registered:
        registry.remove_global_func(n)


def _extern_then(name: str, slow: bool):
    A = te.placeholder((N if slow else 8,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed(name, ins[0], outs[0]),
                  name="B")
    if slow:  # a few passes over 16 MiB after the packed call
        C = te.compute(A.shape, lambda i: te.exp(B[i]) * te.log(B[i] + 2.0) + te.sqrt(B[i] + 1.0),
                       name="C")
    else:
        C = te.compute(A.shape, lambda i: B[i] + 1.0, name="C")
    return mlc.build(te.create_schedule(C.op), [A, C])


def test_a_failed_call_keeps_its_error_while_another_thread_calls(names):
    failed = threading.Event()

    def fail(x: np.ndarray, y: np.ndarray) -> None:
        failed.set()
        raise ValueError("the callback gave up")

    mlc.register_func("test.threads.fail", fail)
    mlc.register_func("test.threads.copy", lambda x, y: np.copyto(y, x))
    names.extend(["test.threads.fail", "test.threads.copy"])
    slow = _extern_then("test.threads.fail", slow=True)
    fast = _extern_then("test.threads.copy", slow=False)
    got: dict[str, object] = {}

    def a() -> None:
        x = np.ones(N, "float32")
        try:
            slow(x, np.zeros(N, "float32"))
            got["a"] = "returned"
        except PackedFuncError as err:
            got["a"] = str(err)

    def b() -> None:
        failed.wait(10)
        for _ in range(3):  # while a's slow stage runs
            x = np.arange(8, dtype="float32")
            y = np.zeros(8, "float32")
            fast(x, y)
            got.setdefault("b", []).append(y.tolist())  # type: ignore[union-attr]

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "packed function 'test.threads.fail'" in str(got["a"]), got["a"]
    assert "ValueError: the callback gave up" in str(got["a"])
    assert got["b"] == [[float(v) + 1 for v in range(8)]] * 3
