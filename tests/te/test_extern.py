"""te.extern, tir.call_packed / call_pure_extern / call_extern and mlc.register_func.

The first tests are TVM's tutorials ("External Tensor Functions", "Intrinsics and Math
Functions") with the module names changed; numpy is the reference throughout."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import CodegenError, MLCTypeError, PackedFuncError, ScheduleError, TEError
from mlc.runtime import registry
from mlc.script import from_source

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Names registered by a test, removed after it."""
    names: list[str] = []
    yield names
    for n in names:
        registry.remove_global_func(n)


def cblas_extern(A: te.Tensor, B: te.Tensor, n: object, m: object) -> te.Tensor:
    return te.extern(
        (n, m),
        [A, B],
        lambda ins, outs: tir.call_packed(
            "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False
        ),
        name="C",
    )


# ---------------------------------------------------------------------------------------------
# TVM's tutorials


def test_tutorial_cblas_matmul_then_bias_through_te_schedule() -> None:
    n, l, m = 64, 32, 48
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    bias = te.placeholder((m,), name="bias")  # TVM's tutorial uses a scalar te.var
    C = cblas_extern(A, B, n, m)
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias[j], name="D")
    s = te.create_schedule(D.op)
    f = mlc.build(s, [A, B, bias, D], "llvm")
    a, b, bb = rand(n, l), rand(l, m), rand(m)
    d = np.zeros((n, m), "float32")
    f(a, b, bb, d)
    np.testing.assert_allclose(d, a @ b + bb, rtol=1e-5, atol=1e-5)


def test_tutorial_cblas_through_create_prim_func_and_tir_schedule() -> None:
    n, l, m = 32, 16, 24
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    bias = te.placeholder((m,), name="bias")
    C = cblas_extern(A, B, n, m)
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias[j], name="D")
    sch = tir.Schedule(te.create_prim_func([A, B, bias, D]))
    i, j = sch.get_loops(sch.get_block("D"))
    io, ii = sch.split(i, [None, 8])
    sch.parallel(io)
    sch.vectorize(j)
    f = mlc.build(sch.mod)
    a, b, bb = rand(n, l), rand(l, m), rand(m)
    d = np.zeros((n, m), "float32")
    f(a, b, bb, d)
    np.testing.assert_allclose(d, a @ b + bb, rtol=1e-5, atol=1e-5)


def test_tutorial_register_func_addone(registered: list[str]) -> None:
    seen: list[tuple[type, type]] = []

    @mlc.register_func("tvm.contrib.my_tvm_addone")
    def my_tvm_addone(x: np.ndarray, y: np.ndarray) -> None:
        seen.append((type(x), type(y)))
        y[:] = x + 1

    registered.append("tvm.contrib.my_tvm_addone")
    n = 10
    A = te.placeholder((n,), name="A")
    B = te.extern(
        A.shape,
        [A],
        lambda ins, outs: tir.call_packed("tvm.contrib.my_tvm_addone", ins[0], outs[0]),
        name="C",
    )
    s = te.create_schedule(B.op)
    f = mlc.build(s, [A, B], "llvm")
    a = rand(n)
    b = np.zeros(n, dtype=B.dtype)
    f(a, b)
    np.testing.assert_allclose(b, a + 1)
    assert seen == [(np.ndarray, np.ndarray)]
    assert mlc.get_global_func("tvm.contrib.my_tvm_addone") is my_tvm_addone


def test_callback_sees_the_callers_memory_without_a_copy(registered: list[str]) -> None:
    addresses: list[int] = []

    def record(x: np.ndarray, y: np.ndarray) -> None:
        addresses.extend([x.ctypes.data, y.ctypes.data])
        assert x.shape == (3, 5) and x.dtype == np.int32 and y.flags.writeable
        y[...] = x * 2

    mlc.register_func("test.record", record)
    registered.append("test.record")
    A = te.placeholder((3, 5), "int32", name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed("test.record", ins[0], outs[0]))
    f = mlc.build(te.create_schedule(B.op), [A, B])
    a = np.arange(15, dtype="int32").reshape(3, 5)
    b = np.zeros_like(a)
    f(a, b)
    assert addresses == [a.ctypes.data, b.ctypes.data]
    np.testing.assert_array_equal(b, 2 * a)


