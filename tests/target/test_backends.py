"""A target owns its pipeline: common passes -> the target's passes -> its codegen -> its Module."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import LoweringError, TargetError
from mlc.runtime import Module
from mlc.target import KINDS, TargetKind, backend, parse_target
from mlc.target.cuda.module import CUDAModule
from mlc.tir.stmt import KernelLaunch
from mlc.tir.verify import verify_well_formed
from mlc.transform import run_passes

ROOT = Path(mlc.__file__).resolve().parent


def gpu_schedule() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.x"))
    return s, [A, B]


def test_every_kind_has_a_backend_with_its_module_class() -> None:
    for kind in KINDS:
        be = backend(kind)
        assert be.kind == kind
        assert isinstance(be.module_class, type)
    assert backend("llvm").module_class is Module
    assert backend("cuda-sim").module_class is CUDAModule
    assert [name for name, _ in backend("cuda").passes] == ["split_host_device",
                                                            "insert_thread_sync"]
    assert backend("llvm").passes == ()
    assert parse_target("cuda").has_feature("gpu") and not parse_target("c").has_feature("gpu")


def test_kind_is_an_enum_that_reads_as_its_name() -> None:
    tgt = parse_target("cuda-sim")
    assert tgt.kind is TargetKind.CUDA_SIM and tgt.kind == "cuda-sim" and str(tgt) == "cuda-sim"
    with pytest.raises(TargetError, match="unknown target kind 'vulkan'"):
        parse_target("vulkan")


def test_lower_with_a_gpu_target_shows_the_kernel_launches() -> None:
    s, args = gpu_schedule()
    text = str(mlc.lower(s, args, target="cuda-sim"))
    assert 'with launch_kernel("main_kernel", blockIdx_x=4, threadIdx_x=64):' in text
    assert "i_0 = blockIdx.x" in text
    assert "launch_kernel" not in str(mlc.lower(s, args))


def test_gpu_passes_are_traced_and_verified(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLC_TRACE", "1")
    monkeypatch.setenv("MLC_DEBUG", "1")
    s, args = gpu_schedule()
    f = mlc.build(s, args, target="cuda-sim")
    out = capsys.readouterr().out
    for name in ("flatten_buffers", "split_host_device", "insert_thread_sync", "simulate_gpu"):
        assert f"== after {name} ==" in out
    a = np.arange(256, dtype="float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_a_kernel_launch_is_well_formed_ir() -> None:
    s, args = gpu_schedule()
    func = mlc.lower(s, args, target="cuda")
    verify_well_formed(func)
    (k,) = [n for n in func.body.seq] if hasattr(func.body, "seq") else [func.body]
    assert isinstance(k, KernelLaunch)
    assert k.grid == {"blockIdx.x": k.grid["blockIdx.x"]} and k.threads == {"threadIdx.x": 64}
    assert k.threads_per_block == 64


def test_a_pass_that_breaks_the_program_is_named() -> None:
    s, args = gpu_schedule()
    func = mlc.lower(s, args)

    def drop_params(f):  # a broken pass: the body still uses A and B
        return type(f)((), f.body, f.name)

    with pytest.raises(LoweringError, match="after the lowering pass 'broken'"):
        run_passes(func, [("broken", drop_params)], verify=True)


KIND_BRANCH = re.compile(
    r"""(kind|target|accel|device)\s*(==|!=|in)\s*[\(\[]?\s*["'](llvm|c|cuda|cuda-sim|vdla)["']"""
)


def test_no_target_kind_branches_outside_the_target_package() -> None:
    """Adding a target is a folder in mlc/target; nothing else branches on the kind."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        if path.relative_to(ROOT).parts[0] == "target":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if KIND_BRANCH.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []
