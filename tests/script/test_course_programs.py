# ruff: noqa: F821, UP037  (R.call_tir names the module's prim_funcs; T.Buffer[..., "float32"] is the notes' spelling)
"""The MLC course's chapter 2-3 programs, typed as in the notes (``tvm.script`` ->
``mlc.script``), transformed with tir.Schedule and checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.script import R, T, ir_module

RNG = np.random.default_rng(0)


@ir_module
class VectorAdd:
    @T.prim_func
    def main(A: T.Buffer[128, "float32"],
             B: T.Buffer[128, "float32"],
             C: T.Buffer[128, "float32"]):
        # extra annotations for the function
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in range(128):
            with T.block("C"):
                # declare a data parallel iterator on spatial domain
                vi = T.axis.spatial(128, i)
                C[vi] = A[vi] + B[vi]


def test_vector_add_and_the_notes_split_reorder_parallel() -> None:
    sch = tir.Schedule(VectorAdd["main"])
    block_c = sch.get_block("C")
    (i,) = sch.get_loops(block_c)
    i_0, i_1, i_2 = sch.split(i, factors=[None, 4, 4])
    sch.reorder(i_0, i_2, i_1)
    sch.parallel(i_0)
    text = sch.mod.script()
    assert "for i_0 in T.parallel(8):" in text
    assert "vi = T.axis.spatial(128, i_0 * 16 + i_1 * 4 + i_2)" in text
    a, b = RNG.random(128, dtype=np.float32), RNG.random(128, dtype=np.float32)
    c = np.empty(128, "float32")
    mlc.build(sch.mod, target="llvm")(a, b, c)
    np.testing.assert_allclose(c, a + b)


@ir_module
class MyModule:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"),
                B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                vk = T.axis.reduce(128, k)
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


def _mm_relu_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = RNG.random((128, 128), dtype=np.float32)
    b = RNG.random((128, 128), dtype=np.float32)
    return a, b, np.maximum(a @ b, 0)


def test_mm_relu_builds_and_matches_numpy() -> None:
    a, b, ref = _mm_relu_inputs()
    rt_lib = mlc.build(MyModule, target="llvm")
    c = np.empty((128, 128), "float32")
    rt_lib["mm_relu"](a, b, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4)


def test_mm_relu_equals_the_te_program() -> None:
    A = te.placeholder((128, 128), name="A")
    B = te.placeholder((128, 128), name="B")
    k = te.reduce_axis((0, 128), name="k")
    Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((128, 128), lambda i, j: te.max(Y[i, j], 0.0), name="C")
    from_te = te.create_prim_func([A, B, C])
    written = MyModule["mm_relu"]
    # the same program, apart from the function's name and attributes
    renamed = tir.PrimFunc(written.params, written.body, from_te.name, from_te.attrs)
    tir.assert_structural_equal(renamed, from_te)


def test_mm_relu_transformed_as_in_chapter_2() -> None:
    sch = tir.Schedule(MyModule["mm_relu"])
    block_Y = sch.get_block("Y")
    i, j, k = sch.get_loops(block_Y)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(j0, k, j1)
    block_C = sch.get_block("C")
    sch.reverse_compute_at(block_C, j0)
    sch.decompose_reduction(block_Y, k)
    a, b, ref = _mm_relu_inputs()
    c = np.empty((128, 128), "float32")
    mlc.build(sch.mod, target="llvm")(a, b, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4)
    # what the course prints reads back to the same program (decompose_reduction nests
    # SeqStmts, which print flat: compare the flat form)
    class Flat(tir.IRMutator):
        def visit_SeqStmt(self, op):  # type: ignore[no-untyped-def]
            return tir.seq(*(self.visit(x) for x in op.seq))

    flat = sch.mod.with_body(Flat().visit(sch.mod.body))
    tir.assert_structural_equal(flat, mlc.script.from_source(sch.mod.script()))


@ir_module
class MatmulModule:
    @T.prim_func
    def main(
        A: T.Buffer[(64, 64), "float32"],
        B: T.Buffer[(64, 64), "float32"],
        C: T.Buffer[(64, 64), "float32"],
    ) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(64, 64, 64):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] += A[vi, vk] * B[vj, vk]


def test_hardware_chapter_matmul_with_remap_and_augmented_store() -> None:
    a = RNG.random((64, 64), dtype=np.float32)
    b = RNG.random((64, 64), dtype=np.float32)
    c = np.empty((64, 64), "float32")
    mlc.build(MatmulModule["main"], target="llvm")(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4)
    sch = tir.Schedule(MatmulModule["main"])
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    i0, i1 = sch.split(i, factors=[None, 16])
    j0, j1 = sch.split(j, factors=[None, 16])
    k0, k1 = sch.split(k, factors=[None, 16])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.blockize(i1)
    text = sch.mod.script()
    assert 'T.block("matmul_o")' in text
    c2 = np.empty((64, 64), "float32")
    mlc.build(sch.mod, target="llvm")(a, b, c2)
    np.testing.assert_allclose(c2, a @ b.T, rtol=1e-4)


@ir_module
class MLPModule:
    @T.prim_func
    def relu0(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (1, n), "float32")
        Y = T.match_buffer(y, (1, n), "float32")
        for i, j in T.grid(1, n):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @T.prim_func
    def linear0(X: T.Buffer((1, 784), "float32"),
                W: T.Buffer((128, 784), "float32"),
                B: T.Buffer((128,), "float32"),
                Z: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "linear0", "tir.noalias": True})
        Y = T.alloc_buffer((1, 128), "float32")
        for i, j, k in T.grid(1, 128, 784):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 128):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @T.prim_func
    def linear1(X: T.Buffer((1, 128), "float32"),
                W: T.Buffer((10, 128), "float32"),
                B: T.Buffer((10,), "float32"),
                Z: T.Buffer((1, 10), "float32")):
        T.func_attr({"global_symbol": "linear1", "tir.noalias": True})
        Y = T.alloc_buffer((1, 10), "float32")
        for i, j, k in T.grid(1, 10, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 10):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @R.function
    def main(x: R.Tensor((1, 784), "float32"),
             w0: R.Tensor((128, 784), "float32"),
             b0: R.Tensor((128,), "float32"),
             w1: R.Tensor((10, 128), "float32"),
             b1: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv0 = R.call_tir(linear0, (x, w0, b0), R.Tensor((1, 128), dtype="float32"))
            lv1 = R.call_tir(relu0, (lv0,), R.Tensor((1, 128), dtype="float32"))
            out = R.call_tir(linear1, (lv1, w1, b1), R.Tensor((1, 10), dtype="float32"))
            R.output(out)
        return out


def _mlp_params() -> dict[str, np.ndarray]:
    return {
        "w0": (RNG.standard_normal((128, 784)) * 0.05).astype("float32"),
        "b0": RNG.standard_normal(128).astype("float32"),
        "w1": (RNG.standard_normal((10, 128)) * 0.1).astype("float32"),
        "b1": RNG.standard_normal(10).astype("float32"),
    }


def numpy_mlp(data: np.ndarray, w0, b0, w1, b1) -> np.ndarray:  # type: ignore[no-untyped-def]
    lv0 = data @ w0.T + b0
    lv1 = np.maximum(lv0, 0)
    return lv1 @ w1.T + b1


def test_end_to_end_mlp_ir_module() -> None:
    p = _mlp_params()
    data = RNG.random((1, 784), dtype=np.float32)
    ex = mlc.build(MLPModule, target="llvm")
    from mlc.graph import relax

    vm = relax.VirtualMachine(ex, None)
    out = vm["main"](data, p["w0"], p["b0"], p["w1"], p["b1"])
    np.testing.assert_allclose(out, numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)


def test_mlp_module_script_round_trips() -> None:
    back = mlc.script.from_source(MLPModule.script())
    assert list(back.functions) == list(MLPModule.functions)
    for name in ("relu0", "linear0", "linear1"):
        tir.assert_structural_equal(MLPModule[name], back[name])
    assert back["main"].script() == MLPModule["main"].script()
    p = _mlp_params()
    data = RNG.random((1, 784), dtype=np.float32)
    out = mlc.build(back)["main"](data, p["w0"], p["b0"], p["w1"], p["b1"])
    np.testing.assert_allclose(out, numpy_mlp(data, **p), rtol=1e-4, atol=1e-4)


def test_reads_writes_given_explicitly_and_inferred_agree() -> None:
    @T.prim_func
    def explicit(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(8, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(B[vi])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + T.exp(A[vi, vk])

    @T.prim_func
    def inferred(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(8, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + T.exp(A[vi, vk])

    renamed = tir.PrimFunc(inferred.params, inferred.body, explicit.name)
    tir.assert_structural_equal(renamed, explicit)


def test_more_constructs() -> None:
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32"),
          C: T.Buffer((16,), "float32")):
        for i in T.serial(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = T.if_then_else(vi % 2 == 0, T.min(A[vi], 1.0),
                                       T.Cast("float32", B[vi] // 3) + T.sqrt(A[vi]))
        for i in T.unroll(4):
            if i < 2:
                C[i] = C[i] + T.float32(1)

    a = RNG.random(16, dtype=np.float32)
    b = RNG.integers(-20, 20, 16).astype("int32")
    c = np.empty(16, "float32")
    mlc.build(f)(a, b, c)
    ref = np.where(np.arange(16) % 2 == 0, np.minimum(a, 1.0),
                   (b // 3).astype("float32") + np.sqrt(a))
    ref[:2] += 1
    np.testing.assert_allclose(c, ref, rtol=1e-5)


def test_schedule_of_the_module_as_the_course_writes_it() -> None:
    # sch = tvm.tir.Schedule(MyModule); sch.get_block("Y", func_name="mm_relu")
    sch = tir.Schedule(MyModule)
    block_Y = sch.get_block("Y", func_name="mm_relu")
    i, j, k = sch.get_loops(block_Y)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C", func_name="mm_relu"), j0)
    assert "j_0" in sch.mod.script() and "j_0" in str(sch.mod["mm_relu"])
    assert "j_0" not in str(MyModule["mm_relu"])  # the module itself is left as it was
    a, b, ref = _mm_relu_inputs()
    for rt_lib in (mlc.build(sch.mod, target="llvm"), mlc.build(sch, target="llvm")):
        c = np.empty((128, 128), "float32")
        rt_lib["mm_relu"](a, b, c)
        np.testing.assert_allclose(c, ref, rtol=1e-4)
    with pytest.raises(ScheduleError, match="one function, 'mm_relu'"):
        sch.get_block("Y", func_name="main2")


def test_schedule_of_a_module_with_several_functions_names_them() -> None:
    mod = MyModule.with_function("other", MyModule["mm_relu"])
    with pytest.raises(ScheduleError, match=r"2 PrimFuncs.*tir.Schedule\(mod\['mm_relu'\]\)"):
        tir.Schedule(mod)
