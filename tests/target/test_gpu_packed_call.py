"""A packed call (a te.extern stage) in a program built for a GPU target: refused with
what it is and what would work, not the generic 'not inside a GPU thread loop'."""

from __future__ import annotations

import pytest

import mlc
from mlc import te, tir
from mlc.errors import CodegenError


@pytest.mark.parametrize("target", ["cuda", "cuda-sim"])
def test_an_extern_stage_on_a_gpu_target_names_the_packed_function(target):
    A = te.placeholder((64,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed(
        "tvm.contrib.my_tvm_addone", ins[0], outs[0]), name="B")
    C = te.compute((64,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(CodegenError) as err:
        mlc.build(s, [A, C], target=target)
    msg = str(err.value)
    assert "calls the packed function 'tvm.contrib.my_tvm_addone'" in msg
    assert "target='llvm'" in msg and "te.compute" in msg
