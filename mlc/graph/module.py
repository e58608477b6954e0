"""``GraphModule``: a compiled graph you run (``set_input`` / ``run`` / ``get_output``), and the
per-group :class:`Kernel` records it runs when the graph cannot be one native call.

:mod:`mlc.graph.build` makes them; this module only runs them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph.evaluate import check_input, eval_call
from mlc.graph.ir import Constant, FusedGroup, Graph, Node, Var
from mlc.graph.link import LinkedGraph, param_arrays


@dataclass
class Kernel:
    """One group: ``inputs`` (graph values, in parameter order), then its output. ``fn``
    computes it on arrays ``fn(*inputs, output)``; native groups compile on first use (the
    one-call path does not need them), numpy groups run the ops' reference functions."""

    group: FusedGroup
    inputs: list[Node]
    native: bool
    target: str = "llvm"
    prim_func: Any = None  # the scheduled block-level PrimFunc
    schedule: Any = None
    lowered: Any = None  # the same, lowered to loops
    _module: Any = None

    @property
    def name(self) -> str:
        return self.group.name

    @property
    def module(self) -> Any:
        """The group compiled alone (what ``debug_run`` calls)."""
        if self._module is None and self.native:
            from mlc.target import build

            self._module = build(self.lowered, self.target)
        return self._module

    @property
    def fn(self) -> Callable[..., Any]:
        return self.module if self.native else _numpy_kernel(self.group)


def _numpy_kernel(group: FusedGroup) -> Callable[..., None]:
    inputs = group.inputs()

    def run(*arrays: np.ndarray) -> None:
        *ins, out = arrays
        values: dict[Node, np.ndarray] = dict(zip(inputs, ins))
        for n in group.nodes:
            values[n] = eval_call(n, [_value(a, values) for a in n.args])
        out[...] = values[group.root]

    return run


def _value(a: Node, values: dict[Node, np.ndarray]) -> np.ndarray:
    if a in values:
        return values[a]
    if isinstance(a, Constant):
        return a.value
    raise GraphError(f"internal: value of {a!r} is not available")


class _Buffers:
    """One set of input, intermediate and output arrays, and the call that runs on them.
    Each Python thread that runs a module gets its own (see :class:`GraphModule`)."""

    def __init__(self, mod: GraphModule) -> None:
        g = mod.graph
        self.values: dict[Node, np.ndarray] = {}
        self.inputs: dict[str, np.ndarray] = {}
        for v in g.inputs:
            self.values[v] = np.zeros(v.shape, v.dtype)
            self.inputs[v.name] = self.values[v]
        for n in g.topo():
            if isinstance(n, Constant):
                self.values[n] = n.value  # read-only, C-ordered, of the node's shape
        if mod.module is not None and mod.linked is not None:
            outs = {o: np.empty(o.shape, o.dtype) for o in mod.linked.outputs}
            self.values.update(outs)
            calls = [mod.module.bind(*param_arrays(mod.linked, outs, self.values))]
        else:
            calls = self._sequential_calls(mod)
        self.run: Callable[[], None] = calls[0] if len(calls) == 1 else _run_all(calls)
        self.outputs = [self.values[o] for o in g.outputs]

    def _sequential_calls(self, mod: GraphModule) -> list[Callable[[], None]]:
        """One call per group on buffers laid out by the memory plan."""
        plan = mod.graph.memory
        arenas = [np.empty(max(s, 1), np.uint8) for s in (plan.sizes if plan else ())]
        for k in mod.kernels:
            out = k.group.root
            if plan is not None and out in plan.storage:
                raw = arenas[plan.storage[out]][: out.type.nbytes]
                self.values[out] = raw.view(out.dtype).reshape(out.shape)
            else:
                self.values[out] = np.empty(out.shape, out.dtype)
        calls: list[Callable[[], None]] = []
        for k in mod.kernels:
            args = [self.values[a] for a in k.inputs] + [self.values[k.group.root]]
            if k.native:
                calls.append(k.module.bind(*args))
            else:
                fn = _numpy_kernel(k.group)
                calls.append(lambda fn=fn, args=args: fn(*args))  # type: ignore[misc]
        return calls or [lambda: None]


def _run_all(calls: list[Callable[[], None]]) -> Callable[[], None]:
    def run() -> None:
        for call in calls:
            call()
    return run


