"""Templates, tasks, and the config a template sees (AutoTVM's call shape).

    @mlc.tune.template("matmul")
    def matmul(n, dtype):
        ...                                   # te computation
        s = te.create_schedule(C.op)
        cfg = mlc.tune.get_config()
        cfg.define_split("tile_y", y, num_outputs=2)
        yo, yi = cfg["tile_y"].apply(s, C, y)
        return s, [A, B, C]

    task = mlc.tune.create_task("matmul", args=(512, "float32"), target="llvm")
    print(task.config_space)

Outside tuning, calling ``matmul(512, "float32")`` asks the current dispatch context for
its config: inside ``with mlc.tune.apply_history_best("log.json")`` that is the best one
measured; otherwise the first point of the space.
"""

from __future__ import annotations

import inspect
import json
import operator
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mlc.tune.space import ConfigEntity, ConfigSpace, TuneError

_TEMPLATES: dict[str, Callable[..., Any]] = {}
_LOCAL = threading.local()


def workload_key(name: str, args: tuple[Any, ...]) -> str:
    """The string that names a (template, arguments) pair in records."""
    return json.dumps([name, list(args)])


class DispatchContext:
    """Answers ``get_config()`` for the template being run."""

    def query(self, key: str, space: Callable[[], ConfigSpace]) -> ConfigSpace | ConfigEntity:
        """The config for the workload ``key``; ``space()`` builds its space if needed."""
        raise NotImplementedError


class _FixedConfig(DispatchContext):
    def __init__(self, cfg: ConfigSpace | ConfigEntity) -> None:
        self.cfg = cfg

    def query(self, key: str, space: Callable[[], ConfigSpace]) -> ConfigSpace | ConfigEntity:
        return self.cfg


def _stack() -> list[tuple[DispatchContext, list[Any]]]:
    if not hasattr(_LOCAL, "stack"):
        _LOCAL.stack = []
    return _LOCAL.stack


@contextmanager
def dispatch(context: DispatchContext) -> Iterator[DispatchContext]:
    _stack().append((context, []))
    try:
        yield context
    finally:
        _stack().pop()


def template(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a tunable template under ``name``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            _LOCAL.current = (name, args)
            try:
                return fn(*args)
            finally:
                _LOCAL.current = None

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        run.__wrapped__ = fn  # type: ignore[attr-defined]  # its signature, for create_task
        run.template_name = name  # type: ignore[attr-defined]
        _TEMPLATES[name] = run
        # a notebook cell run again redefines the template: its old search spaces are stale
        for key in [k for k in _SPACES if json.loads(k)[0] == name]:
            del _SPACES[key]
        return run

    return register


def get_config() -> ConfigSpace | ConfigEntity:
    """The config of the template being run (call it inside a ``@template`` function)."""
    current = getattr(_LOCAL, "current", None)
    if current is None:
        raise TuneError("mlc.tune.get_config() must be called inside a @mlc.tune.template function")
    name, args = current
    key = workload_key(name, args)
    if _stack():
        context = _stack()[-1][0]
        return context.query(key, lambda: _space_of(name, args))
    # no context: the default point (first choice of every knob), like AutoTVM's fallback
    return _space_of(name, args).get(0)


_SPACES: dict[str, ConfigSpace] = {}


def _space_of(name: str, args: tuple[Any, ...]) -> ConfigSpace:
    key = workload_key(name, args)
    if key not in _SPACES:
        space = ConfigSpace()
        with dispatch(_FixedConfig(space)):
            _TEMPLATES[name](*args)
        _SPACES[key] = space
    return _SPACES[key]


class Task:
    """A template with its arguments: a search space and a way to build any point of it."""

    def __init__(self, name: str, args: tuple[Any, ...], target: Any = "llvm") -> None:
        if name not in _TEMPLATES:
            raise TuneError(
                f"no template named {name!r}; decorate a function with "
                f"@mlc.tune.template({name!r}) "
                f"(known: {sorted(_TEMPLATES)})"
            )
        if not isinstance(args, (tuple, list)):
            raise TuneError(f"create_task({name!r}, args={args!r}): args is the tuple of the "
                            "template's arguments, e.g. args=(64, 'float32')")
        try:
            inspect.signature(_TEMPLATES[name]).bind(*args)
        except TypeError as err:
            raise TuneError(f"template {name!r} cannot take args={tuple(args)!r}: {err}") \
                from None
        except ValueError:  # a builtin without a signature: its call will say
            pass
        self.name = name
        self.args = tuple(args)
        self.target = target
        self.config_space = _space_of(name, self.args)
        self.workload_key = workload_key(name, self.args)
        self._flop: float | None = None

    def instantiate(self, config: ConfigEntity | int) -> tuple[Any, list[Any]]:
        """Run the template with ``config``: returns ``(schedule, tensors)``."""
        if not isinstance(config, ConfigEntity):  # an index: an int, or numpy's (np.argmax)
            config = self.config_space.get(operator.index(config))
        with dispatch(_FixedConfig(config)):
            return _TEMPLATES[self.name](*self.args)  # type: ignore[no-any-return]

    @property
    def flop(self) -> float:
        """Floating-point operations of one run (from the loop program)."""
        if self._flop is None:
            from mlc.tune.features import flop_count

            s, tensors = self.instantiate(0)
            self._flop = flop_count(s.to_prim_func(tensors))
        return self._flop

    def __repr__(self) -> str:
        return f"Task({self.name}{self.args}, {len(self.config_space)} configs)"


def create_task(name: str, args: tuple[Any, ...] = (), target: Any = "llvm") -> Task:
    """A tuning task for the template registered as ``name`` with ``args``."""
    return Task(name, args, target)


create = create_task  # AutoTVM spells it autotvm.task.create(name, args=..., target=...)
