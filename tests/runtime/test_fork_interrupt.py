"""A module called in a forked child, and Jupyter's interrupt during a long call.

Each scenario runs in a Python process of its own with a time limit, so a regression (the
child waiting forever for libgomp's threads, an interrupt ignored until a minute-long call
ends) fails the test instead of hanging the suite. The bounds are generous: these are
liveness checks, not timings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from mlc.runtime import parallel

needs_threads = pytest.mark.skipif(
    not parallel.available(warn=False), reason="libgomp (OpenMP runtime) not found")

LIMIT_S = 120  # a hung child is killed after this; every passing case takes a few seconds

PRELUDE = """
import json, os, sys, time, warnings
import numpy as np
import mlc
from mlc import te

def scale(n=1 << 16, parallel=True):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=1024)
    if parallel:
        s[B].parallel(xo)
    return mlc.build(s, [A, B], name="scale")

def matmul(n, parallel=False, symbolic=False):
    N = te.var("n") if symbolic else n
    A = te.placeholder((N, N), name="A"); B = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    if parallel:
        s[C].parallel(C.op.axis[0])
    return mlc.build(s, [A, B, C], name="naive_matmul")
"""


def run_script(body: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    code = PRELUDE + textwrap.dedent(body)
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=LIMIT_S, env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the scenario did not finish in {LIMIT_S} s (a hang): {err.stdout!r}")


def last_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- fork ------------------------------------------------------------------------------------
@needs_threads
def test_parallel_module_in_a_child_forked_after_the_parent_ran_it():
    proc = run_script("""
        f = scale()
        a = np.arange(1 << 16, dtype="float32"); b = np.zeros_like(a)
        f(a, b)                                   # the parent's team of threads exists now
        pid = os.fork()
        if pid == 0:
            c = np.zeros_like(a)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                f(a, c); f(a, c)
            ok = bool(np.array_equal(c, a * 2 + 1))
            forked = [str(w.message) for w in caught if "forked" in str(w.message)]
            os.write(1, (json.dumps({"ok": ok, "warnings": forked}) + "\\n").encode())
            os._exit(0)
        deadline = time.time() + 60
        while time.time() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9); os.waitpid(pid, 0)
            print(json.dumps({"hung": True})); sys.exit(0)
        f(a, b)                                   # the parent still runs in parallel
        print(json.dumps({"parent": bool(np.array_equal(b, a * 2 + 1)), "status": status}))
    """)
    lines = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    assert {"hung": True} not in lines, "the forked child never returned from the call"
    child, parent = lines[0], lines[-1]
    assert child["ok"], "the child computed a wrong result"
    assert len(child["warnings"]) == 1  # once per process, naming the reason and the fix
    assert "serially" in child["warnings"][0] and "spawn" in child["warnings"][0]
    assert parent == {"parent": True, "status": 0}


@needs_threads
def test_parallel_module_in_multiprocessing_fork_workers():
    proc = run_script("""
        import multiprocessing as mp
        f = scale()
        a = np.arange(1 << 16, dtype="float32")
        f(a, np.zeros_like(a))

        def work(k):
            out = np.zeros_like(a)
            f(a + k, out)
            return float(out.sum())

        with mp.get_context("fork").Pool(2) as pool:
            got = pool.map_async(work, range(4)).get(timeout=60)
        want = [float((2 * (a + k) + 1).sum()) for k in range(4)]
        print(json.dumps({"got": got, "want": want}))
    """)
    result = last_json(proc)
    assert result["got"] == result["want"]


@needs_threads
def test_a_child_forked_before_any_parallel_loop_keeps_its_threads():
    proc = run_script("""
        f = scale()
        a = np.arange(1 << 16, dtype="float32")
        pid = os.fork()
        if pid == 0:
            c = np.zeros_like(a)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                f(a, c)
            from mlc.runtime import parallel
            msg = {"ok": bool(np.array_equal(c, a * 2 + 1)), "serial": parallel.SERIAL_AFTER_FORK,
                   "warned": len(caught)}
            os.write(1, (json.dumps(msg) + "\\n").encode()); os._exit(0)
        os.waitpid(pid, 0)
    """)
    assert last_json(proc) == {"ok": True, "serial": False, "warned": 0}


# -- interrupt -------------------------------------------------------------------------------
INTERRUPTED_CALL = """
    n = {n}
    f = matmul(n, parallel={parallel}, symbolic={symbolic})
    a = np.ones((n, n), "float32"); b = np.ones((n, n), "float32")
    c = np.zeros((n, n), "float32")
    run = f.bind(a, b, c) if {bind} else (lambda: f(a, b, c))
    print("ready", flush=True)
    start = time.perf_counter()
    try:
        run()
        result = {{"finished_after": time.perf_counter() - start}}
    except KeyboardInterrupt as err:
        result = {{"interrupted_after": time.perf_counter() - start, "message": str(err),
                  "nan": bool(np.isnan(c).all())}}
    if {symbolic}:  # the same module runs to the end on its next call
        m = 64
        x = np.random.rand(m, m).astype("float32"); y = np.random.rand(m, m).astype("float32")
        z = np.zeros((m, m), "float32")
        f(x, y, z)
        result["next_call_ok"] = bool(np.allclose(z, x @ y, rtol=1e-4))
    print(json.dumps(result), flush=True)