@dataclass
class GraphModule:
    """A compiled graph. Buffers are allocated once; ``run`` is one native call (or, for a
    graph with numpy-only ops, the groups in order). ``get_output`` returns arrays that the
    next run overwrites (copy them to keep them).

    Each Python thread has its own input and output buffers (made on its first use), so
    threads may call one module at once: ``mod(x=batch)`` in a thread returns that thread's
    result, and ``set_input`` in one thread is not seen by ``run`` in another."""

    graph: Graph
    kernels: list[Kernel]
    target: str
    linked: LinkedGraph | None = None
    module: Any = None  # the one compiled function (None when the graph runs group by group)

    def __post_init__(self) -> None:
        g = self.graph
        self._vars: dict[str, Var] = {v.name: v for v in g.inputs}
        self._plain_outputs = not any(isinstance(o, (Var, Constant)) for o in g.outputs)
        self._owner = threading.get_ident()
        self._main = _Buffers(self)
        self._local = threading.local()

    def _buffers(self) -> _Buffers:
        """This thread's buffers."""
        if threading.get_ident() == self._owner:
            return self._main
        mine: _Buffers | None = getattr(self._local, "buffers", None)
        if mine is None:
            mine = self._local.buffers = _Buffers(self)
        return mine

    @property
    def prim_func(self) -> Any:
        """The whole graph as one lowered loop program (None when it runs group by group)."""
        return self.linked.func if self.linked is not None else None

    @property
    def num_native_calls(self) -> int:
        """How many native calls one ``run`` makes: 1 for a graph compiled as one function."""
        if self.module is not None:
            return 1
        return sum(1 for k in self.kernels if k.native)

    # -- the executor API (TVM's graph executor) -------------------------------------------
    def set_input(self, name: str | None = None, value: Any = None, /, **kwargs: Any) -> None:
        """``set_input("x", arr)`` or ``set_input(x=arr)``: copy into the input buffer (any
        input name works as a keyword, ``name`` and ``value`` too)."""
        if name is not None:
            kwargs[name] = value
        inputs = self._buffers().inputs
        for key, arr in kwargs.items():
            buf = inputs.get(key)
            if buf is None:
                raise GraphError(f"the graph has no input {key!r}; its inputs are "
                                 f"{list(inputs)}")
            if (type(arr) is np.ndarray and arr.shape == buf.shape and arr.dtype == buf.dtype):
                buf[...] = arr  # the common case, checked without a function call
            else:
                buf[...] = check_input(self._vars[key], arr)

    def run(self, **inputs: Any) -> None:
        """Run the graph once (after setting any inputs given here): one native call."""
        if inputs:
            self.set_input(**inputs)
        self._buffers().run()

    def get_output(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self.graph.outputs):
            raise GraphError(f"output {i} does not exist; the graph has "
                             f"{len(self.graph.outputs)} output(s)")
        out = self.graph.outputs[i]
        mine = self._buffers()
        if isinstance(out, (Var, Constant)):
            return np.array(mine.values[out])
        return mine.outputs[i]

    @property
    def num_outputs(self) -> int:
        return len(self.graph.outputs)

    def __call__(self, **inputs: Any) -> list[np.ndarray]:
        """``mod(x=arr)`` runs and returns the list of outputs."""
        mine = self._main if threading.get_ident() == self._owner else self._buffers()
        for key, arr in inputs.items():  # set_input, inlined for the common case
            buf = mine.inputs.get(key)
            if (buf is not None and type(arr) is np.ndarray and arr.dtype is buf.dtype
                    and arr.shape == buf.shape):
                buf[...] = arr
            else:
                self.set_input(**{key: arr})
        mine.run()
        if self._plain_outputs:
            return list(mine.outputs)
        return [self.get_output(i) for i in range(len(mine.outputs))]

    def _no_hidden_input(self, **options: Any) -> None:
        """An input named like an option (``rtol``, ``number``...) cannot be given to
        ``debug_run``/``benchmark`` as a keyword: the option takes it."""
        for name, value in options.items():
            if name in self._vars and not isinstance(value, (int, float)):
                raise GraphError(f"the graph's input {name!r} has the name of an option of "
                                 f"this method, which took the array; call "
                                 f"mod.set_input({name}=...) first")

    def debug_run(self, rtol: float = 1e-4, atol: float = 1e-4,
                  **inputs: Any) -> list[tuple[str, float]]:
        """Run group by group, each group compiled alone; after each kernel, compute the same
        group with numpy from the same inputs and compare. Raises GraphError naming the first
        group that disagrees; returns ``[(group name, max abs error)]``. The outputs are then
        in ``get_output`` as after ``run``."""
        self._no_hidden_input(rtol=rtol, atol=atol)
        if inputs:
            self.set_input(**inputs)
        mine = self._buffers()
        values: dict[Node, np.ndarray] = {v: mine.values[v] for v in self.graph.inputs}
        report = []
        for k in self.kernels:
            root = k.group.root
            args = [_value(a, values) for a in k.inputs]
            got = np.empty(root.shape, root.dtype)
            k.fn(*args, got)
            expected = np.empty(root.shape, root.dtype)
            _numpy_kernel(k.group)(*[_value(a, values) for a in k.group.inputs()], expected)
            err = float(np.max(np.abs(got - expected))) if got.size else 0.0
            report.append((f"group {k.group.gid} {k.name}", err))
            if not np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True):
                raise GraphError(f"group {k.group.gid} ({k.name}) differs from numpy: max abs "
                                 f"error {err:.3g}\nits nodes: "
                                 f"{[n.op.name for n in k.group.nodes]}")
            values[root] = got
        for i, o in enumerate(self.graph.outputs):
            if not isinstance(o, (Var, Constant)):
                mine.outputs[i][...] = values[o]
        return report

    def benchmark(self, number: int = 10, repeat: int = 3, **inputs: Any) -> float:
        """Median seconds per run."""
        import time

        self._no_hidden_input(number=number, repeat=repeat)
        if inputs:
            self.set_input(**inputs)
        run = self._buffers().run
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                run()
            times.append((time.perf_counter() - t0) / number)
        return float(np.median(times))

    # -- leaving the process (mlc.runtime.export) ---------------------------------------------
    def exportable(self) -> Any:
        """The one native function with the weights bound into it, for export."""
        if self.module is None or self.linked is None:
            raise GraphError(
                "this graph runs group by group (an op without a te computation, or "
                "target='numpy'), so there is no one native function to export; build it "
                "with target='llvm' from ops that all compile")
        linked = self.linked
        missing = [o for o in self.graph.outputs if o not in linked.outputs]
        if missing:
            raise GraphError(f"output {missing[0]!r} is an input or a constant of the graph, "
                             "not computed by it: a library cannot return it; drop it from "
                             "the outputs")
        ex = self.module.exportable()
        first = len(linked.inputs)
        ex.bound = {first + j: c.value for j, c in enumerate(linked.constants)}
        ex.graph = {
            "inputs": [{"name": v.name, "shape": list(v.shape), "dtype": str(v.dtype)}
                       for v in linked.inputs],
            "outputs": [{"shape": list(o.shape), "dtype": str(o.dtype)}
                        for o in linked.outputs],
            "order": [linked.outputs.index(o) for o in self.graph.outputs],
        }
        return ex

    def export_library(self, path: Any, cc: str | None = None) -> None:
        """A shared library holding the whole graph and its weights: ``mlc_run(args, NULL)``
        with the inputs then the outputs (include/mlc_runtime.h), or
        ``mlc.runtime.load_module(path)`` for the same ``set_input``/``run``/``get_output``."""
        from mlc.runtime import export

        export.export_library(self.exportable(), path, cc)

    def save(self, path: Any, fmt: str = "") -> None:
        """``.o`` object code (weights included), ``.so``, ``.s`` or ``.ll``."""
        from mlc.runtime import export

        export.save(self.exportable(), path, fmt)

    def summary(self) -> str:
        how = ("one native call" if self.module is not None
               else f"{max(len(self.kernels), 1)} calls, group by group")
        lines = [f"GraphModule({self.target}): {len(self.kernels)} kernels, {how}"]
        for k in self.kernels:
            kind = "native" if k.native else "numpy"
            lines.append(f"  {k.group.gid:3d} {k.name} [{kind}] -> {k.group.root.shape}")
        if self.graph.memory is not None:
            lines.append(f"  {self.graph.memory}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()