def test_tutorial_call_pure_extern_expf() -> None:
    n = 100
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: tir.call_pure_extern("float32", "expf", A[i]), name="B")
    s = te.create_schedule(B.op)
    f = mlc.build(s, [A, B])
    a = rand(n)
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-6)
    assert "expf" in f.get_source("ll")


@pytest.mark.parametrize(
    ("name", "dtype", "ref"),
    [
        ("erff", "float32", np.vectorize(math.erf)),
        ("log1pf", "float32", np.log1p),
        ("exp", "float64", np.exp),
        ("tanh", "float64", np.tanh),
    ],
)
def test_call_pure_extern_libm_vectorized(name: str, dtype: str, ref: object) -> None:
    A = te.placeholder((37,), dtype, name="A")
    B = te.compute(A.shape, lambda i: tir.call_pure_extern(dtype, name, A[i]), name="B")
    s = te.create_schedule(B.op)
    _, inner = s[B].split(B.op.axis[0], 8)
    s[B].vectorize(inner)  # a vector of 8 lanes: one call per lane
    f = mlc.build(s, [A, B])
    a = np.abs(rand(37, dtype=dtype))
    b = np.zeros(37, dtype)
    f(a, b)
    np.testing.assert_allclose(b, ref(a), rtol=1e-6)  # type: ignore[operator]


def test_call_extern_with_two_arguments_and_c_source() -> None:
    A = te.placeholder((8,), name="A")
    B = te.compute(A.shape, lambda i: tir.call_extern("float32", "powf", A[i], 2.0), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B], target="c")
    a = rand(8)
    b = np.zeros(8, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a**2, rtol=1e-6)
    assert "powf(A[i], 2.0f)" in f.get_source("c")


def test_call_pure_extern_on_the_simulated_gpu() -> None:
    A = te.placeholder((64,), name="A")
    B = te.compute(A.shape, lambda i: tir.call_pure_extern("float32", "expf", A[i]), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], 32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, B], target="cuda-sim")
    assert "= expf(A[" in f.get_source()
    a = rand(64)
    b = np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# shapes of programs


def test_multi_output_extern(registered: list[str]) -> None:
    def split_sign(x: np.ndarray, pos: np.ndarray, neg: np.ndarray, scale: float) -> None:
        pos[:] = np.maximum(x, 0) * scale
        neg[:] = np.minimum(x, 0) * scale

    mlc.register_func("test.split_sign", split_sign)
    registered.append("test.split_sign")
    A = te.placeholder((6, 4), name="A")
    P, N = te.extern(
        [A.shape, A.shape],
        [A],
        lambda ins, outs: tir.call_packed("test.split_sign", ins[0], outs[0], outs[1], 0.5),
        name="S",
    )
    assert (P.op is N.op) and P.op.num_outputs == 2 and (P.name, N.name) == ("S", "S_1")
    E = te.compute(A.shape, lambda i, j: P[i, j] - N[i, j], name="E")
    a = rand(6, 4)
    # both outputs as arguments
    f = mlc.build(te.create_schedule([P.op]), [A, P, N])
    p, q = np.zeros_like(a), np.zeros_like(a)
    f(a, p, q)
    np.testing.assert_allclose(p, np.maximum(a, 0) * 0.5)
    np.testing.assert_allclose(q, np.minimum(a, 0) * 0.5)
    # both consumed by a compute: intermediates
    g = mlc.build(te.create_schedule(E.op), [A, E])
    e = np.zeros_like(a)
    g(a, e)
    np.testing.assert_allclose(e, np.abs(a) * 0.5, rtol=1e-6)


