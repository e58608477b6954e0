"""int8 dense tensorized onto dp4a (vpdpbusd) and dp4a_u7 (vpmaddubsw for 7-bit activations),
bf16 dot products: exact against numpy on odd shapes and edge values, the VNNI and AVX2 paths'
LLVM IR (built to IR only, on any CPU), and the portable fallback forced with -mattr."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.target.llvm.codegen import codegen_llvm
from mlc.target.llvm.dot import cpu_features, vnni_lanes
from mlc.target.target import parse_target
from mlc.testing import eval_prim_func
from mlc.tir import Buffer, BufferStore, Call, PrimFunc, Ramp, const
from mlc.topi.x86 import dense_int8, pack_weight, register_dp2a_bf16, schedule_dense_int8

VNNI = "llvm -mcpu=sapphirerapids -mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni,+avx512bf16"
NO_VNNI = "llvm -mattr=-avx512vnni,-avxvnni,-avx512bf16"
AVX2 = "llvm -mcpu=haswell -mattr=+avx2"  # -mcpu: only the features -mattr names


def _gemm(m: int, n: int, k: int, dtype: str, rows: int = 4,
          data_bits: int = 8) -> tuple[tir.Schedule, bool]:
    a = te.placeholder((m, k), dtype, "A")
    wp = te.placeholder((-(-n // 16), -(-k // 4), 64), "int8", "W")
    comp = te.placeholder((n,), "int32", "comp")
    signed = dtype == "int8"
    out = dense_int8(a, wp, comp if signed else None, units=n, data_bits=data_bits)
    return schedule_dense_int8([a, wp, *([comp] if signed else []), out], rows=rows), signed


def _run(m: int, n: int, k: int, dtype: str, a: np.ndarray, w: np.ndarray,
         target: str = "llvm", data_bits: int = 8) -> np.ndarray:
    sch, signed = _gemm(m, n, k, dtype, data_bits=data_bits)
    packed, comp = pack_weight(w)
    c = np.full((m, n), 7, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = mlc.build(sch.mod, target=target)
    f(a, packed, *([comp] if signed else []), c)
    return c


def _ref(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)


@pytest.mark.parametrize("m,n,k", [(1, 16, 4), (7, 10, 13), (5, 33, 7), (12, 48, 64),
                                   (3, 1, 1)])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_dense_int8_matches_numpy_exactly(m: int, n: int, k: int, dtype: str) -> None:
    rng = np.random.default_rng(m * 100 + n + k)
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    a = rng.integers(lo, hi, (m, k)).astype(dtype)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    np.testing.assert_array_equal(_run(m, n, k, dtype, a, w), _ref(a, w))


@pytest.mark.parametrize("fill_a,fill_w", [(255, -128), (255, 127), (0, -128), (128, 0)])
def test_edge_values_uint8(fill_a: int, fill_w: int) -> None:
    """255 x -128 saturates vpmaddubsw's int16 pairs; dp4a must not."""
    m, n, k = 4, 16, 256
    a = np.full((m, k), fill_a, np.uint8)
    w = np.full((n, k), fill_w, np.int8)
    np.testing.assert_array_equal(_run(m, n, k, "uint8", a, w), _ref(a, w))


@pytest.mark.parametrize("fill_a,fill_w", [(-128, -128), (127, -128), (-128, 127), (0, 0)])
def test_edge_values_int8(fill_a: int, fill_w: int) -> None:
    m, n, k = 4, 20, 36
    a = np.full((m, k), fill_a, np.int8)
    w = np.full((n, k), fill_w, np.int8)
    np.testing.assert_array_equal(_run(m, n, k, "int8", a, w), _ref(a, w))


def test_the_tile_is_tensorized_onto_dp4a() -> None:
    sch, _ = _gemm(8, 32, 16, "uint8")
    assert "dp4a(" in str(sch.mod)
    assert "tensorize" in str(sch.trace)


def test_vnni_ir_calls_vpdpbusd_on_any_cpu() -> None:
    """Built to LLVM IR only (this CPU may not be able to run it)."""
    sch, _ = _gemm(8, 32, 16, "int8")
    feats = cpu_features(parse_target(VNNI))
    assert vnni_lanes(feats) == 16
    ir = codegen_llvm(mlc.lower(sch.mod), cpu_features=feats).ir
    assert "@\"llvm.x86.avx512.vpdpbusd.512\"(" in ir
    avxvnni = cpu_features(parse_target("llvm -mcpu=alderlake -mattr=+avx2,+avxvnni"))
    assert vnni_lanes(avxvnni) == 8
    ir256 = codegen_llvm(mlc.lower(sch.mod), cpu_features=avxvnni).ir
    assert "@\"llvm.x86.avx512.vpdpbusd.256\"(" in ir256


