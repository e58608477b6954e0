"""The hand-written conv2d layer (3x3, stride 1, padding 1, bias/ReLU/max-pool on the ALU)."""

from __future__ import annotations

import numpy as np
import pytest

from mlc.errors import VDLAProgramError
from mlc.vdla import Alu, AluOp, Load
from mlc.vdla.conv import ConvTiling, conv2d, conv2d_reference


def _layer(n: int, c: int, o: int, h: int, w: int, seed: int = 0
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, c, h, w), dtype=np.int8)
    wt = rng.integers(-8, 8, (o, c, 3, 3), dtype=np.int8)
    bias = rng.integers(-3000, 3000, o, dtype=np.int32)
    return x, wt, bias


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dims,pool,tiling", [
    ((8, 16, 16, 4, 6), True, ConvTiling(2, 1)),
    ((8, 8, 16, 6, 4), False, ConvTiling(3, 2)),
    ((16, 16, 8, 2, 2), True, ConvTiling(2, 1)),   # two batch tiles, a 2x2 image
])
def test_conv2d_matches_numpy(threads: int, dims: tuple[int, ...], pool: bool,
                              tiling: ConvTiling) -> None:
    x, w, bias = _layer(*dims)
    out, stats, program = conv2d(x, w, bias, shift=6, pool=pool, tiling=tiling,
                                 virtual_threads=threads)
    ref = conv2d_reference(x, w, bias, shift=6, pool=pool)
    pre = conv2d_reference(x, w, bias, shift=6, pool=False)
    assert 0 < (pre > 0).mean() < 1 and pre.max() == 127      # the clip and ReLU both bite
    np.testing.assert_array_equal(out, ref)
    n, c, o, h, wd = dims
    assert stats.macs == n * c * o * h * wd * 9
    ops = {ins.op for ins in program.instructions if isinstance(ins, Alu)}
    assert ops == {AluOp.ADD, AluOp.SHR, AluOp.MAX, AluOp.MIN}


def test_padding_comes_from_the_dma() -> None:
    """A one-pixel image: only the centre tap sees data, the rest is DMA padding."""
    x, w, bias = _layer(8, 8, 8, 1, 1)
    out, _, program = conv2d(x, w, bias, shift=4, pool=False, tiling=ConvTiling(1, 1))
    np.testing.assert_array_equal(out, conv2d_reference(x, w, bias, 4, False))
    loads = [ins for ins in program.instructions if isinstance(ins, Load)]
    assert any(ins.y_pad == (1, 1) and ins.x_pad == (1, 1) for ins in loads)


def test_two_virtual_threads_take_fewer_cycles() -> None:
    x, w, bias = _layer(8, 32, 32, 8, 16)
    _, one, _ = conv2d(x, w, bias, tiling=ConvTiling(2, 2), virtual_threads=1)
    _, two, _ = conv2d(x, w, bias, tiling=ConvTiling(2, 2), virtual_threads=2)
    assert two.cycles < one.cycles and two.utilization > one.utilization


def test_conv2d_refuses_what_it_cannot_run() -> None:
    x, w, bias = _layer(8, 8, 8, 4, 4)
    with pytest.raises(VDLAProgramError, match="multiples of 8"):
        conv2d(x[:4], w, bias)
    with pytest.raises(VDLAProgramError, match="multiples of 8"):
        conv2d(x.astype(np.int32), w, bias)
    with pytest.raises(VDLAProgramError, match="shift must be"):
        conv2d(x, w, bias, shift=40)
    with pytest.raises(VDLAProgramError, match="must divide"):
        conv2d(x, w, bias, tiling=ConvTiling(3, 1))
    with pytest.raises(VDLAProgramError, match="smaller tiling"):
        conv2d(*_layer(8, 8, 8, 64, 64), tiling=ConvTiling(8, 1))
