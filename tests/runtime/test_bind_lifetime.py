"""A bound call keeps its module's machine code alive (it once jumped into freed code)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import gc
    import numpy as np
    import mlc
    from mlc import te
    A = te.placeholder((1000,), name="A")
    B = te.compute((1000,), lambda i: A[i] * 2.0, name="B")
    a, b = np.ones(1000, "float32"), np.zeros(1000, "float32")
    call = mlc.build([A, B]).bind(a, b)   # the module itself is dropped at once
    for _ in range(3):
        junk = [mlc.build([A, B]) for _ in range(3)]
        del junk
        gc.collect()
    call()
    assert (b == 2).all(), b[:4]
    print("ok")
""")


def test_a_bound_call_outlives_its_module_variable():
    # in a subprocess: the failure this guards against is a segfault
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
