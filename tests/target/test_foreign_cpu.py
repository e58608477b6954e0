"""Code built for another CPU: the notebooks build for VNNI or AVX-512 CPUs to read the
code. Running such a module here died of an illegal instruction (SIGILL: the Jupyter kernel
with it), and a CPU name LLVM does not know ended the process at code generation
("LLVM ERROR: 64-bit code requested on a subtarget that doesn't support it")."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import llvmlite.binding as llvm
import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import TargetError
from mlc.target.llvm.cpu import CPU_NEEDS, cannot_run_here
from mlc.target.llvm.dot import cpu_features
from mlc.target.target import parse_target

HOST = cpu_features()
MISSING = next((f for f in ("avx512f", "avx512vnni", "avx512fp16", "amx-tile", "avx2")
                if f not in HOST), None)


def program():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, inner = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(inner)
    return s, [A, B]


@pytest.mark.parametrize("target, named", [("llvm -mcpu=garbage", "'garbage'"),
                                           ("llvm -mattr=+nosuchfeature", "'+nosuchfeature'")])
def test_a_cpu_or_feature_llvm_does_not_know_is_refused(target: str, named: str) -> None:
    with pytest.raises(TargetError, match=re.escape(f"LLVM does not know {named}")) as err:
        mlc.build(*program(), target=target)
    assert llvm.get_host_cpu_name() in str(err.value)  # says what would work


def test_the_process_survives_an_unknown_cpu() -> None:
    code = textwrap.dedent("""
        import mlc
        from mlc import te
        from mlc.errors import TargetError
        A = te.placeholder((64,), name="A")
        B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
        try:
            mlc.build(te.create_schedule(B.op), [A, B], target="llvm -mcpu=garbage")
        except TargetError:
            print("refused")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "refused"


@pytest.mark.skipif(MISSING is None, reason="this CPU has every feature the test could use")
def test_a_module_for_features_this_cpu_lacks_is_for_reading() -> None:
    f = mlc.build(*program(), target=f"llvm -mattr=+{MISSING}")
    assert "define" in f.get_source("ll") and f.get_source("asm")
    a, b = np.ones(64, "float32"), np.zeros(64, "float32")
    with pytest.raises(TargetError, match=f"cannot run here: it may use {MISSING}, which this"):
        f(a, b)
    with pytest.raises(TargetError, match="build for target='llvm' to run on this machine"):
        f.bind(a, b)
    assert not b.any()


def test_code_for_a_cpu_whose_instructions_this_one_has_runs() -> None:
    runnable = [name for name, needs in CPU_NEEDS.items() if needs <= HOST]
    assert runnable, "every x86-64 CPU has SSE2"
    f = mlc.build(*program(), target=f"llvm -mcpu={runnable[-1]}")
    a, b = np.arange(64, dtype="float32"), np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def test_what_cannot_run_says_why() -> None:
    assert cannot_run_here(parse_target("llvm")) is None
    assert "cannot tell which instructions" in (
        cannot_run_here(parse_target("llvm -mcpu=bonnell")) or "")
    needs = {name: needs - HOST for name, needs in CPU_NEEDS.items()}
    for name, lacking in needs.items():
        why = cannot_run_here(parse_target(f"llvm -mcpu={name}"))
        if name == llvm.get_host_cpu_name() or not lacking:
            assert why is None, name
        else:
            assert why is not None and sorted(lacking)[0] in why, name
