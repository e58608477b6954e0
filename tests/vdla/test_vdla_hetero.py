"""The heterogeneous quantized MLP: input quantization and softmax on the CPU, the dense
layers (+bias, relu, requantize) on VDLA; exact against the same integer arithmetic on the
CPU and in numpy."""

from __future__ import annotations

import numpy as np
import pytest

from mlc.examples.mlp import load_data, train_mlp
from mlc.graph.hetero import build_hetero_mlp, integer_forward, quantize_mlp_for_vdla


@pytest.fixture(scope="module")
def digits() -> tuple[object, np.ndarray, np.ndarray]:
    x_train, y_train, x_test, y_test = load_data()
    params = train_mlp(x_train, y_train, epochs=10)
    return quantize_mlp_for_vdla(params, x_train), x_test[:100], y_test[:100]


def test_quantization_is_integer_with_shifts(digits: tuple) -> None:
    qm, _, _ = digits
    assert [w.dtype for w in qm.wq] == [np.int8] * 3 and [b.dtype for b in qm.bq] == [np.int32] * 3
    assert qm.shift[-1] is None and all(isinstance(s, int) and s >= 0 for s in qm.shift[:-1])


def test_vdla_mlp_equals_the_cpu_and_numpy(digits: tuple) -> None:
    qm, x, y = digits
    ref = integer_forward(qm, x)
    cpu = build_hetero_mlp(qm, len(x), accel="llvm")
    acc = build_hetero_mlp(qm, len(x), threads=2, block=8)
    # 100 rows are padded to 112 (whole blocks of 8 rows per thread), 10 classes to 16
    assert acc.padded_batch == 112 and acc.dims == [(64, 64), (64, 32), (32, 16)]
    np.testing.assert_array_equal(cpu.logits(x), ref)
    np.testing.assert_array_equal(acc.logits(x), ref)
    probs = acc(x)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    assert (probs.argmax(1) == cpu(x).argmax(1)).all()
    assert (probs.argmax(1) == y).mean() > 0.85
    assert len(acc.stats) == 3 and acc.cycles == sum(s.cycles for s in acc.stats) > 0
    assert [t for _, t in acc.parts] == ["llvm", "vdla", "vdla", "vdla", "llvm"]


def test_a_batch_of_another_size_is_refused(digits: tuple) -> None:
    qm, x, _ = digits
    net = build_hetero_mlp(qm, 16)
    with pytest.raises(ValueError, match=r"16 rows of 64 features; got shape \(100, 64\)"):
        net(x)
