"""A hostile student calls a compiled Module: keywords, masked arrays, pickling, threads,
packed functions that call the module again. Each must end in the numpy answer or a typed
error (an MLCError) that names the thing and says what would work."""

from __future__ import annotations

import copy
import math
import pickle
import threading
from collections.abc import Iterator

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import (
    ArgumentError,
    ArgumentTypeError,
    IntegerDivisionError,
    MLCTypeError,
    PackedFuncError,
)
from mlc.runtime import Module, registry

N = 64


@pytest.fixture(scope="module")
def add() -> Module:
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")
    C = te.compute((N,), lambda i: A[i] + B[i], name="C")
    return mlc.build([A, B, C])


def _abc() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.arange(N, dtype=np.float32)
    return a, np.ones(N, np.float32), np.zeros(N, np.float32)


def _divide(n: int = N) -> Module:
    A = te.placeholder((n,), name="A", dtype="int32")
    B = te.placeholder((n,), name="B", dtype="int32")
    C = te.compute((n,), lambda i: A[i] // B[i], name="C")
    return mlc.build([A, B, C])


@pytest.mark.parametrize("how", ["call", "bind", "time_evaluator"])
def test_keyword_arguments_are_refused_by_name(add: Module, how: str) -> None:
    a, b, c = _abc()
    call = {"call": add, "bind": add.bind,
            "time_evaluator": add.time_evaluator(number=1, repeat=1)}[how]
    with pytest.raises(ArgumentTypeError, match=r"by position.*got the keyword\(s\) C="):
        call(a, b, C=c)


def test_a_masked_input_is_refused_not_computed_through_its_mask(add: Module) -> None:
    a, b, c = _abc()
    masked = np.ma.masked_array(a, mask=a > 10)
    with pytest.raises(ArgumentTypeError, match=r"argument 0 'A' is a masked array.*filled"):
        add(masked, b, c)
    assert not c.any()  # nothing ran


def test_a_masked_output_is_refused(add: Module) -> None:
    a, b, _ = _abc()
    out = np.ma.masked_array(np.zeros(N, np.float32), mask=True)
    with pytest.raises(ArgumentTypeError, match="argument 2 'C' is a masked array"):
        add(a, b, out)
    with pytest.raises(ArgumentTypeError, match="argument 2 'C' is a masked array"):
        add.bind(a, b, out)


def test_other_ndarray_subclasses_still_run(add: Module) -> None:
    """np.matrix and np.memmap hold their elements as data: they are fine."""
    M = te.placeholder((4, 4), name="M")
    T = te.compute((4, 4), lambda i, j: M[i, j] * 2.0, name="T")
    f = mlc.build([M, T])
    m = np.matrix(np.arange(16, dtype=np.float32).reshape(4, 4))
    out = np.zeros((4, 4), np.float32)
    f(m, out)
    np.testing.assert_array_equal(out, np.asarray(m) * 2)


def test_pickling_a_module_is_a_typed_error(add: Module) -> None:
    with pytest.raises(MLCTypeError, match=r"cannot be pickled.*mlc.lower"):
        pickle.dumps(add)
    # a copy is the same compiled function
    assert copy.copy(add) is add and copy.deepcopy(add) is add


def test_time_evaluator_refuses_an_infinite_min_repeat_ms(add: Module) -> None:
    """It was an OverflowError from math.ceil, after the first repeat."""
    a, b, c = _abc()
    with pytest.raises(ArgumentError, match="min_repeat_ms=inf must be a finite number"):
        add.time_evaluator(min_repeat_ms=math.inf)(a, b, c)


def test_threads_calling_one_module_keep_their_own_division_error() -> None:
    """The module's error record is one per module: a thread clearing it before its own call
    erased the failure another thread's call had just recorded, and that call returned its
    partial output without an error (5 of 2000 calls did). The zero is the first divisor,
    so the whole of the failing call is the window in which the other thread clears."""
    n = 1 << 16
    f = _divide(n)
    a = np.arange(n, dtype=np.int32)
    good = np.ones(n, np.int32)
    bad = np.ones(n, np.int32)
    bad[0] = 0
    wrong: list[str] = []

    def worker(b: np.ndarray, expect_error: bool) -> None:
        c = np.zeros(n, np.int32)
        for _ in range(1000):
            try:
                f(a, b, c)
                if expect_error:
                    wrong.append("a division by zero returned without an error")
            except IntegerDivisionError:
                if not expect_error:
                    wrong.append("a good call raised another call's error")
            if not expect_error:
                np.testing.assert_array_equal(c, a)

    threads = [threading.Thread(target=worker, args=(good, False)),
               threading.Thread(target=worker, args=(bad, True))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


@pytest.fixture
def registered() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        registry.remove_global_func(name)


def test_a_packed_function_that_calls_its_module_again_keeps_the_outer_error(
    registered: list[str],
) -> None:
    """``C = A // B`` (checked), then a packed function on C that calls the same module on
    good arrays. The inner call cleared the record, so the outer division by zero vanished."""
    A = te.placeholder((8,), name="A", dtype="int32")
    B = te.placeholder((8,), name="B", dtype="int32")
    C = te.compute((8,), lambda i: A[i] // B[i], name="C")
    D = te.extern((8,), [C], lambda ins, outs: tir.call_packed("h3.again", ins[0], outs[0]),
                  name="D", dtype="int32")
    inner: list[np.ndarray] = []

    def again(c: np.ndarray, d: np.ndarray) -> None:
        d[:] = c
        if not inner:
            inner.append(np.zeros(8, np.int32))
            f(np.arange(8, dtype=np.int32), np.ones(8, np.int32), inner[0])

    registered.append("h3.again")
    mlc.register_func("h3.again", again)
    f = mlc.build([A, B, D])
    b = np.ones(8, np.int32)
    b[3] = 0
    with pytest.raises(IntegerDivisionError, match="divisor 0"):
        f(np.arange(8, dtype=np.int32), b, np.zeros(8, np.int32))
    np.testing.assert_array_equal(inner[0], np.arange(8))  # the inner call ran, and right
    out = np.zeros(8, np.int32)
    f(np.arange(8, dtype=np.int32), np.full(8, 2, np.int32), out)  # no stale error after
    np.testing.assert_array_equal(out, np.arange(8) // 2)


def test_a_packed_function_that_keeps_its_buffer_is_told_to_copy(registered: list[str]) -> None:
    """The array a packed function gets is a window on the compiled code's memory; the
    intermediate T is freed when the call ends. Kept in a list, it read garbage after the
    call, and for a T of 80 MB (freed with munmap) reading it ended the process (SIGSEGV)."""
    kept: list[np.ndarray] = []

    def keep(x: np.ndarray, y: np.ndarray) -> None:
        y[:] = x
        kept.append(x)

    def copy_it(x: np.ndarray, y: np.ndarray) -> None:
        y[:] = x
        kept.append(x.copy())

    A = te.placeholder((N,), name="A")
    T = te.compute((N,), lambda i: A[i] + 1.0, name="T")
    for name, fn in (("h3.keep", keep), ("h3.copy", copy_it)):
        registered.append(name)
        mlc.register_func(name, fn)
    a, _, b = _abc()
    B = te.extern((N,), [T], lambda ins, outs: tir.call_packed("h3.keep", ins[0], outs[0]),
                  name="B")
    with pytest.raises(PackedFuncError, match=r"'h3.keep'.*kept its argument 0 \(a float32 "
                                              r"array of shape \(64,\)\).*x.copy\(\)"):
        mlc.build([A, B])(a, b)
    assert not kept[0].flags.writeable  # a later write cannot scribble on freed memory
    kept.clear()
    B = te.extern((N,), [T], lambda ins, outs: tir.call_packed("h3.copy", ins[0], outs[0]),
                  name="B")
    mlc.build([A, B])(a, b)
    np.testing.assert_array_equal(kept[0], a + 1)
    np.testing.assert_array_equal(b, a + 1)


def _count(dtype: str) -> Module:
    n = te.var("n", dtype)
    A = te.placeholder((n,), name="A", dtype="int8")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k].astype("int64") * 0 + 1, axis=k), name="B")
    return mlc.build([A, B])


def test_an_array_longer_than_its_int32_size_is_refused_not_counted_wrong() -> None:
    """n = te.var("n") is an int32: an array of 2**31 + 8 elements made n wrap to a negative
    number, the loop ran zero times and B was 0 without a word. (np.zeros maps no memory
    until written, so the 2 GiB input costs nothing here.)"""
    a = np.zeros(2**31 + 8, np.int8)
    b = np.zeros(1, np.int64)
    with pytest.raises(ArgumentError, match=r"n = 2147483656 does not fit n's dtype int32 "
                                            r".*te.var\('n', 'int64'\)"):
        _count("int32")(a, b)
    with pytest.raises(ArgumentError, match="does not fit n's dtype int32"):
        _count("int32").bind(a, b)
    _count("int64")(a, b)
    assert b[0] == 2**31 + 8


@pytest.mark.parametrize("checked", [False, True])
def test_a_bound_call_given_arguments_is_a_typed_error(add: Module, checked: bool) -> None:
    """run(1) passed the 1 on to the machine code and ran; run(a, b) was ctypes'
    ArgumentError, and a module with run-time checks a TypeError."""
    if checked:
        f = _divide(8)
        args = (np.arange(8, dtype=np.int32), np.ones(8, np.int32), np.zeros(8, np.int32))
    else:
        f, args = add, _abc()
    run = f.bind(*args)
    for extra in ((1,), args):
        with pytest.raises(ArgumentTypeError, match="takes no arguments.*call it as run()"):
            run(*extra)
    run()
    np.testing.assert_array_equal(args[2], args[0] // args[1] if checked else args[0] + 1)


def test_a_packed_function_name_with_a_pipe_is_refused_when_registered() -> None:
    """'|' separates the fields of the signature compiled code passes: 'h3|pipe' registered
    fine, then every call failed with "no packed function named 'h3'"."""
    with pytest.raises(PackedFuncError, match=r"cannot contain '\|'; use dots, as in 'h3.pipe'"):
        mlc.register_func("h3|pipe", lambda x, y: None)
    assert registry.get_global_func("h3|pipe", allow_missing=True) is None


def test_a_packed_function_that_returns_its_result_is_told_to_write_it(
        registered: list[str]) -> None:
    """def addone(x, y): return x + 1 left B as it was (zeros or garbage), silently."""
    A = te.placeholder((N,), name="A")
    for name, fn in (("h3.returns", lambda x, y: x + 1),
                     ("h3.out", lambda x, y: np.add(x, 1, out=y))):  # returns y: fine
        registered.append(name)
        mlc.register_func(name, fn)
    a, _, b = _abc()
    B = te.extern((N,), [A], lambda ins, outs: tir.call_packed("h3.returns", ins[0], outs[0]),
                  name="B")
    with pytest.raises(PackedFuncError, match=r"'h3.returns'.*returned an array of shape "
                                              r"\(64,\).*y\[:\] = "):
        mlc.build([A, B])(a, b)
    B = te.extern((N,), [A], lambda ins, outs: tir.call_packed("h3.out", ins[0], outs[0]),
                  name="B")
    mlc.build([A, B])(a, b)
    np.testing.assert_array_equal(b, a + 1)
