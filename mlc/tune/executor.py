"""Where measurements and grading jobs run: a local pool (the default) or a Dask cluster.

One small interface, :class:`Executor`, serves the tuner and the autograder::

    ex = LocalExecutor(2)                      # threads on this machine; nothing to install
    ex = DaskExecutor.connect("tcp://host:8786")   # or connect(cluster="local:2")
    futures = [ex.submit(fn, arg) for arg in args]
    for fut in ex.as_completed(futures):       # in the order they finish: feeds a progress bar
        fut.result()

A task on a Dask worker that dies is run again on another worker by Dask's scheduler, so a
future still yields exactly one result: nothing is lost and nothing is counted twice as long
as the task itself writes nothing outside its own temporary folder (ours do not).

**Timing exclusivity.** Builds fan out freely, but timings are trustworthy only if nothing
else runs on the machine's cores meanwhile. :func:`timing_lock` is a lock per *machine* (an
``flock`` on one file, by default ``/tmp/mlc-timing.lock``, ``MLC_TIMING_LOCK`` to change
it): every measurement on that machine takes it for its timed part only, whichever process,
Dask worker or local pool it runs in. The operating system drops the lock when its holder
dies, so a killed worker never leaves it taken.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import as_completed as _local_as_completed
from typing import Any

from mlc import config
from mlc.errors import ClusterError

DEFAULT_CONNECT_TIMEOUT = 5.0  # seconds: an unreachable scheduler fails this fast


@contextlib.contextmanager
def timing_lock(path: str | None = None) -> Iterator[None]:
    """Hold this machine's timing lock for the duration of the block (waits for it)."""
    path = path or config.timing_lock_path()
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):  # another user's file: flock works read-only
            os.fchmod(fd, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


class Executor:
    """Runs functions somewhere and hands back futures (``result()``, ``done()``)."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError

    def as_completed(self, futures: Iterable[Any]) -> Iterator[Any]:
        """The futures in the order they finish."""
        raise NotImplementedError

    @property
    def n_workers(self) -> int:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{type(self).__name__} ({self.n_workers} workers)"

    def close(self) -> None:
        pass

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalExecutor(Executor):
    """A pool of threads on this machine (each job starts its own subprocesses)."""

    def __init__(self, max_workers: int = 1) -> None:
        self._n = max(1, max_workers)
        self._pool = ThreadPoolExecutor(max_workers=self._n)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        return self._pool.submit(fn, *args)

    def as_completed(self, futures: Iterable[Any]) -> Iterator[Any]:
        return _local_as_completed(list(futures))

    @property
    def n_workers(self) -> int:
        return self._n

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as err:
        raise ClusterError(
            "running on a Dask cluster needs dask.distributed, an optional extra: "
            'pip install -e ".[distributed]"  (or pip install "dask[distributed]")'
        ) from err
    return distributed


class DaskExecutor(Executor):
    """Tasks on a Dask cluster, through a ``distributed.Client``.

    Build one with :meth:`connect` (an address or ``"local:N"``), or wrap a Client you have
    (``close`` then leaves it open). Tasks are submitted with ``pure=False``: two identical
    jobs are two jobs."""

    def __init__(self, client: Any, cluster: Any = None, *, owned: bool = False) -> None:
        self.client = client
        self._cluster = cluster  # a LocalCluster we started (closed with the executor)
        self._owned = owned or cluster is not None

    @classmethod
    def connect(cls, scheduler: str | None = None, *, cluster: str | None = None,
                timeout: float = DEFAULT_CONNECT_TIMEOUT) -> DaskExecutor:
        """Connect to the scheduler at ``scheduler`` (``tcp://host:8786``), or start a
        ``LocalCluster`` for ``cluster="local:N"`` (N worker processes, loopback only).

        An address that answers nothing raises :class:`ClusterError` after ``timeout``
        seconds instead of hanging."""
        distributed = _import_distributed()
        if cluster is not None:
            return cls(*start_local_cluster(cluster))
        if not scheduler:
            raise ClusterError("give a scheduler address (tcp://host:8786) or local:N")
        try:
            client = distributed.Client(scheduler, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as err:
            raise ClusterError(
                f"cannot reach the Dask scheduler at {scheduler!r} within {timeout:g} s "
                f"({type(err).__name__}: {err}). Is the scheduler running, and is the address "
                "(host and port, usually tcp://HOST:8786) reachable from here?"
            ) from err
        return cls(client, owned=True)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False)

    def as_completed(self, futures: Iterable[Any]) -> Iterator[Any]:
        from distributed import as_completed

        return iter(as_completed(list(futures), loop=self.client.loop))

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info(n_workers=-1)["workers"])

    @property
    def dashboard_link(self) -> str:
        return str(self.client.dashboard_link)

    def describe(self) -> str:
        return f"Dask cluster at {self.client.scheduler.address} ({self.n_workers} workers)"

    def require_workers(self, timeout: float = 60.0) -> None:
        """Wait up to ``timeout`` seconds for a first worker (a cluster still scaling up);
        with none, raise :class:`ClusterError` rather than wait for ever."""
        if self.n_workers:
            return
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError) as err:
            raise ClusterError(
                f"the Dask scheduler at {self.client.scheduler.address} has no worker (waited "
                f"{timeout:g} s): start workers with `dask worker ADDRESS` or scale the cluster"
            ) from err

    def run_on_workers(self, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
        """``fn(*args)`` once on every worker: ``{worker address: result}``."""
        self.require_workers()
        return dict(self.client.run(fn, *args))

    def close(self) -> None:
        if self._owned:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def start_local_cluster(spec: str, **kwargs: Any) -> tuple[Any, Any]:
    """``"local:N"`` -> (Client, LocalCluster) of N single-threaded worker processes on the
    loopback interface, dashboard on a free port."""
    distributed = _import_distributed()
    match = re.fullmatch(r"local:(\d+)", spec.strip())
    if not match or int(match.group(1)) < 1:
        raise ClusterError(f"a cluster is written local:N (N worker processes), not {spec!r}")
    most = max(8, 4 * (os.cpu_count() or 1))
    if int(match.group(1)) > most:
        raise ClusterError(
            f"{spec!r} would start {int(match.group(1))} worker processes on this machine of "
            f"{os.cpu_count()} CPUs; at most {most} here (local:{os.cpu_count() or 1} is one "
            "per CPU). For more, start workers on other machines and give their scheduler's "
            "address")
    options: dict[str, Any] = dict(
        n_workers=int(match.group(1)), threads_per_worker=1, processes=True,
        host="127.0.0.1", dashboard_address=":0",
    )
    options.update(kwargs)
    cluster = distributed.LocalCluster(**options)
    return distributed.Client(cluster, set_as_default=False), cluster


def as_executor(where: Any) -> Executor:
    """An Executor from what a user passes: an Executor, a ``distributed.Client``, a scheduler
    address, or ``"local:N"``."""
    if isinstance(where, Executor):
        return where
    if isinstance(where, str):
        if where.startswith("local:"):
            return DaskExecutor.connect(cluster=where)
        return DaskExecutor.connect(where)
    if type(where).__name__ == "Client" and hasattr(where, "submit"):
        return DaskExecutor(where)
    raise ClusterError(f"cannot run tasks on {where!r}: give a distributed.Client, a scheduler "
                       "address or local:N")
