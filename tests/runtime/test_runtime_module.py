"""Runtime Module: argument checks and their messages, symbolic sizes, sources, timing."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlc.errors import ArgumentError, ArgumentTypeError
from mlc.runtime import Module, TimeResult
from mlc.target.llvm.build import compile_lowered
from mlc.tir import (
    Buffer,
    BufferStore,
    Cast,
    For,
    ForKind,
    PrimFunc,
    SizeVar,
    Var,
    const,
    seq,
)


def _matmul_shaped() -> Module:
    """``C[i, j] = A[i, j] + B[i, j]`` for A: (n, 4), B: (n, 4), C: (1024, 1024)-like shapes."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n, 4), "float32")
    B = Buffer("B", (n, 4), "float32")
    C = Buffer("C", (n, 4), "float32")
    i, j = Var("i", "int32"), Var("j", "int32")
    body = For(i, const(0), n, ForKind.SERIAL,
               For(j, const(0), const(4), ForKind.SERIAL,
                   BufferStore(C, A[i, j] + B[i, j], (i, j))))
    return compile_lowered(PrimFunc((A, B, C), body, "add2d"))


@pytest.fixture(scope="module")
def add2d() -> Module:
    return _matmul_shaped()


def _arrays(n: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    return a, a * 2, np.empty((n, 4), np.float32)


def test_call_binds_symbolic_sizes(add2d: Module) -> None:
    for n in (1, 3, 17):
        a, b, c = _arrays(n)
        add2d(a, b, c)
        np.testing.assert_array_equal(c, a * 3)


def test_size_arguments_reach_the_native_function() -> None:
    """``B[0] = n; B[1] = m`` shows the sizes passed after the pointers."""
    n, m = SizeVar("n", "int32"), SizeVar("m", "int64")
    A = Buffer("A", (n, m), "float32")
    B = Buffer("B", (2,), "int64")
    body = seq(BufferStore(B, Cast("int64", n), (const(0),)), BufferStore(B, m, (const(1),)))
    f = compile_lowered(PrimFunc((A, B), body, "sizes"))
    b = np.zeros(2, np.int64)
    f(np.empty((5, 7), np.float32), b)
    np.testing.assert_array_equal(b, [5, 7])


_SHARED = np.zeros((6, 4), np.float32)


def _rows(start: int) -> np.ndarray:
    return _SHARED[start:start + 3]


@pytest.mark.parametrize(
    "make_args, error, message",
    [
        (lambda a, b, c: (a, b), ArgumentTypeError,
         "add2d() takes 3 arrays (A: float32[n, 4], B: float32[n, 4], C: float32[n, 4]) but got 2"),
        (lambda a, b, c: (a, b.tolist(), c), ArgumentTypeError,
         "argument 1 'B' must be a numpy array, got list; pass np.asarray(..., dtype='float32')"),
        (lambda a, b, c: (a, b.astype(np.float64), c), ArgumentTypeError,
         "argument 1 'B' has dtype float64 but the function expects float32; convert it with "
         ".astype('float32')"),
        (lambda a, b, c: (a, b.reshape(-1), c), ArgumentError,
         "argument 1 'B' has 1 dimension(s), shape (12,), but the function expects 2: (3, 4)"),
        (lambda a, b, c: (a, b, np.empty((3, 5), np.float32)), ArgumentError,
         "argument 2 'C' has shape (3, 5) but the function expects (3, 4)"),
        (lambda a, b, c: (a, b[:2].copy(), c), ArgumentError,
         "argument 1 'B' has shape (2, 4) but the function expects (3, 4) (n = 3, from "
         "argument 0 'A')"),
        (lambda a, b, c: (a, np.asfortranarray(b), c), ArgumentError,
         "argument 1 'B' is not C-contiguous (a transposed or sliced view?); pass "
         "np.ascontiguousarray(...)"),
        (lambda a, b, c: (a, b, np.broadcast_to(np.float32(0), (3, 4))), ArgumentError,
         "argument 2 'C' is not C-contiguous"),
        (lambda a, b, c: (a, b, c.copy()), None, None),
        (lambda a, b, c: (a, b, a), ArgumentError,
         "argument 2 'C' is written by the function and is the same memory as argument 0 'A'"),
        # rows 0-2 and 1-3 of one array: contiguous views that share two rows (it ran, and
        # the code, compiled with noalias, was free to read rows it had already written)
        (lambda a, b, c: (_rows(0), b, _rows(1)), ArgumentError,
         "argument 2 'C' is written by the function and overlaps argument 0 'A'"),
        (lambda a, b, c: (a, _rows(1), _rows(0)), ArgumentError,
         "argument 2 'C' is written by the function and overlaps argument 1 'B'"),
        (lambda a, b, c: (_SHARED[:3], b, _SHARED[3:6]), None, None),  # adjacent, apart
    ],
)
def test_argument_errors_name_the_argument(
    add2d: Module, make_args, error: type | None, message: str | None
) -> None:
    args = make_args(*_arrays())
    if error is None:
        add2d(*args)
        return
    with pytest.raises(error, match=re.escape(message)) as info:
        add2d(*args)
    assert isinstance(info.value, ValueError)  # every argument error is a ValueError too


def test_read_only_output_is_refused(add2d: Module) -> None:
    a, b, c = _arrays()
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match="argument 2 'C' is written by the function but the "
                                            "array is read-only"):
        add2d(a, b, c)
    a.flags.writeable = False  # inputs may be read-only
    b.flags.writeable = False
    add2d(a, b, np.empty((3, 4), np.float32))