def test_extern_in_the_middle_of_a_scheduled_chain() -> None:
    n, l, m = 32, 16, 8
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    A2 = te.compute(A.shape, lambda i, j: A[i, j] * 2, name="A2")
    C = cblas_extern(A2, B, n, m)
    D = te.compute(C.shape, lambda i, j: te.max(C[i, j], 0.0), name="D")
    s = te.create_schedule(D.op)
    io, _ = s[D].split(s[D].op.axis[0], 4)
    s[D].parallel(io)
    s[A2].parallel(s[A2].op.axis[0])
    _, ji = s[A2].split(s[A2].op.axis[1], 8)
    s[A2].vectorize(ji)
    f = mlc.build(s, [A, B, D])
    a, b = rand(n, l), rand(l, m)
    d = np.zeros((n, m), "float32")
    f(a, b, d)
    np.testing.assert_allclose(d, np.maximum(2 * a @ b, 0), rtol=1e-5, atol=1e-5)


def test_intermediate_passed_whole_is_not_shrunk(registered: list[str]) -> None:
    """The consumer reads one element of the extern's output; the buffer must stay whole."""
    mlc.register_func("test.fill", lambda y, v: y.fill(v))
    registered.append("test.fill")
    A = te.placeholder((4, 4), name="A")
    C = te.extern((4, 4), [], lambda ins, outs: tir.call_packed("test.fill", outs[0], 7), "C",
                  dtype="float32")
    D = te.compute((4,), lambda i: C[3, 3] + A[i, 0], name="D")
    f = mlc.build(te.create_schedule(D.op), [A, D])
    assert "alloc_buffer((16,)" in mlc.lower(te.create_schedule(D.op), [A, D]).script()
    a, d = rand(4, 4), np.zeros(4, "float32")
    f(a, d)
    np.testing.assert_allclose(d, a[:, 0] + 7)


@pytest.mark.parametrize("n", [5, 1, 0])
def test_symbolic_shape(n: int) -> None:
    N = te.var("n")
    A = te.placeholder((N, 3), name="A")
    B = te.placeholder((3, 4), name="B")
    C = cblas_extern(A, B, N, 4)
    D = te.compute(C.shape, lambda i, j: C[i, j] * 2, name="D")
    f = mlc.build(te.create_schedule(D.op), [A, B, D])
    a, b = rand(n, 3), rand(3, 4)
    d = np.zeros((n, 4), "float32")
    f(a, b, d)
    np.testing.assert_allclose(d, 2 * (a @ b), rtol=1e-5, atol=1e-6)


def test_cblas_transposes_and_batch_matmul() -> None:
    A = te.placeholder((5, 3), name="A")  # used as A^T: (3, 5)
    B = te.placeholder((4, 5), name="B")  # used as B^T: (5, 4)
    C = te.extern((3, 4), [A, B], lambda ins, outs: tir.call_packed(
        "mlc.contrib.cblas.matmul", ins[0], ins[1], outs[0], True, True), name="C")
    f = mlc.build(te.create_schedule(C.op), [A, B, C])
    a, b, c = rand(5, 3), rand(4, 5), np.zeros((3, 4), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a.T @ b.T, rtol=1e-5)
    X = te.placeholder((2, 3, 5), "float64", name="X")
    Y = te.placeholder((2, 5, 4), "float64", name="Y")
    Z = te.extern((2, 3, 4), [X, Y], lambda ins, outs: tir.call_packed(
        "tvm.contrib.cblas.batch_matmul", ins[0], ins[1], outs[0], False, False), name="Z")
    g = mlc.build(te.create_schedule(Z.op), [X, Y, Z])
    x, y, z = rand(2, 3, 5, dtype="float64"), rand(2, 5, 4, dtype="float64"), np.zeros((2, 3, 4))
    g(x, y, z)
    np.testing.assert_allclose(z, x @ y)


def test_scalars_arrive_as_python_numbers(registered: list[str]) -> None:
    got: list[object] = []
    mlc.register_func("test.scalars", lambda y, i, x, flag: (got.extend([i, x, flag]),
                                                             y.fill(i * x)))
    registered.append("test.scalars")
    B = te.extern((3,), [], lambda ins, outs: tir.call_packed(
        "test.scalars", outs[0], -7, 0.25, True), name="B", dtype="float64")
    f = mlc.build(te.create_schedule(B.op), [B])
    b = np.zeros(3)
    f(b)
    assert got == [-7, 0.25, 1] and [type(v) for v in got] == [int, float, int]
    np.testing.assert_allclose(b, -1.75)


