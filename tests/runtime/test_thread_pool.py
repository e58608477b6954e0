"""The thread pool of parallel loops: mlc's own copy of libgomp with a bounded spin.

Idle threads spin for ``MLC_THREAD_SPIN_US`` microseconds, then sleep, whatever OpenMP runtime
the process loaded before mlc (torch's, xgboost's, with their own settings). Each scenario
runs in a process of its own: libgomp reads its settings once, when it is loaded.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from mlc import config
from mlc.runtime import parallel

needs_threads = pytest.mark.skipif(
    not parallel.available(warn=False) or len(os.sched_getaffinity(0)) < 2,
    reason="needs libgomp and two CPUs")

IDLE_CPU = """
import ctypes, json, os, resource, time
import numpy as np
{preload}
import mlc
from mlc import te
from mlc.runtime import parallel
n = 1 << 16
A = te.placeholder((n,), name="A")
B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
s = te.create_schedule(B.op)
xo, xi = s[B].split(B.op.axis[0], factor=1024)
s[B].parallel(xo)
f = mlc.build(s, [A, B])
a = np.ones(n, "float32"); b = np.zeros(n, "float32")
for _ in range(50):
    f(a, b)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
before = cpu()
time.sleep(1.0)  # the team is idle: spinning threads would burn CPU all along
print(json.dumps({{"idle_cpu_s": cpu() - before, "ok": bool((b == 2).all()),
                   "describe": parallel.describe()}}))
"""

# a library that loaded libgomp before mlc, with threads that never sleep
PRELOAD_SPINNING = """
os.environ["GOMP_SPINCOUNT"] = "infinite"
_other = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)
del os.environ["GOMP_SPINCOUNT"]
"""


def run(code: str, env: dict[str, str] | None = None) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MLC_THREAD_SPIN_US")}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env={**clean, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_threads
@pytest.mark.parametrize("spin", ["", "50"])
def test_idle_threads_sleep_after_their_spin(spin):
    result = run(IDLE_CPU.format(preload=""), env={"MLC_THREAD_SPIN_US": spin})
    assert result["ok"]
    assert result["idle_cpu_s"] < 0.03, "the idle team kept the CPU busy"
    info = result["describe"]
    assert info["private_copy"]
    assert info["spin_us"] == (float(spin) if spin else config.THREAD_SPIN_US)
    assert (info["spin_count"] > 0) == (info["spin_us"] > 0)


@needs_threads
def test_spinning_forever_is_what_libgomp_does_when_asked():
    # the setting reaches mlc's copy: a team told never to sleep keeps one CPU busy
    result = run(IDLE_CPU.format(preload=""), env={"MLC_THREAD_SPIN_US": "inf"})
    assert result["ok"]
    assert result["idle_cpu_s"] > 0.05, "MLC_THREAD_SPIN_US=inf did not reach libgomp"


@needs_threads
def test_a_libgomp_loaded_first_with_spinning_threads_does_not_decide():
    # torch or xgboost may have loaded libgomp first, with their settings: mlc's kernels
    # used that instance (its threads then spun all second long); now they use mlc's own
    try:
        result = run(IDLE_CPU.format(preload=PRELOAD_SPINNING))
    except AssertionError as err:
        if "libgomp.so.1" in str(err) and "OSError" in str(err):
            pytest.skip("no system libgomp.so.1 to load first")
        raise
    assert result["ok"]
    assert result["idle_cpu_s"] < 0.03, "mlc's loops ran on the other library's libgomp"
    assert any("libgomp" in path for path in result["describe"]["loaded_before"])


@needs_threads
def test_openmp_settings_the_user_gave_are_kept():
    result = run(IDLE_CPU.format(preload=""), env={"GOMP_SPINCOUNT": "1000"})
    assert result["ok"]
    assert result["describe"]["user_settings"] == {"GOMP_SPINCOUNT": "1000"}
    assert result["describe"]["spin_us"] is None


@needs_threads
@pytest.mark.parametrize("spin", ["0", "50", "inf"])
def test_parallel_gemm_is_right_under_every_wait_policy(spin):
    result = run("""
        import json
        import numpy as np
        import mlc
        from mlc import te
        n = 96
        A = te.placeholder((n, n), name="A"); B = te.placeholder((n, n), name="B")
        k = te.reduce_axis((0, n), name="k")
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        s = te.create_schedule(C.op)
        s[C].parallel(C.op.axis[0])
        f = mlc.build(s, [A, B, C])
        a = np.random.rand(n, n).astype("float32"); c = np.zeros_like(a)
        ok = True
        for _ in range(200):
            f(a, a, c)
            ok &= bool(np.allclose(c, a @ a, rtol=1e-4))
        print(json.dumps({"ok": ok}))
    """, env={"MLC_THREAD_SPIN_US": spin})
    assert result == {"ok": True}


@pytest.mark.parametrize("value, want", [("", config.THREAD_SPIN_US), ("0", 0.0),
                                         ("12.5", 12.5), ("inf", math.inf)])
def test_thread_spin_us_reads_microseconds(monkeypatch, value, want):
    monkeypatch.setenv("MLC_THREAD_SPIN_US", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert config.thread_spin_us() == want


@pytest.mark.parametrize("value", ["-1", "nan", "fast"])
def test_thread_spin_us_refuses_nonsense_with_a_warning(monkeypatch, value):
    monkeypatch.setenv("MLC_THREAD_SPIN_US", value)
    with pytest.warns(UserWarning, match="MLC_THREAD_SPIN_US"):
        assert config.thread_spin_us() == config.THREAD_SPIN_US
