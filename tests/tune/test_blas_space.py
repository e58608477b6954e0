"""The default tune_tir space: BLAS-style decisions for products accumulated over a
reduction (register tile, packing, cache blocking), and every point computes right."""

from __future__ import annotations

import random

import numpy as np
import pytest

import mlc
from mlc import te, tune
from mlc.target.llvm.cpu import host_simd, simd_of
from mlc.tune.tiling import KC_DEPTH, MC_ROWS, NC_PANELS, register_tiles


def _matmul(n: int, m: int, k: int):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def _conv2d(c: int = 8, hw: int = 8, f: int = 16):
    data = te.placeholder((1, c, hw + 2, hw + 2), name="data")
    weight = te.placeholder((f, c, 3, 3), name="weight")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    out = te.compute((1, f, hw, hw), lambda b, o, y, x: te.sum(
        data[b, rc, y + ry, x + rx] * weight[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    return te.create_prim_func([data, weight, out])


def _conv_reference(d: np.ndarray, w: np.ndarray) -> np.ndarray:
    f, c, _, _ = w.shape
    hw = d.shape[-1] - 2
    out = np.zeros((1, f, hw, hw), "float32")
    for ry in range(3):
        for rx in range(3):
            out[0] += np.einsum("fc,cyx->fyx", w[:, :, ry, rx], d[0, :, ry:ry + hw, rx:rx + hw])
    return out


def test_register_tiles_fit_the_vector_registers():
    avx2 = simd_of(frozenset({"avx", "avx2", "fma"}))
    assert (avx2.lanes, avx2.registers) == (8, 16)
    assert register_tiles(1024, 1024, 8, 16) == [(14, 8), (8, 8), (6, 16), (4, 16), (2, 32)]
    assert (6, 16) in register_tiles(960, 960, 8, 16)
    for mr, nr in register_tiles(1024, 1024, 8, 16):
        assert mr * nr // 8 + nr // 8 + 1 <= 16
    avx512 = simd_of(frozenset({"avx", "avx2", "avx512f"}))
    for mr, nr in register_tiles(1024, 1024, avx512.lanes, avx512.registers):
        acc = mr * nr // 16
        assert 16 <= acc and acc + nr // 16 + 1 <= 32


def test_matmul_space_has_the_blas_decisions():
    space = tune.SampledSpace(_matmul(64, 64, 64), tune.default_space)
    sampled = [inst for inst in space.trace.insts if inst.kind == "sample_categorical"]
    candidates = [inst.inputs["candidates"] for inst in sampled]
    simd = host_simd()
    tiles = register_tiles(64, 64, simd.lanes, simd.registers)
    assert candidates == [list(range(len(tiles))), MC_ROWS, KC_DEPTH, NC_PANELS, [0, 1], [0, 1],
                          [1, 4]]
    kinds = [inst.kind for inst in space.trace.insts]
    assert "decompose_reduction" in kinds and "parallel" in kinds and "vectorize" in kinds


def test_a_point_that_packs_both_operands_copies_panels_inside_the_parallel_loop():
    space = tune.SampledSpace(_matmul(64, 64, 64), tune.default_space)
    simd = host_simd()
    tiles = register_tiles(64, 64, simd.lanes, simd.registers)
    dividing = next(k for k, (mr, _) in enumerate(tiles) if 64 % mr == 0)
    index = space.index_of_decisions([dividing, 0, 0, 1, 1, 1, 1])
    lowered = mlc.lower(space.build(index))
    text = str(lowered)
    assert "A_global" in text and "B_global" in text
    assert text.index("parallel") < text.index("A_global = alloc_buffer")


@pytest.mark.parametrize("shape", [(64, 64, 64), (48, 80, 96), (128, 32, 256), (100, 64, 64)])
def test_sampled_matmul_points_compute_the_product(shape):
    n, m, k = shape
    space = tune.SampledSpace(_matmul(n, m, k), tune.default_space)
    rng = np.random.default_rng(0)
    a = rng.random((n, k), dtype="float32")
    b = rng.random((k, m), dtype="float32")
    simd = host_simd()
    tiles = register_tiles(n, m, simd.lanes, simd.registers)
    # every register tile (guarded ones included), with random other decisions
    points = [space.index_of_decisions([t] + [random.Random(t).randrange(d) for d in
                                              space.dims[1:]]) for t in range(len(tiles))]
    for index in points + random.Random(1).sample(range(space.size), 4):
        c = np.zeros((n, m), "float32")
        mlc.build(space.build(index))(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, err_msg=str(space.config_json(index)))


def test_sampled_conv2d_points_compute_the_convolution():
    space = tune.SampledSpace(_conv2d(), tune.default_space)
    assert any(inst.kind == "sample_categorical" for inst in space.trace.insts)
    rng = np.random.default_rng(0)
    d = rng.random((1, 8, 10, 10), dtype="float32")
    w = rng.random((16, 8, 3, 3), dtype="float32")
    want = _conv_reference(d, w)
    for index in random.Random(2).sample(range(space.size), 4):
        out = np.zeros((1, 16, 8, 8), "float32")
        mlc.build(space.build(index))(d, w, out)
        np.testing.assert_allclose(out, want, rtol=1e-4, err_msg=str(space.config_json(index)))


def test_tune_tir_returns_a_schedule_that_replays():
    func = _matmul(32, 32, 32)
    best = tune.tune_tir(func, max_trials=4, tuner="random", progress=False,
                         measure_option=tune.measure_option(number=1, repeat=1))
    replayed = mlc.tir.Schedule(func)
    best.trace.apply_to_schedule(replayed)
    a = np.random.rand(32, 32).astype("float32")
    b = np.random.rand(32, 32).astype("float32")
    c = np.zeros((32, 32), "float32")
    mlc.build(replayed.mod)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_padded_conv2d_from_topi_computes_the_convolution():
    from mlc import topi

    data = te.placeholder((1, 8, 8, 8), name="data")
    weight = te.placeholder((16, 8, 3, 3), name="weight")
    out = topi.nn.conv2d(data, weight, strides=1, padding=1)
    space = tune.SampledSpace(te.create_prim_func([data, weight, out]), tune.default_space)
    rng = np.random.default_rng(0)
    d = rng.random((1, 8, 8, 8), dtype="float32")
    w = rng.random((16, 8, 3, 3), dtype="float32")
    want = _conv_reference(np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1))), w)
    for index in random.Random(3).sample(range(space.size), 3):
        got = np.zeros((1, 16, 8, 8), "float32")
        mlc.build(space.build(index))(d, w, got)
        np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=str(space.config_json(index)))