def test_sizes_that_cannot_be_bound_are_reported() -> None:
    n = SizeVar("n", "int32")
    A = Buffer("A", (n * 2,), "float32")
    f = compile_lowered(PrimFunc((A,), BufferStore(A, const(1.0), (const(0),)), "twice"))
    with pytest.raises(ArgumentError, match="the size\\(s\\) n cannot be read"):
        f(np.empty(4, np.float32))


def test_compound_shapes_are_checked() -> None:
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), "float32")
    B = Buffer("B", (n + 1,), "float32")
    i = Var("i", "int32")
    body = For(i, const(0), n, ForKind.SERIAL, BufferStore(B, A[i], (i + 1,)))
    f = compile_lowered(PrimFunc((A, B), body, "shift"))
    b = np.zeros(5, np.float32)
    f(np.ones(4, np.float32), b)
    np.testing.assert_array_equal(b, [0, 1, 1, 1, 1])
    with pytest.raises(ArgumentError, match=re.escape("argument 1 'B' has shape (4,) but the "
                                                      "function expects (5,)")):
        f(np.ones(4, np.float32), np.zeros(4, np.float32))


def test_sources_and_names(add2d: Module) -> None:
    assert add2d.entry_name == "add2d"
    assert add2d.func.name == "add2d"
    assert 'define void @"add2d"(i8* noalias %"A"' in add2d.get_source("ll-unopt")
    assert "define void @add2d(" in add2d.get_source("ll")
    assert add2d.get_source() == add2d.get_source("ll")
    asm = add2d.get_source("asm")
    assert "add2d:" in asm and "ret" in asm
    assert "A: float32[n, 4]" in repr(add2d) and "add2d" in repr(add2d)
    with pytest.raises(ArgumentError, match="unknown source format 'ptx'"):
        add2d.get_source("ptx")
    with pytest.raises(ArgumentError, match='build it with target="c"'):
        add2d.get_source("c")


def test_time_evaluator_fields(add2d: Module) -> None:
    a, b, c = _arrays(64)
    result = add2d.time_evaluator(number=4, repeat=3)(a, b, c)
    assert isinstance(result, TimeResult)
    assert len(result.results) == 3 and result.number == 4
    assert all(r > 0 for r in result.results)
    assert result.min <= result.median <= result.max
    assert result.min <= result.mean <= result.max
    assert result.std >= 0
    assert "mean (ms)" in repr(result)
    np.testing.assert_array_equal(c, a * 3)  # the timed calls ran the function


def test_time_evaluator_grows_number_to_min_repeat_ms(add2d: Module) -> None:
    a, b, c = _arrays(4)
    result = add2d.time_evaluator(number=1, repeat=2, min_repeat_ms=5)(a, b, c)
    # a call takes microseconds, so reaching 5 ms per repeat needs many calls per repeat
    # (the measured times themselves are not asserted: the machine may be busy)
    assert result.number > 1
    assert len(result.results) == 2


def test_time_evaluator_checks_arguments(add2d: Module) -> None:
    with pytest.raises(ArgumentTypeError, match="takes 3 arrays"):
        add2d.time_evaluator()(np.empty((3, 4), np.float32))


def test_time_evaluator_accepts_tvm_call_shape(add2d: Module) -> None:
    a, b, c = _arrays(4)
    result = add2d.time_evaluator(add2d.entry_name, None, number=2, repeat=1)(a, b, c)
    assert len(result.results) == 1 and result.number == 2
    with pytest.raises(ArgumentError, match="this module's function is 'add2d', not 'main'"):
        add2d.time_evaluator("main", None)


def test_modules_can_be_freed_and_rebuilt() -> None:
    """Each module owns its JIT engine (and that engine its target machine): dropping some
    modules must not break the others or the next build."""
    import gc

    modules = [_matmul_shaped() for _ in range(3)]
    del modules[:2]
    gc.collect()
    again = _matmul_shaped()
    for f in (modules[0], again):
        a, b, c = _arrays()
        f(a, b, c)
        np.testing.assert_array_equal(c, a * 3)


def test_libgomp_is_found_in_wheels_when_the_system_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ctypes.util

    from mlc.runtime import parallel

    real = ctypes.util.find_library
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None if name == "gomp"
                        else real(name))
    found = parallel._candidates()
    if not found:
        pytest.skip("no xgboost/scikit-learn wheel with a bundled libgomp is installed")
    assert all("libgomp" in path for path in found)


def test_more_arrays_than_ctypes_can_pass_is_a_codegen_error() -> None:
    """1100 inputs: ctypes' own ArgumentError ('_argtypes_ has too many arguments')."""
    import mlc
    from mlc import te
    from mlc.errors import CodegenError

    xs = [te.placeholder((2,), name=f"X{i}") for i in range(1100)]
    Y = te.compute((2,), lambda i: sum((x[i] for x in xs[1:]), xs[0][i]), name="Y")
    with pytest.raises(CodegenError, match="takes 1101 native arguments .* at most 1024"):
        mlc.build(te.create_schedule(Y.op), [*xs, Y])