def test_fallback_forced_is_exact_and_says_so() -> None:
    sch, _ = _gemm(6, 20, 12, "uint8")
    ir = codegen_llvm(mlc.lower(sch.mod), cpu_features=cpu_features(parse_target(NO_VNNI))).ir
    assert "vpdpbusd" not in ir
    with pytest.warns(UserWarning, match="no AVX-512 VNNI"):
        codegen_llvm(mlc.lower(sch.mod), cpu_features=frozenset({"avx2"}))
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (6, 12)).astype(np.uint8)
    w = rng.integers(-128, 128, (20, 12)).astype(np.int8)
    np.testing.assert_array_equal(_run(6, 20, 12, "uint8", a, w, target=NO_VNNI), _ref(a, w))


def test_host_features_come_from_llvm() -> None:
    import llvmlite.binding as llvm

    host = {k for k, on in llvm.get_host_cpu_features().items() if on}
    assert cpu_features(parse_target("llvm")) == frozenset(host)


def test_pack_weight_layout() -> None:
    w = np.arange(-40, 40, dtype=np.int8).reshape(16, 5)
    packed, comp = pack_weight(w)
    assert packed.shape == (1, 2, 64)
    assert packed[0, 0, 3 * 4 + 2] == w[3, 2] and packed[0, 1, 3 * 4 + 0] == w[3, 4]
    assert packed[0, 1, 3 * 4 + 1] == 0
    np.testing.assert_array_equal(comp, 128 * w.astype(np.int32).sum(1))


def _dot_func(op: str, acc: str, src: str, group: int, lanes: int) -> PrimFunc:
    c = Buffer("C", (const(lanes),), acc)
    a = Buffer("A", (const(group * lanes),), src)
    b = Buffer("B", (const(group * lanes),), src if op != "dp4a" else "int8")
    r = Ramp(const(0), const(1), lanes)
    rb = Ramp(const(0), const(1), group * lanes)
    body = BufferStore(c, Call(f"{acc}x{lanes}", op, (c[r], a[rb], b[rb])), (r,))
    return PrimFunc((a, b, c), body, f"f_{op}")


@pytest.mark.parametrize("lanes", [8, 16, 32])
def test_dp4a_row_llvm_interpreter_numpy(lanes: int) -> None:
    func = _dot_func("dp4a", "int32", "uint8", 4, lanes)
    rng = np.random.default_rng(lanes)
    a = rng.integers(0, 256, 4 * lanes).astype(np.uint8)
    a[:4] = 255
    b = rng.integers(-128, 128, 4 * lanes).astype(np.int8)
    b[:4] = -128
    c0 = rng.integers(-1000, 1000, lanes).astype(np.int32)
    want = c0 + (a.astype(np.int32) * b).reshape(lanes, 4).sum(1)
    built, interp = c0.copy(), c0.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlc.build(func)(a, b, built)
    eval_prim_func(func, a, b, interp)
    np.testing.assert_array_equal(built, want)
    np.testing.assert_array_equal(interp, want)


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (round to nearest even)."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


