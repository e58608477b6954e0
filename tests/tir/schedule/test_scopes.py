"""Storage scopes: the GPU ones, tagged accelerator/register scopes, and a target's own."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.tir.schedule.threads import SCOPES, register_scope


def matmul() -> tir.Schedule:
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return tir.Schedule(te.create_prim_func([A, B, C]))


def test_tagged_scopes_from_the_mlc_course_hardware_chapter():
    sch = matmul()
    c = sch.get_block("C")
    a = sch.cache_read(c, 0, "global.A_reg")
    cl = sch.cache_write(c, 0, "local.acc_buffer")
    assert sch.get(a).name == "A_global_A_reg" and sch.get(cl).name == "C_local_acc_buffer"
    assert 'scope="local.acc_buffer"' in str(sch.mod)
    f = mlc.build(sch.mod, target="llvm")
    x, y = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
    z = np.zeros((16, 16), "float32")
    f(x, y, z)
    np.testing.assert_allclose(z, x @ y, rtol=1e-5)


def test_unknown_scope_says_what_works():
    sch = matmul()
    with pytest.raises(ScheduleError, match="a tagged scope such as 'local.acc_buffer'"):
        sch.cache_read(sch.get_block("C"), 0, "sharde")


def test_a_target_registers_its_scopes():
    register_scope("local.inp_buffer")
    assert "local.inp_buffer" in SCOPES
    with pytest.raises(ValueError, match="must start with one of"):
        register_scope("wgt_buffer")
