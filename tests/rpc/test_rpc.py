"""Remote devices on a Dask worker: the notes' RPC program runs with ``t.`` become ``mlc.``.

The cluster is one worker process on loopback (a LocalCluster), started once for the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import mlc
from mlc import graph, te
from mlc.errors import ArgumentError, ExportError, TargetError

pytest.importorskip("distributed")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    cl = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None)
    host, port = cl.scheduler_address.removeprefix("tcp://").rsplit(":", 1)
    yield host, int(port)
    cl.close()


def _notes_schedule(dtype: str = "float64"):
    n = 1024
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    return s, A, B


def test_the_notes_rpc_program_runs_as_written(cluster, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    host, port = cluster
    t = mlc
    s, A, B = _notes_schedule()
    # -- the notes' program (slide "Program Your Phone with Python from Your Laptop") with
    #    the target this worker's machine runs ("llvm" for "llvm -target=armv7l-...")
    lib = t.build(s, [A, B],
                  'llvm',
                  name='myfunc')
    remote = t.rpc.connect(host, port)
    lib.save('myfunc.o')
    remote.upload('myfunc.o')
    f = remote.load_module('myfunc.o')
    ctx = remote.cpu(0)
    a = t.nd.array(np.random.uniform(size=1024), ctx)
    b = t.nd.array(np.zeros(1024), ctx)
    remote_timer = f.time_evaluator('myfunc', ctx, number=10)
    time_cost = remote_timer(a, b)

    expected = a.asnumpy() * 2 + 1
    np.testing.assert_equal(b.asnumpy(), expected)
    # --
    assert time_cost.mean > 0 and len(time_cost.results) >= 1
    assert remote.listdir() == ["myfunc.o"]
    b2 = t.nd.array(np.zeros(1024), ctx)
    f(a, b2)  # a plain remote call
    np.testing.assert_equal(b2.numpy(), expected)
    with pytest.raises(ArgumentError, match="'B' has shape"):  # the worker checks arguments
        f(a, t.nd.array(np.zeros(10), ctx))
    remote.close()


def test_the_notes_arm_target_needs_an_arm_worker(cluster, tmp_path, monkeypatch) -> None:
    """As written (-target=armv7l-...), the object is built and uploaded; loading it on this
    x86 worker says it needs an ARM machine."""
    monkeypatch.chdir(tmp_path)
    host, port = cluster
    t = mlc
    s, A, B = _notes_schedule()
    lib = t.build(s, [A, B],
                  'llvm -target=armv7l-none-linux-gnueabihf',
                  name='myfunc')
    remote = t.rpc.connect(host, port)
    lib.save('myfunc.o')
    remote.upload('myfunc.o')
    with pytest.raises(TargetError, match="needs an arm machine"):
        remote.load_module('myfunc.o')
    remote.close()


def test_remote_graph_module_and_hostile_names(cluster, tmp_path: Path) -> None:
    host, port = cluster
    x = graph.var("x", (2, 4))
    w = np.arange(12, dtype="float32").reshape(3, 4)
    g = graph.Graph([x], [graph.nn.relu(graph.nn.dense(x, graph.const(w)))])
    graph.build(graph.optimize(g)).export_library(tmp_path / "g.so")
    with mlc.rpc.connect(f"tcp://{host}:{port}") as remote:
        assert remote.machine["triple"]
        remote.upload(tmp_path / "g.so", target="net.so")
        f = remote.load_module("net.so")
        xv = np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4)
        np.testing.assert_allclose(f(x=xv)[0], np.maximum(xv @ w.T, 0), rtol=1e-6)
        for bad in ("../evil.so", "a/b", "", ".."):
            with pytest.raises(ArgumentError, match="plain file name"):
                remote.upload(b"x", target=bad)
        with pytest.raises(ExportError, match="upload it first"):
            remote.load_module("missing.so")
        remote.upload(b"garbage", target="junk.so")
        with pytest.raises(ExportError, match="cannot load"):
            remote.load_module("junk.so")


def test_tvm_tutorial_cross_compilation_and_rpc_local_demo(tmp_path) -> None:
    """TVM's "Cross Compilation and RPC" tutorial, local_demo branch, as written
    (tvm -> mlc, te.lang as in mlc)."""
    tvm = mlc
    rpc = mlc.rpc
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    local_demo = True
    if local_demo:
        target = "llvm"
    else:
        target = "llvm -mtriple=armv7l-linux-gnueabihf"
    func = tvm.build(s, [A, B], target=target, name="add_one")
    temp = tmp_path
    path = str(temp / "lib.tar")
    func.export_library(path)
    if local_demo:
        remote = rpc.LocalSession()
    remote.upload(path)
    func = remote.load_module("lib.tar")
    dev = remote.cpu()
    a = tvm.nd.array(np.random.uniform(size=1024).astype(A.dtype), dev)
    b = tvm.nd.array(np.zeros(1024, dtype=A.dtype), dev)
    func(a, b)
    np.testing.assert_equal(b.numpy(), a.numpy() + 1)
    time_f = func.time_evaluator(func.entry_name, dev, number=10)
    cost = time_f(a, b).mean
    assert cost > 0
    assert remote.download("lib.tar") == (temp / "lib.tar").read_bytes()
    # the tutorial's cross-compiled target builds here too
    arm = tvm.build(s, [A, B], target="llvm -mtriple=armv7l-linux-gnueabihf", name="add_one")
    arm.save(str(temp / "arm.o"))
    remote.upload(str(temp / "arm.o"))
    with pytest.raises(TargetError, match="needs an arm machine"):
        remote.load_module("arm.o")
    remote.close()


def test_connect_to_nothing_fails_fast_and_typed() -> None:
    from mlc.errors import ClusterError

    with pytest.raises(ClusterError, match="cannot reach"):
        mlc.rpc.connect("127.0.0.1", 9, timeout=2)
    with pytest.raises(ArgumentError, match="port"):
        mlc.rpc.connect("127.0.0.1", 70000)