"""


def interrupt_after(delay: float, **kw: object) -> dict:
    """Start the call in a process of its own, send SIGINT ``delay`` s after it started."""
    params = {"n": 4096, "parallel": False, "symbolic": False, "bind": False, **kw}
    code = PRELUDE + textwrap.dedent(INTERRUPTED_CALL.format(**params))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else ""
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the interrupted call did not return")
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("parallel_loop", [False, pytest.param(True, marks=needs_threads)])
def test_sigint_stops_a_long_call_and_outputs_are_nan(parallel_loop):
    # a naive 4096^3 matmul runs for tens of seconds; the interrupt must stop it at once
    result = interrupt_after(0.5, parallel=parallel_loop)
    assert "finished_after" not in result, f"the call ran to its end: {result}"
    assert result["interrupted_after"] < 0.5 + 3.0
    assert result["nan"], "an interrupted call's float outputs are filled with NaN"
    assert "interrupted" in result["message"] and "NaN" in result["message"]


def test_sigint_stops_a_bound_call_and_the_module_runs_again_after():
    result = interrupt_after(0.5, symbolic=True, bind=True)
    assert result["interrupted_after"] < 0.5 + 3.0
    assert result["nan"]
    assert result["next_call_ok"], "the flag of an interrupted call stopped the next one"


def test_ignored_sigint_lets_the_call_finish():
    # SIG_IGN: a SIGINT must not stop anything (mlc installs no handler then)
    proc = run_script("""
        import signal
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        f = matmul(256)
        a = np.random.rand(256, 256).astype("float32"); c = np.zeros_like(a)
        import threading
        threading.Timer(0.01, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        for _ in range(20):
            f(a, a, c)
        print(json.dumps({"ok": bool(np.allclose(c, a @ a, rtol=1e-4))}))
    """)
    assert last_json(proc) == {"ok": True}


def test_only_outer_loops_check_for_an_interrupt():
    import mlc
    from mlc import te

    n = 64
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * A[k, j], axis=k), name="C")
    f = mlc.build(te.create_schedule(C.op), [A, C])
    ll = f.get_source("ll-unopt")
    assert ll.count('load volatile i32, i32* @"__mlc_interrupt"') == 1  # loop i only
    V = te.compute((4096,), lambda i: A[i // n % n, i % n] * 2.0, name="V")
    ll = mlc.build(te.create_schedule(V.op), [A, V]).get_source("ll-unopt")
    assert "__mlc_interrupt" not in ll  # a short single loop: no check
    W = te.placeholder((1 << 21,), name="W")
    X = te.compute((1 << 21,), lambda i: W[i] * 2.0, name="X")
    s = te.create_schedule(X.op)
    xo, xi = s[X].split(X.op.axis[0], factor=16)
    s[X].vectorize(xi)
    f = mlc.build(s, [W, X])
    ll = f.get_source("ll-unopt")  # a long one checks once per block of 65536 iterations
    assert ll.count('load volatile i32, i32* @"__mlc_interrupt"') == 1
    assert ".blocks" in ll
    assert "<16 x float>" in f.get_source("ll")  # its vector code stays as it was
    w = np.random.rand(1 << 21).astype("float32")
    x = np.zeros_like(w)
    f(w, x)
    np.testing.assert_array_equal(x, w * 2)


def test_a_call_in_another_thread_is_never_interrupted():
    # the interrupt is the main thread's (Python delivers signals there)
    proc = run_script("""
        import signal, threading
        f = matmul(512)  # a few seconds
        a = np.random.rand(512, 512).astype("float32"); c = np.zeros_like(a)
        t = threading.Thread(target=lambda: f(a, a, c)); t.start()
        time.sleep(0.2)
        got = None
        try:
            os.kill(os.getpid(), signal.SIGINT); time.sleep(0.5)
        except KeyboardInterrupt:
            got = "main"
        t.join()
        print(json.dumps({"main": got, "ok": bool(np.allclose(c, a @ a, rtol=1e-3))}))
    """)
    assert last_json(proc) == {"main": "main", "ok": True}


def test_a_sigint_handler_of_the_program_is_left_alone():
    # a program that handles SIGINT itself (to stop gracefully) gets no KeyboardInterrupt
    proc = run_script("""
        import signal, threading
        seen = []
        signal.signal(signal.SIGINT, lambda *_: seen.append(1))
        f = matmul(384)
        a = np.random.rand(384, 384).astype("float32"); c = np.zeros_like(a)
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        f(a, a, c)
        time.sleep(0.5)
        print(json.dumps({"seen": len(seen), "ok": bool(np.allclose(c, a @ a, rtol=1e-3))}))
    """)
    assert last_json(proc) == {"seen": 1, "ok": True}


def test_sigint_stops_a_single_loop_of_huge_trip_count(tmp_path):
    # no loop inside to check the flag: the loop runs in blocks of 65536 iterations
    script = tmp_path / "count.py"  # TVMScript reads the function's source from a file
    script.write_text(textwrap.dedent("""
        import json, time
        import numpy as np
        import mlc
        from mlc.script import tir as T

        @T.prim_func
        def count(B: T.Buffer((1,), "float32"), n: T.int64):
            for i in T.serial(n):
                B[0] = B[0] + T.float32(1)

        f = mlc.build(count, target="llvm")
        b = np.zeros(1, "float32")
        f(b, 200_000)  # blocks of 65536 and a remainder: every iteration runs once
        small = float(b[0])
        print("ready", flush=True)
        start = time.perf_counter()
        try:
            f(b, 2**40)
            out = {"finished_after": time.perf_counter() - start}
        except KeyboardInterrupt:
            out = {"interrupted_after": time.perf_counter() - start, "nan": bool(np.isnan(b[0]))}
        out["small"] = small
        print(json.dumps(out), flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the interrupted loop did not stop")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["small"] == 200_000.0
    assert result["interrupted_after"] < 0.5 + 3.0 and result["nan"]


def test_jupyters_interrupt_button_stops_a_long_call():
    # the real thing: a kernel, a cell running a naive 4096^3 matmul, interrupt_kernel()
    manager = pytest.importorskip("jupyter_client.manager")
    pytest.importorskip("ipykernel")
    km, kc = manager.start_new_kernel(kernel_name="python3")
    try:
        kc.execute(textwrap.dedent(PRELUDE) + textwrap.dedent("""
            f = matmul(4096)
            a = np.ones((4096, 4096), "float32"); c = np.zeros((4096, 4096), "float32")
            print("start", flush=True)
            f(a, a, c)
        """))
        while True:
            msg = kc.get_iopub_msg(timeout=LIMIT_S)
            if msg["msg_type"] == "stream" and "start" in msg["content"]["text"]:
                break
        time.sleep(0.5)
        start = time.time()
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=LIMIT_S)["content"]
        took = time.time() - start
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        assert took < 5.0, f"the interrupt took {took:.1f} s"
        kc.execute("print('nan', bool(np.isnan(c).all()))")
        while True:
            msg = kc.get_iopub_msg(timeout=LIMIT_S)
            if msg["msg_type"] == "stream":
                assert msg["content"]["text"].split() == ["nan", "True"]
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