def _alloc_shapes(func) -> dict[str, list[int]]:
    from mlc.tir.functor import post_order_visit
    from mlc.tir.stmt import Allocate

    out: dict[str, list[int]] = {}
    post_order_visit(func.body, lambda n: out.__setitem__(
        n.buffer.name, [int(d.value) for d in n.buffer.shape]) if isinstance(n, Allocate) else None)
    return out


def _point(space, n: int, m: int, *, tile: int, mc: int, kc: int, nc: int, pack_a: int,
           pack_b: int, unroll: int) -> int:
    index = space.index_of_decisions([tile, MC_ROWS.index(mc), KC_DEPTH.index(kc),
                                      NC_PANELS.index(nc), pack_a, pack_b, [1, 4].index(unroll)])
    assert index is not None
    return index


def test_the_packed_rhs_panel_is_stored_in_slivers_of_the_register_tile_width():
    # BLIS's layout [nc/nr][kc][nr]: the micro-kernel's kc x nr sliver is contiguous
    simd = host_simd()
    tiles = register_tiles(64, 64, simd.lanes, simd.registers)
    # the widest tile narrower than N (with AVX-512 a 64-wide tile is all of N = 64: one
    # panel, nothing to lay out)
    t = max((k for k in range(len(tiles)) if tiles[k][1] < 64), key=lambda k: tiles[k][1])
    mr, nr = tiles[t]
    space = tune.SampledSpace(_matmul(64, 64, 64), tune.default_space)
    index = _point(space, 64, 64, tile=t, mc=32, kc=64, nc=NC_PANELS[-1], pack_a=0, pack_b=1,
                   unroll=1)
    sch = space.schedule(index)
    layout = [i for i in sch.trace.insts if i.kind == "transform_layout"]
    assert [i.inputs["index_map"] for i in layout] == [f"lambda i0, j: (j // {nr}, i0, j % {nr})"]
    lowered = mlc.lower(sch.mod)
    nc = 64  # every panel of 64 columns
    assert _alloc_shapes(lowered)["B_global"] == [64 * nc]
    text = str(lowered)
    # sliver j_1: k rows of nr floats (kc covers the whole reduction: r is not split)
    assert f"B_global[ramp(j_1 * {64 * nr} + r * " in text
    a, b = np.random.rand(64, 64).astype("float32"), np.random.rand(64, 64).astype("float32")
    c = np.zeros((64, 64), "float32")
    mlc.build(sch.mod)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_a_guarded_register_tile_packs_lhs_per_block_and_no_block_lies_past_the_end():
    # 100 rows in tiles of a height that does not divide them: row blocks of whole tiles
    # (the number of blocks times their height covers 100 rows with less than one tile to
    # spare) and each block's copy of A private to it, inside the parallel loop
    simd = host_simd()
    tiles = register_tiles(100, 64, simd.lanes, simd.registers)
    guarded = [k for k, (mr, _) in enumerate(tiles) if 100 % mr]
    assert guarded, tiles
    space = tune.SampledSpace(_matmul(100, 64, 64), tune.default_space)
    a = np.random.rand(100, 64).astype("float32")
    b = np.random.rand(64, 64).astype("float32")
    for t in guarded:
        mr = tiles[t][0]
        for mc in MC_ROWS:
            index = _point(space, 100, 64, tile=t, mc=mc, kc=64, nc=1, pack_a=1, pack_b=1,
                           unroll=4)
            sch = space.schedule(index)
            split = next(i for i in sch.trace.insts if i.kind == "split")
            _, per_block, height = split.inputs["factors"]
            blocks = -(-100 // (per_block * mr))
            assert height == mr and blocks * per_block * mr - 100 < mr
            lowered = mlc.lower(sch.mod)
            text = str(lowered)
            # several row blocks: each block's copy of A is private, inside the parallel
            # loop; one block (mc covers the rows): its copy is shared, read by parallel tiles
            assert "parallel" in text
            if blocks > 1:
                assert text.index("parallel") < text.index("A_global = alloc_buffer")
            assert _alloc_shapes(lowered)["A_global"] == [per_block * mr * 64]
            c = np.zeros((100, 64), "float32")
            mlc.build(sch.mod)(a, b, c)
            np.testing.assert_allclose(c, a @ b, rtol=1e-4, err_msg=f"tile {tiles[t]}, mc {mc}")


def test_register_tiles_stack_vectors_over_another_loop_when_they_do_not_fit_side_by_side():
    # 56 output columns take one vector of 8 side by side, not two; two output rows do
    assert register_tiles(64, 56, 8, 16) == [(14, 8), (8, 8)]
    assert register_tiles(64, 56, 8, 16, stack=56) == [(14, 8), (8, 8), (6, 16), (4, 16),
                                                        (2, 32)]
    assert register_tiles(64, 56, 8, 16, stack=3) == [(14, 8), (8, 8), (4, 24)]  # 3 rows


def test_a_conv2d_tile_of_two_output_rows_computes_the_convolution():
    # the conv's register tile: filters x (2 output rows x 8 columns), each input row a
    # vector load shared by the filters' broadcast weights
    simd = host_simd()
    space = tune.SampledSpace(_conv2d(c=8, hw=8, f=16), tune.default_space)
    tiles = register_tiles(16, 8, simd.lanes, simd.registers, stack=8)
    stacked = [k for k, (_, nr) in enumerate(tiles) if nr > 8 and nr % simd.lanes == 0]
    assert stacked or simd.lanes > 8, tiles
    rng = np.random.default_rng(0)
    d = rng.random((1, 8, 10, 10), dtype="float32")
    w = rng.random((16, 8, 3, 3), dtype="float32")
    want = _conv_reference(d, w)
    for t in stacked:
        for pack_a, pack_b in [(0, 0), (1, 1)]:
            index = space.index_of_decisions([t, 0, 0, 0, pack_a, pack_b, 1])
            sch = space.schedule(index)
            rows = tiles[t][1] // simd.lanes
            splits = [i.inputs["factors"] for i in sch.trace.insts if i.kind == "split"]
            assert [None, rows] in splits  # the output rows, split into pairs (or more)
            out = np.zeros((1, 16, 8, 8), "float32")
            mlc.build(sch.mod)(d, w, out)
            np.testing.assert_allclose(out, want, rtol=1e-4, err_msg=str(tiles[t]))