def test_in_and_out_buffers() -> None:
    A = te.placeholder((4, 4), name="A")
    B = te.placeholder((4, 4), name="B")
    Ab = tir.Buffer("Ab", A.shape, "float32")
    Cb = tir.Buffer("Cb", A.shape, "float32")
    C = te.extern((4, 4), [A, B], lambda ins, outs: tir.call_packed(
        "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False), name="C",
        in_buffers=[Ab, B.buffer], out_buffers=[Cb])
    f = mlc.build(te.create_schedule(C.op), [A, B, C])
    a, b, c = rand(4, 4), rand(4, 4), np.zeros((4, 4), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    with pytest.raises(TEError, match="in_buffer 'X' is \\(3,\\) float32 but tensor 'A'"):
        te.extern((4, 4), [A], lambda ins, outs: tir.call_packed("f", ins[0], outs[0]),
                  in_buffers=[tir.Buffer("X", (tir.const(3),), "float32")])


def test_tvmscript_round_trip() -> None:
    N = te.var("n")
    A = te.placeholder((N, 8), name="A")
    B = te.placeholder((8, 12), name="B")
    C = cblas_extern(A, B, N, 12)
    D = te.compute(C.shape, lambda i, j: tir.call_pure_extern("float32", "expf", C[i, j]),
                   name="D")
    func = te.create_prim_func([A, B, D])
    text = func.script()
    assert 'T.call_packed("tvm.contrib.cblas.matmul", T.buffer_arg(A[0, 0], n, 8)' in text
    assert 'T.call_pure_extern("float32", "expf", C[vi, vj])' in text
    tir.assert_structural_equal(func, from_source(text), map_free_vars=True)
    lowered = mlc.lower(func)
    tir.assert_structural_equal(lowered, from_source(lowered.script()), map_free_vars=True)


# ---------------------------------------------------------------------------------------------
# errors


def test_exception_in_callback_is_a_typed_error_and_the_module_still_works(
    registered: list[str],
) -> None:
    calls: list[int] = []

    def flaky(x: np.ndarray, y: np.ndarray) -> None:
        calls.append(1)
        if x[0] < 0:
            raise ValueError("negative input")
        y[:] = x

    mlc.register_func("test.flaky", flaky)
    registered.append("test.flaky")
    A = te.placeholder((4,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed("test.flaky", ins[0], outs[0]))
    C = te.extern(B.shape, [B], lambda ins, outs: tir.call_packed("test.flaky", ins[0], outs[0]))
    f = mlc.build(te.create_schedule(C.op), [A, C])
    c = np.zeros(4, "float32")
    with pytest.raises(PackedFuncError, match="'test.flaky'.*ValueError: negative input") as err:
        f(-np.ones(4, "float32"), c)
    assert isinstance(err.value.__cause__, ValueError)
    assert calls == [1]  # the second call was skipped after the first failed
    f(np.ones(4, "float32"), c)  # the next call runs normally
    np.testing.assert_array_equal(c, 1)
    with pytest.raises(PackedFuncError, match="negative input"):
        f.time_evaluator(number=1, repeat=1)(-np.ones(4, "float32"), c)


def test_unknown_packed_function_fails_at_build_with_close_names() -> None:
    A = te.placeholder((4, 4), name="A")
    C = te.extern(A.shape, [A, A], lambda ins, outs: tir.call_packed(
        "tvm.contrib.cblas.matmull", ins[0], ins[1], outs[0], False, False), name="C")
    with pytest.raises(PackedFuncError, match="no packed function named "
                       "'tvm.contrib.cblas.matmull'.*close to it: tvm.contrib.cblas.matmul"):
        mlc.build(te.create_schedule(C.op), [A, C])


def test_wrong_argument_count_fails_at_build(registered: list[str]) -> None:
    mlc.register_func("test.two", lambda x, y: None)
    registered.append("test.two")
    A = te.placeholder((4,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed("test.two", ins[0]))
    with pytest.raises(PackedFuncError, match="'test.two' has signature .*passes 1 argument"):
        mlc.build(te.create_schedule(B.op), [A, B])


def test_cblas_with_mismatched_dtypes_is_a_clear_error() -> None:
    A = te.placeholder((4, 4), name="A")
    C = te.extern(A.shape, [A, A], lambda ins, outs: tir.call_packed(
        "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False), name="C",
        dtype="float64")
    f = mlc.build(te.create_schedule(C.op), [A, C])
    with pytest.raises(PackedFuncError, match="one dtype; got float32, float32, float64"):
        f(rand(4, 4), np.zeros((4, 4)))
    D = te.extern((4, 5), [A, A], lambda ins, outs: tir.call_packed(
        "mlc.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False), name="D")
    g = mlc.build(te.create_schedule(D.op), [A, D])
    with pytest.raises(PackedFuncError, match=r"C is \(4, 5\)"):
        g(rand(4, 4), np.zeros((4, 5), "float32"))


def test_unknown_c_symbol_fails_at_build() -> None:
    A = te.placeholder((4,), name="A")
    B = te.compute(A.shape, lambda i: tir.call_pure_extern("float32", "expff", A[i]), name="B")
    with pytest.raises(CodegenError, match="C function expff .*does not have"):
        mlc.build(te.create_schedule(B.op), [A, B])


def test_libm_function_with_wrong_dtype_fails_at_build() -> None:
    A = te.placeholder((4,), "int32", name="A")
    B = te.compute(A.shape, lambda i: tir.call_pure_extern("float32", "expf", A[i]), name="B")
    with pytest.raises(CodegenError, match="libm's expf takes and returns float32"):
        mlc.build(te.create_schedule(B.op), [A, B])


def test_scheduling_an_extern_stage_says_it_is_opaque() -> None:
    A = te.placeholder((8, 8), name="A")
    C = cblas_extern(A, A, 8, 8)
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    assert s[C].op.axis == ()
    opaque = r"s\[C\] is opaque \(an extern call: packed function 'tvm.contrib.cblas.matmul'\)"
    with pytest.raises(ScheduleError, match=opaque + " and has no loops"):
        s[C].split(D.op.axis[0], 4)
    with pytest.raises(ScheduleError, match=opaque + " and has no expression"):
        s[C].compute_inline()
    with pytest.raises(ScheduleError, match=opaque + " and cannot be moved"):
        s[C].compute_at(s[D], s[D].op.axis[0])
    with pytest.raises(ScheduleError, match=opaque):
        s[D].compute_at(s[C], D.op.axis[0])
    sch = tir.Schedule(te.create_prim_func([A, D]))
    block = sch.get_block("C")
    assert sch.get_loops(block) == []
    with pytest.raises(ScheduleError, match="Block 'C' is opaque \\(an extern call"):
        sch.compute_inline(block)
    with pytest.raises(ScheduleError, match="Block 'C' is opaque \\(an extern call"):
        sch.compute_at(block, sch.get_loops(sch.get_block("D"))[0])


def test_bad_extern_bodies_and_arguments() -> None:
    A = te.placeholder((4,), name="A")
    other = te.placeholder((4,), name="other")
    with pytest.raises(TEError, match="must return a statement or a call"):
        te.extern(A.shape, [A], lambda ins, outs: None)
    with pytest.raises(TEError, match="uses buffer 'other', which is neither an input"):
        te.extern(A.shape, [A], lambda ins, outs: tir.call_packed("f", other, outs[0]))
    with pytest.raises(TEError, match="inputs must be te tensors"):
        te.extern(A.shape, [A.buffer], lambda ins, outs: 0)  # type: ignore[list-item]
    with pytest.raises(TEError, match="2 output shapes but 1 dtypes"):
        te.extern([A.shape, A.shape], [A], lambda ins, outs: 0, dtype=["float32"])
    with pytest.raises(MLCTypeError, match="argument 1 is a buffer"):
        tir.call_pure_extern("float32", "expf", A.buffer)
    with pytest.raises(MLCTypeError, match="argument 2 is a string"):
        tir.call_packed("f", A.buffer, "text")
    with pytest.raises(MLCTypeError, match="the first argument is the function's name"):
        tir.call_packed(3)  # type: ignore[arg-type]


def test_call_packed_cannot_run_in_a_gpu_kernel() -> None:
    A = te.placeholder((4,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed(
        "tvm.contrib.cblas.matmul", ins[0], outs[0]), name="B")
    with pytest.raises(CodegenError):
        mlc.build(te.create_schedule(B.op), [A, B], target="cuda-sim")


def test_register_func_spellings_and_errors(registered: list[str]) -> None:
    @mlc.register_func
    def test_plain_name(x: np.ndarray) -> None:
        x.fill(1)

    registered.append("test_plain_name")
    assert mlc.get_global_func("test_plain_name") is test_plain_name
    assert "test_plain_name" in mlc.list_global_func_names()
    with pytest.raises(PackedFuncError, match="already registered; pass override=True"):
        mlc.register_func("test_plain_name", lambda x: None)
    mlc.register_func("test_plain_name", test_plain_name, override=True)
    assert mlc.get_global_func("missing.name", allow_missing=True) is None
    with pytest.raises(PackedFuncError, match="no packed function named 'missing.name'"):
        mlc.get_global_func("missing.name")
    with pytest.raises(PackedFuncError, match="needs a name"):
        mlc.register_func("")


def test_packed_call_per_element_in_a_parallel_loop(registered: list[str]) -> None:
    def check(i: int) -> None:
        if i == 50:
            raise RuntimeError("fifty")

    mlc.register_func("test.check", check)
    registered.append("test.check")
    B = te.compute((64,), lambda i: tir.call_packed("test.check", i), name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    f = mlc.build(s, [B])
    b = np.ones(64, "int32")
    with pytest.raises(PackedFuncError, match="RuntimeError: fifty"):
        f(b)
    assert set(b[:50]) <= {0, -1} and b[50] == -1  # 0: success, -1: failed or skipped


def test_extern_body_may_be_a_loop_nest() -> None:
    """TVM's ir_builder style: fcompute returns loops that store into the output."""
    A = te.placeholder((16,), name="A")

    def body(ins: list[tir.Buffer], outs: list[tir.Buffer]) -> tir.Stmt:
        i = tir.Var("i", "int32")
        store = tir.BufferStore(outs[0], ins[0][i] * 3, (i,))
        return tir.For(i, tir.const(0), tir.const(16), tir.ForKind.SERIAL, store)

    C = te.extern((16,), [A], body, name="C")
    f = mlc.build(te.create_schedule(C.op), [A, C])
    a, c = rand(16), np.zeros(16, "float32")
    f(a, c)
    np.testing.assert_allclose(c, 3 * a)


def test_numpy_reference_refuses_an_extern_stage_clearly() -> None:
    from mlc.testing import EvaluationError, evaluate

    A = te.placeholder((4, 4), name="A")
    C = cblas_extern(A, A, 4, 4)
    with pytest.raises(EvaluationError, match="'C' is computed by a ExternOp"):
        evaluate(C, {A: rand(4, 4)})


@pytest.mark.parametrize("cache", ["read", "write"])
def test_cache_read_and_write_around_an_extern_stage(cache: str) -> None:
    A = te.placeholder((8, 8), name="A")
    C = cblas_extern(A, A, 8, 8)
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    if cache == "read":
        s.cache_read(A, "global", [C])
    else:
        s.cache_write(C, "global")
    f = mlc.build(s, [A, D])
    a, d = rand(8, 8), np.zeros((8, 8), "float32")
    f(a, d)
    np.testing.assert_allclose(d, a @ a + 1, rtol=1e-5)


def test_function_removed_after_the_build_fails_when_called() -> None:
    mlc.register_func("test.gone", lambda y: y.fill(1))
    B = te.extern((3,), [], lambda ins, outs: tir.call_packed("test.gone", outs[0]),
                  dtype="float32")
    f = mlc.build(te.create_schedule(B.op), [B])
    registry.remove_global_func("test.gone")
    with pytest.raises(PackedFuncError, match="no packed function named 'test.gone'"):
        f(np.zeros(3, "float32"))
