"""The client side of :mod:`mlc.rpc`: a session on one Dask worker, and the modules loaded there.

See :mod:`mlc.rpc` for the program; :mod:`mlc.rpc.server` is what the worker runs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mlc.errors import ArgumentError, ArgumentTypeError, ClusterError
from mlc.rpc import server
from mlc.runtime.ndarray import Device
from mlc.runtime.timer import TimeResult
from mlc.tune.executor import DEFAULT_CONNECT_TIMEOUT, DaskExecutor


def connect(url: Any, port: int | None = None, key: str = "", *, worker: str | None = None,
            timeout: float = DEFAULT_CONNECT_TIMEOUT) -> RPCSession:
    """A session on a remote device: ``connect(host, port)`` (TVM's call), a scheduler
    address ``connect("tcp://host:8786")``, ``connect("local:1")`` (a worker process on this
    machine) or a ``distributed.Client``. ``worker`` picks the worker by address (default:
    the first); ``key`` is accepted for TVM's tracker spelling and not used."""
    if port is not None:
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ArgumentError(f"a port is a number from 1 to 65535, not {port!r}")
        url = f"tcp://{url}:{port}"
    if isinstance(url, str):
        executor = (DaskExecutor.connect(cluster=url) if url.startswith("local:")
                    else DaskExecutor.connect(url, timeout=timeout))
    elif type(url).__name__ == "Client" and hasattr(url, "submit"):
        executor = DaskExecutor(url)
    else:
        raise ClusterError(f"cannot connect to {url!r}: give host and port, a scheduler "
                           "address tcp://host:8786, local:1, or a distributed.Client")
    return RPCSession(executor, worker, timeout)


class RPCSession:
    """One remote device: a Dask worker, a folder there for uploads, the modules loaded."""

    def __init__(self, executor: DaskExecutor, worker: str | None = None,
                 timeout: float = 60.0) -> None:
        self._executor = executor
        executor.require_workers(timeout)
        workers = sorted(executor.client.scheduler_info(n_workers=-1)["workers"])
        if worker is None:
            worker = workers[0]
        elif worker not in workers:
            raise ClusterError(f"no worker {worker!r} on this scheduler; its workers are "
                               f"{workers}")
        self.worker = worker
        self.session = uuid.uuid4().hex
        self.machine: dict[str, Any] = self._run(server.machine)
        """The remote machine: its ``triple``, ``cpu`` and host name."""

    @property
    def address(self) -> str:
        return self.worker

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the session's worker; its exception is raised here."""
        future = self._executor.client.submit(fn, *args, pure=False, workers=[self.worker],
                                              allow_other_workers=False)
        try:
            return future.result()
        except Exception as err:  # the worker's own errors (MLCError...) pass through
            if type(err).__module__.split(".")[0] not in ("distributed", "tornado"):
                raise
            raise ClusterError(
                f"the remote device {self.worker} did not answer ({type(err).__name__}: "
                f"{err}); a worker that died or restarted loses its session: connect again "
                "and upload the module again") from None

    # -- TVM's session API ----------------------------------------------------------------------
    def cpu(self, dev_id: int = 0) -> Device:
        """The remote machine's CPU, for ``mlc.nd.array(x, remote.cpu(0))``."""
        return Device("cpu", dev_id, self)

    def upload(self, data: str | os.PathLike[str] | bytes, target: str | None = None) -> str:
        """Copy a file (a path, or bytes with a ``target`` name) to the remote device; it is
        known there by its file name."""
        if isinstance(data, (bytes, bytearray)):
            if target is None:
                raise ArgumentError("upload(bytes) needs target=, the remote file's name")
            return str(self._run(server.store, self.session, target, bytes(data)))
        path = Path(data)
        if not path.is_file():
            raise ArgumentError(f"upload: no file {str(path)!r} here")
        name = server.safe_name(target or path.name)
        return str(self._run(server.store, self.session, name, path.read_bytes()))

    def download(self, name: str) -> bytes:
        """The bytes of a file on the remote device (one uploaded, or one a program wrote)."""
        return bytes(self._run(server.fetch, self.session, server.safe_name(name)))

    def listdir(self) -> list[str]:
        return list(self._run(server.listdir, self.session))

    def load_module(self, name: str) -> RemoteModule:
        """Load an uploaded library or object (``.o`` is linked by the worker's cc) on the
        remote device. Code for another machine than the worker's raises TargetError."""
        info = self._run(server.load, self.session, server.safe_name(name))
        return RemoteModule(self, name, info)

    def close(self) -> None:
        """Forget the session's files and modules on the worker, and disconnect."""
        try:
            self._run(server.close, self.session)
        finally:
            self._executor.close()

    def __enter__(self) -> RPCSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RPCSession({self.worker}, {self.machine.get('triple')})"


class LocalSession(RPCSession):
    """TVM's ``rpc.LocalSession()``: the same session API with this process as the device
    (the tutorials' ``local_demo``): files go to a temporary folder here, modules load here."""

    def __init__(self) -> None:
        self.worker = "local"
        self.session = uuid.uuid4().hex
        self.machine = server.machine()

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        import copy

        result = fn(*copy.deepcopy(args))  # as if sent: the caller's arrays are not shared
        return copy.deepcopy(result)

    def close(self) -> None:
        server.close(self.session)


def _plain(args: tuple[Any, ...]) -> list[Any]:
    return [np.asarray(a).view(np.ndarray) if isinstance(a, np.ndarray) else a for a in args]


def _copy_back(args: tuple[Any, ...], after: list[Any]) -> None:
    """Write what the remote call left in each array into the caller's array."""
    for a, b in zip(args, after):
        if isinstance(a, np.ndarray) and b is not None and a.flags.writeable:
            np.copyto(a, b)


class RemoteModule:
    """A module loaded on a remote device: call it, time it (arrays go there and back)."""

    def __init__(self, session: RPCSession, name: str, info: dict[str, Any]) -> None:
        self.session = session
        self.name = name
        self.entry_name = str(info["entry"])
        self.is_graph = bool(info.get("graph"))
        self._signature = str(info["signature"])

    def signature(self) -> str:
        return self._signature

    def _check_devices(self, args: tuple[Any, ...]) -> None:
        for k, a in enumerate(args):
            dev = getattr(a, "device", None)
            if isinstance(dev, Device) and dev.session is not None and \
                    dev.session is not self.session:
                raise ArgumentError(f"argument {k} lives on another remote device "
                                    f"({dev!r}); make it with this session's cpu()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run once on the remote device; the arrays it wrote are copied back into ``args``.
        A graph module takes its inputs by name and returns its outputs."""
        if self.is_graph:
            if args:
                raise ArgumentTypeError("a remote graph module takes its inputs by name: "
                                        "f(x=batch)")
            inputs = {k: np.asarray(v).view(np.ndarray) for k, v in kwargs.items()}
            return self.session._run(server.graph_run, self.session.session, self.name,
                                     inputs)
        if kwargs:
            raise ArgumentTypeError(f"{self.entry_name}() takes its arguments by position")
        self._check_devices(args)
        after = self.session._run(server.call, self.session.session, self.name, _plain(args))
        _copy_back(args, after)
        return None

    def time_evaluator(self, func_name: str | None = None, dev: Any = None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: float = 0) -> Callable[..., TimeResult]:
        """TVM's ``f.time_evaluator("myfunc", ctx, number=10)``: a function of the arrays that
        times the call on the remote machine and returns its :class:`TimeResult`."""
        if self.is_graph:
            raise ArgumentError("time a remote graph module's calls with time.perf_counter "
                                "around f(x=...), or export its function alone")
        if func_name is not None and func_name != self.entry_name:
            raise ArgumentError(f"the remote module's function is {self.entry_name!r}, not "
                                f"{func_name!r}")
        if dev is not None and isinstance(dev, Device) and dev.session not in (None,
                                                                               self.session):
            raise ArgumentError(f"{dev!r} is another session's device")
        if not isinstance(number, int) or not isinstance(repeat, int) or number < 1 \
                or repeat < 1:
            raise ArgumentError(f"number and repeat are whole numbers >= 1 (got {number!r}, "
                                f"{repeat!r})")

        def evaluate(*args: Any) -> TimeResult:
            self._check_devices(args)
            result, after = self.session._run(server.time_call, self.session.session,
                                              self.name, _plain(args), number, repeat,
                                              min_repeat_ms)
            _copy_back(args, after)
            return result  # type: ignore[no-any-return]

        return evaluate

    def __repr__(self) -> str:
        return f"RemoteModule({self.entry_name}({self._signature}) on {self.session.worker})"
