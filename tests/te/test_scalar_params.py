"""Scalar parameters: a ``te.var`` in the build's argument list is passed by value.

TVM's tutorial "External Tensor Functions" passes ``bias = te.var("bias", dtype="float32")``
after the arrays and calls ``f(a, b, d, 10.0)``; the same code runs here. numpy is the
reference throughout; every wrong call is a typed error naming the parameter."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.driver import to_prim_func
from mlc.errors import (
    ArgumentError,
    ArgumentTypeError,
    IndexOutOfBoundsError,
    IntegerDivisionError,
    ScheduleError,
    TEError,
)
from mlc.runtime import cuda_driver
from mlc.target.cuda.build import GPU_PASSES
from mlc.target.cuda_sim.simulate import simulate
from mlc.testing import reference
from mlc.testing.compare import assert_same_result, random_arrays
from mlc.testing.interpreter import eval_prim_func
from mlc.tir.verify import verify_well_formed
from mlc.transform import lower, run_passes

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def add_scalar(n: int = 16, dtype: str = "float32"):
    A = te.placeholder((n,), name="A", dtype=dtype)
    c = te.var("c", dtype=dtype)
    B = te.compute((n,), lambda i: A[i] + c, name="B")
    return A, c, B


# ---------------------------------------------------------------------------------------------
# TVM's tutorial


def test_tutorial_external_tensor_functions_with_cblas_and_a_scalar_bias() -> None:
    n = 1024
    l = 128  # noqa: E741 - the tutorial's name
    m = 235
    bias = te.var("bias", dtype="float32")
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    C = te.extern(
        (n, m),
        [A, B],
        lambda ins, outs: tir.call_packed(
            "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False
        ),
        name="C",
    )
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    f = mlc.build(s, [A, B, D, bias], target="llvm")
    a = RNG.uniform(size=(n, l)).astype(A.dtype)
    b = RNG.uniform(size=(l, m)).astype(B.dtype)
    d = np.zeros((n, m), dtype=D.dtype)
    bb = 10.0
    f(a, b, d, bb)
    np.testing.assert_allclose(d, np.dot(a, b) + 10, rtol=1e-5)


def test_tutorial_without_the_extern_call() -> None:
    n, l, m = 64, 32, 48
    bias = te.var("bias", dtype="float32")
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    f = mlc.build(s, [A, B, D, bias], target="llvm")
    a, b, d = rand(n, l), rand(l, m), np.zeros((n, m), "float32")
    f(a, b, d, 10.0)
    np.testing.assert_allclose(d, a @ b + 10, rtol=1e-5)
    assert "bias: float32" in str(f)


# ---------------------------------------------------------------------------------------------
# dtypes and positions


@pytest.mark.parametrize("dtype, value", [
    ("float32", 2.5), ("float64", -1e200), ("int32", 2**31 - 1),
    ("int64", 2**40), ("int8", 100), ("uint8", 255), ("uint32", 2**32 - 1),
    ("int16", 12345), ("uint64", 2**64 - 1),
])
def test_each_dtype_passes_its_value(dtype: str, value: float) -> None:
    A, c, B = add_scalar(8, dtype)
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    a = np.arange(8).astype(dtype)
    b = np.zeros(8, dtype)
    f(a, value, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(b, a + np.array(value).astype(dtype))


def test_float64_keeps_its_precision() -> None:
    A, c, B = add_scalar(4, "float64")
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    b = np.zeros(4)
    f(np.zeros(4), 0.1 + 1e-12, b)
    assert b[0] == 0.1 + 1e-12  # not rounded through float32


def test_a_bool_scalar_chooses_a_branch() -> None:
    A = te.placeholder((6,), name="A")
    flag = te.var("flag", "bool")
    B = te.compute((6,), lambda i: te.if_then_else(flag, A[i], -A[i]), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B, flag])
    a, b = rand(6), np.zeros(6, "float32")
    f(a, b, True)
    np.testing.assert_array_equal(b, a)
    f(a, b, np.bool_(False))
    np.testing.assert_array_equal(b, -a)
    with pytest.raises(ArgumentTypeError, match="'flag'.*True or False"):
        f(a, b, 1)


def test_scalars_anywhere_in_the_argument_list_and_several() -> None:
    A = te.placeholder((5,), name="A")
    B = te.placeholder((5,), name="B")
    alpha = te.var("alpha", "float32")
    beta = te.var("beta", "float64")
    k = te.var("k", "int64")
    C = te.compute((5,), lambda i: A[i] * alpha + B[i] * beta.astype("float32")
                   + k.astype("float32"), name="C")
    s = te.create_schedule(C.op)
    f = mlc.build(s, [alpha, A, k, B, C, beta])
    a, b, c = rand(5), rand(5), np.zeros(5, "float32")
    f(2.0, a, 3, b, c, -1.5)
    np.testing.assert_allclose(c, a * 2 - 1.5 * b + 3, rtol=1e-6)
    assert f.signature() == (
        "alpha: float32, A: float32[5], k: int64, B: float32[5], C: float32[5], beta: float64"
    )


def test_an_unused_scalar_is_accepted_and_checked() -> None:
    A, _, B = add_scalar()
    B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
    unused = te.var("unused", "int32")
    f = mlc.build(te.create_schedule(B.op), [A, B, unused])
    a, b = rand(16), np.zeros(16, "float32")
    f(a, b, 7)
    np.testing.assert_allclose(b, a * 2)
    with pytest.raises(ArgumentTypeError, match="'unused'"):
        f(a, b, "7")


def test_numpy_scalars_and_zero_dim_arrays_work() -> None:
    A, c, B = add_scalar()
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    a, b = rand(16), np.zeros(16, "float32")
    for v in (np.float32(1.5), np.float64(1.5), np.int64(3), np.array(1.5), 3):
        f(a, v, b)
        np.testing.assert_allclose(b, a + np.float32(v))


def test_nan_and_infinity_reach_a_float_parameter() -> None:
    A, c, B = add_scalar(4)
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    a, b = np.zeros(4, "float32"), np.zeros(4, "float32")
    f(a, float("nan"), b)
    assert np.isnan(b).all()
    f(a, -math.inf, b)
    assert (b == -np.inf).all()


# ---------------------------------------------------------------------------------------------
# wrong calls


@pytest.mark.parametrize("dtype, value, error, words", [
    ("int32", 2.5, ArgumentTypeError, "takes an integer, got 2.5 (float); pass int(x)"),
    ("int32", 3.0, ArgumentTypeError, "takes an integer"),
    ("int32", float("nan"), ArgumentTypeError, "takes an integer"),
    ("int32", np.float32(1), ArgumentTypeError, "takes an integer"),
    ("int32", 2**40, ArgumentError, "must be in [0, 2147483647]"),
    ("int32", 2**31, ArgumentError, "must be in"),
    ("int32", -1, ArgumentError, "te.var, a size: mlc knows it is >= 0"),
    ("int32", True, ArgumentTypeError, "takes an integer, got True (bool)"),
    ("int32", "3", ArgumentTypeError, "got '3' (str)"),
    ("int32", None, ArgumentTypeError, "got None"),
    ("int32", np.zeros(3, "int32"), ArgumentTypeError, "(ndarray)"),
    ("int64", 2**63, ArgumentError, "must be in [0, 9223372036854775807]"),
    ("uint8", 256, ArgumentError, "must be in [0, 255]"),
    ("uint64", 2**64, ArgumentError, "must be in [0, 18446744073709551615]"),
    ("float32", 1e300, ArgumentError, "too large for float32"),
    ("float32", "1.0", ArgumentTypeError, "takes a number"),
    ("float32", 1j, ArgumentTypeError, "takes a number"),
    ("float32", True, ArgumentTypeError, "takes a number"),
    ("float64", 10**400, ArgumentError, "too large for a float"),
])
def test_a_wrong_scalar_is_a_typed_error_naming_the_parameter(dtype, value, error, words):
    A, c, B = add_scalar(4, dtype)
    f = mlc.build(te.create_schedule(B.op), [A, B, c])
    a, b = np.zeros(4, dtype), np.zeros(4, dtype)
    with pytest.raises(error) as info:
        f(a, b, value)
    assert f"scalar parameter 'c' ({dtype})" in str(info.value)
    assert words in str(info.value), str(info.value)
    assert not b.any()  # nothing ran


def test_the_count_of_arguments_counts_the_scalars() -> None:
    A, c, B = add_scalar(4)
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    with pytest.raises(ArgumentTypeError, match=r"takes 3 arguments \(A: float32\[4\], c: "
                                                r"float32, B: float32\[4\]\) but got 2"):
        f(np.zeros(4, "float32"), np.zeros(4, "float32"))


def test_an_array_where_the_scalar_goes_and_a_scalar_where_an_array_goes() -> None:
    A, c, B = add_scalar(4)
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    a, b = np.zeros(4, "float32"), np.zeros(4, "float32")
    with pytest.raises(ArgumentTypeError, match="argument 2 'B' must be a numpy array"):
        f(a, 1.0, 2.0)
    with pytest.raises(ArgumentTypeError, match="'c'"):
        f(a, b, b)


def test_a_variable_missing_from_the_arguments_is_refused_at_build() -> None:
    A, c, B = add_scalar(4)
    s = te.create_schedule(B.op)
    with pytest.raises(TEError, match="uses the variable.*c.*pass each as an argument"):
        mlc.build(s, [A, B])
    with pytest.raises(TEError, match="uses the variable"):
        te.create_prim_func([A, B])


def test_bad_argument_lists_are_refused() -> None:
    A, c, B = add_scalar(4)
    s = te.create_schedule(B.op)
    with pytest.raises(TEError, match="'c' is in the argument list twice"):
        mlc.build(s, [A, c, B, c])
    h = te.var("h", "float16")
    with pytest.raises(TEError, match="float16.*te.cast|pass a float32"):
        mlc.build(s, [A, c, B, h])
    with pytest.raises((TEError, ScheduleError)):
        mlc.build(s, [A, c, B, 3.0])


# ---------------------------------------------------------------------------------------------
# scalars in indices and loop extents: the run-time checks still hold


def shifted():
    A = te.placeholder((20,), name="A")
    k = te.var("k", "int32")
    D = te.compute((16,), lambda i: A[i + k], name="D")
    return A, k, D


def test_a_scalar_offset_in_an_index_is_checked_at_run_time() -> None:
    A, k, D = shifted()
    f = mlc.build(te.create_schedule(D.op), [A, D, k])
    a, d = np.arange(20, dtype="float32"), np.zeros(16, "float32")
    for kk in (0, 4):
        f(a, d, kk)
        np.testing.assert_array_equal(d, a[kk:kk + 16])
    with pytest.raises(IndexOutOfBoundsError, match=r"A\[i \+ k\].*the index was 20"):
        f(a, d, 5)
    with pytest.raises(IndexOutOfBoundsError, match="the index was 2147483647"):
        f(a, d, 2**31 - 1)  # i + k wraps around in int32 for i > 0: still caught


def test_a_scalar_offset_into_a_two_dimensional_array_is_checked_per_dimension() -> None:
    A = te.placeholder((4, 8), name="A")
    k = te.var("k", "int64")
    D = te.compute((4, 4), lambda i, j: A[i, j + k], name="D")
    f = mlc.build(te.create_schedule(D.op), [A, k, D])
    a, d = rand(4, 8), np.zeros((4, 4), "float32")
    f(a, 4, d)
    np.testing.assert_array_equal(d, a[:, 4:])
    with pytest.raises(IndexOutOfBoundsError, match="dimension 1 of A"):
        f(a, 5, d)  # the flat index would still be inside A: row i + 1


def test_a_scalar_offset_under_vectorize_and_parallel_is_checked() -> None:
    A = te.placeholder((64,), name="A")
    k = te.var("k", "int32")
    D = te.compute((32,), lambda i: A[i + k] * 2.0, name="D")
    s = te.create_schedule(D.op)
    o, i = s[D].split(D.op.axis[0], factor=8)
    s[D].parallel(o)
    s[D].vectorize(i)
    f = mlc.build(s, [A, D, k])
    a, d = rand(64), np.zeros(32, "float32")
    f(a, d, 32)
    np.testing.assert_allclose(d, a[32:] * 2)
    with pytest.raises(IndexOutOfBoundsError):
        f(a, d, 33)


def test_a_scalar_loop_extent() -> None:
    B = te.placeholder((4, 16), name="B")
    k = te.var("k", "int32")
    r = te.reduce_axis((0, k), name="r")
    S = te.compute((4,), lambda i: te.sum(B[i, r], axis=r), name="S")
    f = mlc.build(te.create_schedule(S.op), [B, k, S])
    b, out = rand(4, 16), np.zeros(4, "float32")
    for kk in (0, 1, 16):
        f(b, kk, out)
        np.testing.assert_allclose(out, b[:, :kk].sum(axis=1), rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexOutOfBoundsError, match="dimension 1 of B"):
        f(b, 17, out)


# ---------------------------------------------------------------------------------------------
# a symbolic size passed as an argument too


def test_a_size_passed_as_an_argument_must_match_the_arrays() -> None:
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * n.astype("float32"), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B, n])
    a, b = rand(7), np.zeros(7, "float32")
    f(a, b, 7)
    np.testing.assert_allclose(b, a * 7)
    f(a, b, np.int64(7))
    with pytest.raises(ArgumentError, match="'n' .* is 8 but the arrays' shapes say n = 7"):
        f(a, b, 8)
    assert "n: int32" in f.signature()


def test_a_size_only_in_an_expression_is_given_by_its_argument() -> None:
    n = te.var("n")
    A = te.placeholder((n * 2,), name="A")
    B = te.compute((n * 2,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ArgumentError, match="cannot be read from the arrays' shapes"):
        mlc.build(s, [A, B])(rand(6), np.zeros(6, "float32"))
    f = mlc.build(s, [A, B, n])
    a, b = rand(6), np.zeros(6, "float32")
    f(a, b, 3)
    np.testing.assert_allclose(b, a + 1)
    with pytest.raises(ArgumentError, match=r"argument 0 'A' has shape \(6,\) but the function "
                                            r"expects \(4,\)"):
        f(a, b, 2)


# ---------------------------------------------------------------------------------------------
# through the pipeline, the printer and the other targets


def test_the_scalar_survives_lowering_and_every_pass_verifies() -> None:
    A, c, B = add_scalar(32)
    s = te.create_schedule(B.op)
    _, i = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(i)
    func = to_prim_func(s, [A, B, c], None)
    lowered = lower(func, verify=True)
    verify_well_formed(lowered)
    assert len(lowered.scalars) == 1 and lowered.scalars[0][0] == 2
    assert lowered.scalars[0][1] is c
    for target in ("llvm", "c"):  # what the module was compiled from has it too
        assert mlc.build(s, [A, B, c], target=target).func.scalars[0][1] is c
    text = str(mlc.lower(s, [A, B, c]))
    assert 'def main(A: Buffer((32,), "float32"), B: Buffer((32,), "float32"), c: float32):' \
        in text
    assert "B[ramp(i_0 * 8, 1, 8)] = A[ramp(i_0 * 8, 1, 8)] + broadcast(c, 8)" in text, text


def test_the_gpu_passes_keep_the_scalars_and_verify() -> None:
    s, args = gpu_scale()
    func = lower(to_prim_func(s, args, None), verify=True)
    gpu = run_passes(func, GPU_PASSES, verify=True)
    assert gpu.scalars == func.scalars
    sim = simulate(gpu)
    assert sim.scalars == func.scalars
    verify_well_formed(sim)


def test_create_prim_func_with_a_scalar_and_tir_schedule() -> None:
    A, c, B = add_scalar(32)
    func = te.create_prim_func([A, c, B])
    assert "c: T.float32" in func.script()
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    io, ii = sch.split(i, [None, 4])
    sch.vectorize(ii)
    assert sch.mod.scalars == func.scalars
    f = mlc.build(sch.mod)
    a, b = rand(32), np.zeros(32, "float32")
    f(a, 0.25, b)
    np.testing.assert_allclose(b, a + 0.25)
    assert_same_result(func, sch.mod, sizes={"c": 0.25})


def test_time_evaluator_and_bind_take_the_scalars() -> None:
    A, c, B = add_scalar(16)
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    a, b = rand(16), np.zeros(16, "float32")
    result = f.time_evaluator(number=2, repeat=1)(a, 3.0, b)
    assert result.mean > 0
    np.testing.assert_allclose(b, a + 3)
    run = f.bind(a, -1.0, b)
    run()
    np.testing.assert_allclose(b, a - 1)
    with pytest.raises(ArgumentTypeError):
        f.time_evaluator(number=1)(a, "x", b)


def test_c_target_prints_the_scalar_in_the_signature() -> None:
    A, c, B = add_scalar(8, "float64")
    k = te.var("k", "int64")
    C = te.compute((8,), lambda i: B[i] * k.astype("float64"), name="C")
    f = mlc.build(te.create_schedule(C.op), [A, c, C, k], target="c")
    src = f.get_source("c")
    assert "void main(double* restrict A, double* restrict C, double c, int64_t k)" in src
    a, out = rand(8, dtype="float64"), np.zeros(8)
    f(a, 0.5, out, 3)
    np.testing.assert_allclose(out, (a + 0.5) * 3)


def gpu_scale():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    alpha = te.var("alpha", "float32")
    k = te.var("k", "int32")
    D = te.compute((n,), lambda i: A[i] * alpha + k.astype("float32"), name="D")
    s = te.create_schedule(D.op)
    bx, tx = s[D].split(D.op.axis[0], factor=32)
    s[D].bind(bx, te.thread_axis("blockIdx.x"))
    s[D].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, alpha, D, k]


def test_cuda_sim_runs_kernels_with_scalar_arguments() -> None:
    s, args = gpu_scale()
    f = mlc.build(s, args, target="cuda-sim")
    src = f.get_source("cuda")
    assert "main_kernel(float* __restrict__ A, float* __restrict__ D, int32_t n, " \
           "float alpha, int32_t k)" in src
    a, d = rand(100), np.zeros(100, "float32")
    f(a, 2.0, d, 3)  # checked by the GPU interpreter first, then run
    np.testing.assert_allclose(d, a * 2 + 3, rtol=1e-6)
    report = f.check(a, np.float32(-1.0), d, 0)
    assert report.blocks
    np.testing.assert_allclose(d, -a, rtol=1e-6)
    assert f.time_evaluator(number=1, repeat=1)(a, 1.0, d, 1).mean > 0
    with pytest.raises(ArgumentTypeError, match="'k'"):
        f(a, 2.0, d, 0.5)


def test_cuda_kernel_that_does_not_read_a_scalar_does_not_take_it() -> None:
    n = 64
    A = te.placeholder((n,), name="A")
    c = te.var("c", "float32")
    B = te.compute((n,), lambda i: A[i] + c, name="B")
    C = te.compute((n,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    for t in (B, C):
        bx, tx = s[t].split(t.op.axis[0], factor=32)
        s[t].bind(bx, te.thread_axis("blockIdx.x"))
        s[t].bind(tx, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, C, c], target="cuda-sim")
    params = [k.size_vars for k in f.kernels]
    assert [[v.name for v in p] for p in params] == [["c"], []]
    a, out = rand(n), np.zeros(n, "float32")
    f(a, out, 1.5)
    np.testing.assert_allclose(out, (a + 1.5) * 2, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# the reference evaluators


def test_the_numpy_reference_and_the_interpreter_take_scalar_values() -> None:
    A, c, B = add_scalar(8)
    a = rand(8)
    got = reference.evaluate(B, {A: a}, sizes={c: 2.5})["B"]
    np.testing.assert_allclose(got, a + 2.5)
    np.testing.assert_allclose(reference.evaluate(B, {A: a}, sizes={"c": 1.5})["B"], a + 1.5)
    func = te.create_prim_func([A, B, c])
    b = np.zeros(8, "float32")
    eval_prim_func(func, a, b, 4.0)
    np.testing.assert_allclose(b, a + 4)
    args = random_arrays(func, {"c": 0.5})
    assert isinstance(args[0], np.ndarray) and args[2] == 0.5


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_driver.available(), reason="no NVIDIA GPU / CUDA driver here")
def test_real_gpu_kernels_take_scalar_arguments() -> None:
    from mlc.target.cuda import nvrtc as cuda_nvrtc

    if not cuda_nvrtc.available():
        pytest.skip("NVRTC not installed")
    s, args = gpu_scale()
    f = mlc.build(s, args, target="cuda")
    a, d = rand(100), np.zeros(100, "float32")
    f(a, 2.0, d, 3)
    np.testing.assert_allclose(d, a * 2 + 3, rtol=1e-6)
    assert f.time_evaluator(number=1, repeat=1)(a, -1.0, d, 0).mean > 0
    np.testing.assert_allclose(d, -a, rtol=1e-6)


def test_scalars_named_like_a_buffer_or_a_c_keyword() -> None:
    A = te.placeholder((8,), name="A")
    c1 = te.var("A", "float32")
    c2 = te.var("int", "int32")
    B = te.compute((8,), lambda i: A[i] * c1 + A[i // c2], name="B")
    s = te.create_schedule(B.op)
    a = np.arange(8, dtype="float32")
    for target in ("llvm", "c"):
        f = mlc.build(s, [A, c1, B, c2], target=target)
        b = np.zeros(8, "float32")
        f(a, 2.0, b, 3)
        np.testing.assert_allclose(b, a * 2 + a[np.arange(8) // 3])
        with pytest.raises(IntegerDivisionError, match="i // int"):
            f(a, 2.0, b, 0)
    src = mlc.build(s, [A, c1, B, c2], target="c").get_source("c")
    assert "void main(float* restrict A, float* restrict B, float A_1, int32_t int_1)" in src


def test_the_verifier_checks_the_scalar_positions() -> None:
    import dataclasses

    from mlc.errors import VerifyError

    A, c, B = add_scalar(4)
    func = te.create_prim_func([A, c, B])
    verify_well_formed(func)
    for bad in (((5, c),), ((1, c), (1, c)), ((-1, c),)):
        with pytest.raises(VerifyError, match="positions .* are not distinct, increasing"):
            verify_well_formed(dataclasses.replace(func, scalars=bad))
    with pytest.raises(VerifyError, match="variable `c` is used but not defined"):
        verify_well_formed(dataclasses.replace(func, scalars=()))


def test_array_errors_name_the_position_in_the_call() -> None:
    A, c, B = add_scalar(4)
    f = mlc.build(te.create_schedule(B.op), [A, c, B])
    a = np.zeros(4, "float32")
    with pytest.raises(ArgumentError, match="argument 2 'B' is written by the function and is "
                                            "the same memory as argument 0 'A'"):
        f(a, 1.0, a)
    with pytest.raises(ArgumentTypeError, match="argument 2 'B' has dtype float64"):
        f(a, 1.0, np.zeros(4))
    with pytest.raises(ArgumentError, match=r"argument 0 'A' has shape \(5,\)"):
        f(np.zeros(5, "float32"), 1.0, a)
