"""The dense kernels' register tile (issue 30): rows x nv vectors of accumulators, so the FMA
chains are independent. Shapes that do not divide the tile still compute what numpy computes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlc
from mlc import te, topi
from mlc.topi.schedule import register_tile

RNG = np.random.default_rng(30)


@pytest.mark.parametrize("nrows,ncols,vec,expect", [
    (1, 256, 16, (1, 8)),    # batch 1: one row, eight vectors
    (64, 256, 16, (8, 2)),   # batch 64, 784 inputs: 8 rows x 2 vectors
    (12, 256, 16, (4, 4)),   # rows not a multiple of 8: 4 rows x 4 vectors
    (64, 48, 16, (4, 3)),    # three vectors of columns in all
    (1, 10, 10, (1, 1)),     # one short vector
    (3, 40, 8, (1, 5)),      # fewer than 4 rows: one row, five vectors of 8
    (64, 33, 16, (4, 1)),    # columns with a tail: one vector per row
])
def test_register_tile_choice(nrows: int, ncols: int, vec: int,
                              expect: tuple[int, int]) -> None:
    assert register_tile("dense_pack", nrows, ncols, vec, 784) == expect


def test_register_tile_keeps_4x4_when_the_weight_block_fits_l1() -> None:
    """64 inputs: a 4 x 4 tile's weight block is 64 x 64 floats (16 KB), in L1: 4 x 4
    (the 8 x 2 tile pays off only when the block streams from L2)."""
    assert register_tile("dense_pack", 64, 256, 16, 64) == (4, 4)


def test_conv_tiles_output_rows() -> None:
    """A conv's rows are output image rows: 4 rows x 2 vectors of a 32-wide image, 8 rows of
    one vector of a 16-wide one (before: one vector, one chain of dependent FMAs)."""
    assert register_tile("conv2d", 32, 32, 16) == (4, 2)
    assert register_tile("conv2d", 16, 16, 16) == (8, 1)


@pytest.mark.parametrize("m,k,n,bn", [(1, 784, 256, 16), (64, 784, 256, 16), (5, 17, 48, 16),
                                      (3, 9, 40, 8), (64, 128, 10, 10), (9, 33, 33, 11),
                                      (1, 1, 1, 1), (4, 3, 64, 16), (64, 100, 192, 64),
                                      (1, 100, 192, 64), (6, 20, 96, 32), (4, 8, 64, 64)])
def test_dense_pack_tiles_compute_numpy(m: int, k: int, n: int, bn: int) -> None:
    x = te.placeholder((m, k), name="x")
    wp = te.placeholder((n // bn, k, bn), name="wp")
    b = te.placeholder((n,), name="b")
    y = topi.nn.relu(topi.nn.bias_add(topi.nn.dense_pack(x, wp), b))
    xa = RNG.standard_normal((m, k)).astype("float32")
    wa = RNG.standard_normal((n, k)).astype("float32")
    ba = RNG.standard_normal(n).astype("float32")
    wpa = np.ascontiguousarray(wa.reshape(n // bn, bn, k).transpose(0, 2, 1))
    sch = topi.default_schedule([x, wp, b, y])
    out = np.zeros((m, n), "float32")
    mlc.build(sch.mod, target="llvm")(xa, wpa, ba, out)
    np.testing.assert_allclose(out, np.maximum(xa @ wa.T + ba, 0), rtol=1e-4, atol=1e-4)


def test_batch_one_keeps_eight_accumulators_in_the_reduction() -> None:
    """x (1, 784) times a packed (256, 784) weight: the k loop updates 8 distinct vectors
    of the accumulator (one before the change: a single chain of 784 dependent FMAs)."""
    x = te.placeholder((1, 784), name="x")
    wp = te.placeholder((16, 784, 16), name="wp")
    y = topi.nn.dense_pack(x, wp)
    b = te.placeholder((256,), name="b")
    z = topi.nn.relu(topi.nn.bias_add(y, b))
    text = str(mlc.lower(topi.default_schedule([x, wp, b, z]).mod))
    k_loop = text[text.index("for k in"):]
    stores = set(re.findall(r"dense_pack\[ramp\((\d+), 1, 16\)\] =", k_loop))
    assert len(stores) == 8


def test_conv_reads_a_materialized_padding() -> None:
    """conv3x3 with padding 1: the padded input is one copy before the conv, so the conv's
    reduction has no border test (the inlined padding put a select and two index checks in
    every multiply-add, and nothing vectorized: 1.1 ms for a 1x3x32x32 image)."""
    x = te.placeholder((1, 3, 32, 32), name="x")
    w = te.placeholder((16, 3, 3, 3), name="w")
    y = topi.nn.relu(topi.nn.conv2d(x, w, padding=1))
    sch = topi.default_schedule([x, w, y])
    text = str(mlc.lower(sch.mod))
    conv_part = text[text.index("for rc in"):]
    assert "select" not in conv_part.split("relu[")[0]
    assert "ramp(" in conv_part
    xa = RNG.standard_normal((1, 3, 32, 32)).astype("float32")
    wa = RNG.standard_normal((16, 3, 3, 3)).astype("float32")
    out = np.zeros((1, 16, 32, 32), "float32")
    mlc.build(sch.mod, target="llvm")(xa, wa, out)
    from mlc.graph.op import get_op

    ref = get_op("nn.conv2d").ref(xa, wa, strides=(1, 1), padding=(1, 1, 1, 1),
                                        dilation=(1, 1))
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)
