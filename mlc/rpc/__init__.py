"""Remote devices, TVM's ``tvm.rpc`` spelling, on a Dask worker.

The notes' program runs as written, with ``t.`` become ``mlc.``::

    lib = mlc.build(s, [A, B], "llvm", name="myfunc")   # the notes: -target=armv7l-...
    remote = mlc.rpc.connect(host, port)                 # a Dask scheduler on that machine
    lib.save("myfunc.o")
    remote.upload("myfunc.o")
    f = remote.load_module("myfunc.o")                   # the worker links it with its cc
    ctx = remote.cpu(0)
    a = mlc.nd.array(np.random.uniform(size=1024), ctx)
    b = mlc.nd.array(np.zeros(1024), ctx)
    remote_timer = f.time_evaluator("myfunc", ctx, number=10)
    time_cost = remote_timer(a, b)                       # timed on the remote machine
    np.testing.assert_equal(b.asnumpy(), expected)       # b holds the remote result

The "RPC server on the device" is a ``dask worker`` started there (``dask scheduler`` and
``dask worker tcp://HOST:8786``), the same engine that measures tuning trials
(:mod:`mlc.tune.executor`): no protocol of our own. Each call ships its arrays to the worker
and the arrays back (the remote function writes its outputs there; they are copied into the
caller's ``mlc.nd`` arrays). A module for another machine (``-target=armv7l-...``) loads only
on a worker of that machine; elsewhere ``load_module`` raises TargetError saying so.

``mlc.rpc.LocalSession()`` is the same API with this process as the device (TVM's
tutorials use it when no board is at hand).
"""

from __future__ import annotations

from mlc.rpc.session import LocalSession, RemoteModule, RPCSession, connect

__all__ = ["LocalSession", "RPCSession", "RemoteModule", "connect"]