@pytest.mark.parametrize("target", ["llvm", NO_VNNI])
def test_bf16_dense_tensorized_within_tolerance(target: str) -> None:
    """bf16 x bf16 -> float32 on vdpbf16ps where present (fallback: float32 FMAs)."""
    name = register_dp2a_bf16()
    m, n, k = 8, 32, 24
    A = te.placeholder((m, k), "uint16", "A")
    W = te.placeholder((n // 16, k // 2, 32), "uint16", "W")
    ko, ki = te.reduce_axis((0, k // 2), "ko"), te.reduce_axis((0, 2), "ki")
    from mlc.topi.x86.tensor_intrin import widen

    C = te.compute((m, n // 16, 16), lambda i, no, j: te.sum(
        widen(A[i, ko * 2 + ki], "float32") * widen(W[no, ko, j * 2 + ki], "float32"),
        axis=[ko, ki]), name="C")
    sch = tir.Schedule(te.create_prim_func([A, W, C]))
    i, no, j, kk, kj = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, no, kk, j, kj)
    sch.tensorize(j, name)
    rng = np.random.default_rng(0)
    a32, w32 = rng.standard_normal((m, k), np.float32), rng.standard_normal((n, k), np.float32)
    a, w = _bf16(a32), _bf16(w32)
    wp = w.reshape(n // 16, 16, k // 2, 2).transpose(0, 2, 1, 3).reshape(n // 16, k // 2, 32)
    c = np.zeros((m, n // 16, 16), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlc.build(sch.mod, target=target)(a, np.ascontiguousarray(wp), c)
    f32 = lambda x: (x.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    np.testing.assert_allclose(c.reshape(m, n), f32(a) @ f32(w).T, rtol=1e-4, atol=1e-4)
    ir = codegen_llvm(mlc.lower(sch.mod), cpu_features=cpu_features(parse_target(VNNI))).ir
    assert "@\"llvm.x86.avx512bf16.dpbf16ps.512\"(" in ir


# -- 7-bit activations: dp4a_u7 (vpmaddubsw + vpmaddwd on AVX2) ---------------------------------


@pytest.mark.parametrize("m,n,k", [(1, 16, 4), (7, 10, 13), (5, 33, 7), (12, 48, 64),
                                   (3, 1, 1), (64, 64, 64)])
def test_dense_u7_matches_numpy_exactly(m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * 100 + n + k)
    a = rng.integers(0, 128, (m, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    np.testing.assert_array_equal(_run(m, n, k, "uint8", a, w, data_bits=7), _ref(a, w))


@pytest.mark.parametrize("fill_w", [-128, 127])
def test_u7_edge_values_do_not_saturate(fill_w: int) -> None:
    """127 * -128 * 2 = -32512 and 127 * 127 * 2 = 32258 fit vpmaddubsw's int16 pairs."""
    m, n, k = 4, 16, 256
    a = np.full((m, k), 127, np.uint8)
    w = np.full((n, k), fill_w, np.int8)
    np.testing.assert_array_equal(_run(m, n, k, "uint8", a, w, data_bits=7), _ref(a, w))
    np.testing.assert_array_equal(_run(m, n, k, "uint8", a, w, target=AVX2 if _host_avx2()
                                       else "llvm", data_bits=7), _ref(a, w))


def _host_avx2() -> bool:
    return "avx2" in cpu_features(parse_target("llvm"))


def test_u7_tile_is_tensorized_onto_dp4a_u7_and_the_epilogue_is_in_the_tile() -> None:
    sch, _ = _gemm(8, 32, 16, "uint8", data_bits=7)
    assert "dp4a_u7(" in str(sch.mod) and "dot_16x4_u7i8" in str(sch.trace)
    low = mlc.lower(sch.mod)
    body = str(low)
    # one loop nest: the tile's output is stored inside the loops that compute it
    assert body.count("\n    for ") == 1, body
    assert body.index("dp4a_u7(") < body.index("dense_int8_out[")


def test_u7_ir_is_pmaddubsw_on_avx2_and_vpdpbusd_on_vnni() -> None:
    """Built to LLVM IR only, for CPUs this one may not be."""
    sch, _ = _gemm(8, 32, 16, "uint8", data_bits=7)
    low = mlc.lower(sch.mod)
    ir = codegen_llvm(low, cpu_features=cpu_features(parse_target(AVX2))).ir
    assert "@\"llvm.x86.avx2.pmadd.ub.sw\"(" in ir and "@\"llvm.x86.avx2.pmadd.wd\"(" in ir
    assert "vpdpbusd" not in ir
    vnni = codegen_llvm(low, cpu_features=cpu_features(parse_target(VNNI))).ir
    assert "@\"llvm.x86.avx512.vpdpbusd.512\"(" in vnni and "pmadd" not in vnni
    bw = cpu_features(parse_target("llvm -mcpu=skylake-avx512 -mattr=+avx512f,+avx512bw,+avx2"))
    assert "@\"llvm.x86.avx512.pmaddubs.w.512\"(" in codegen_llvm(low, cpu_features=bw).ir
    ssse3 = cpu_features(parse_target("llvm -mcpu=core2 -mattr=+ssse3"))
    assert "@\"llvm.x86.ssse3.pmadd.ub.sw.128\"(" in codegen_llvm(low, cpu_features=ssse3).ir
    with pytest.warns(UserWarning, match="dp4a_u7"):
        plain = codegen_llvm(low, cpu_features=frozenset()).ir
    assert "pmadd" not in plain


@pytest.mark.parametrize("lanes,a_lanes", [(4, 4), (8, 32), (16, 4), (32, 4), (16, 64)])
def test_dp4a_u7_row_llvm_interpreter_numpy(lanes: int, a_lanes: int) -> None:
    c = Buffer("C", (const(lanes),), "int32")
    a = Buffer("A", (const(a_lanes),), "uint8")
    b = Buffer("B", (const(4 * lanes),), "int8")
    r = Ramp(const(0), const(1), lanes)
    call = Call(f"int32x{lanes}", "dp4a_u7", (c[r], a[Ramp(const(0), const(1), a_lanes)],
                                             b[Ramp(const(0), const(1), 4 * lanes)]))
    func = PrimFunc((a, b, c), BufferStore(c, call, (r,)), "f_dp4a_u7")
    rng = np.random.default_rng(lanes + a_lanes)
    av = rng.integers(0, 128, a_lanes).astype(np.uint8)
    av[:4] = 127
    bv = rng.integers(-128, 128, 4 * lanes).astype(np.int8)
    bv[:4] = -128
    c0 = rng.integers(-1000, 1000, lanes).astype(np.int32)
    wide = np.tile(av, 4 * lanes // a_lanes).astype(np.int32)
    want = c0 + (wide * bv).reshape(lanes, 4).sum(1)
    built, interp = c0.copy(), c0.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlc.build(func)(av, bv, built)
    eval_prim_func(func, av, bv, interp)
    np.testing.assert_array_equal(built, want)
    np.testing.assert_array_equal(interp, want)


def test_data_bits_7_needs_uint8_data() -> None:
    from mlc.errors import TEError

    a = te.placeholder((4, 8), "int8", "A")
    wp = te.placeholder((1, 2, 64), "int8", "W")
    comp = te.placeholder((16,), "int32", "comp")
    with pytest.raises(TEError, match="data_bits=7"):
        dense_int8(a, wp, comp, data_bits=7)
