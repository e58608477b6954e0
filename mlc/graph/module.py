"""``GraphModule``: a compiled graph you run (``set_input`` / ``run`` / ``get_output``), and the
per-group :class:`Kernel` records it runs when the graph cannot be one native call.

:mod:`mlc.graph.build` makes them; this module only runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass
class GraphModule:
    """A compiled graph. Buffers are allocated once; ``run`` is one native call (or, for a
    graph with numpy-only ops, the groups in order). ``get_output`` returns arrays that the
    next run overwrites (copy them to keep them)."""

    graph: Graph
    kernels: list[Kernel]
    target: str
    linked: LinkedGraph | None = None
    module: Any = None  # the one compiled function (None when the graph runs group by group)
    _inputs: dict[str, np.ndarray] = field(default_factory=dict)
    _vars: dict[str, Var] = field(default_factory=dict)
    _values: dict[Node, np.ndarray] = field(default_factory=dict)
    _calls: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        g = self.graph
        for v in g.inputs:
            self._values[v] = np.zeros(v.shape, v.dtype)
            self._inputs[v.name] = self._values[v]
            self._vars[v.name] = v
        for n in g.topo():
            if isinstance(n, Constant):
                self._values[n] = np.ascontiguousarray(n.value)
        if self.module is not None and self.linked is not None:
            outs = {o: np.empty(o.shape, o.dtype) for o in self.linked.outputs}
            self._values.update(outs)
            self._calls = [self.module.bind(*param_arrays(self.linked, outs, self._values))]
        else:
            self._calls = self._sequential_calls()
        self._run = self._calls[0] if len(self._calls) == 1 else self._run_all
        self._outputs = [self._values[o] for o in g.outputs]
        self._plain_outputs = not any(isinstance(o, (Var, Constant)) for o in g.outputs)

    def _sequential_calls(self) -> list[Callable[[], None]]:
        """One call per group on buffers laid out by the memory plan."""
        plan = self.graph.memory
        arenas = [np.empty(max(s, 1), np.uint8) for s in (plan.sizes if plan else ())]
        for k in self.kernels:
            out = k.group.root
            if plan is not None and out in plan.storage:
                raw = arenas[plan.storage[out]][: out.type.nbytes]
                self._values[out] = raw.view(out.dtype).reshape(out.shape)
            else:
                self._values[out] = np.empty(out.shape, out.dtype)
        calls: list[Callable[[], None]] = []
        for k in self.kernels:
            args = [self._values[a] for a in k.inputs] + [self._values[k.group.root]]
            if k.native:
                calls.append(k.module.bind(*args))
            else:
                fn = _numpy_kernel(k.group)
                calls.append(lambda fn=fn, args=args: fn(*args))  # type: ignore[misc]
        return calls or [lambda: None]

    def _run_all(self) -> None:
        for call in self._calls:
            call()

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
    def set_input(self, name: str | None = None, value: Any = None, **kwargs: Any) -> None:
        """``set_input("x", arr)`` or ``set_input(x=arr)``: copy into the input buffer."""
        if name is not None:
            kwargs[name] = value
        for key, arr in kwargs.items():
            buf = self._inputs.get(key)
            if buf is None:
                raise GraphError(f"the graph has no input {key!r}; its inputs are "
                                 f"{list(self._inputs)}")
            if (type(arr) is np.ndarray and arr.shape == buf.shape and arr.dtype == buf.dtype):
                buf[...] = arr  # the common case, checked without a function call
            else:
                buf[...] = check_input(self._vars[key], arr)

    def run(self, **inputs: Any) -> None:
        """Run the graph once (after setting any inputs given here): one native call."""
        if inputs:
            self.set_input(**inputs)
        self._run()

    def get_output(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self._outputs):
            raise GraphError(f"output {i} does not exist; the graph has "
                             f"{len(self._outputs)} output(s)")
        out = self.graph.outputs[i]
        if isinstance(out, (Var, Constant)):
            return np.array(self._values[out])
        return self._outputs[i]

    @property
    def num_outputs(self) -> int:
        return len(self.graph.outputs)

    def __call__(self, **inputs: Any) -> list[np.ndarray]:
        """``mod(x=arr)`` runs and returns the list of outputs."""
        for key, arr in inputs.items():  # set_input, inlined for the common case
            buf = self._inputs.get(key)
            if (buf is not None and type(arr) is np.ndarray and arr.dtype is buf.dtype
                    and arr.shape == buf.shape):
                buf[...] = arr
            else:
                self.set_input(**{key: arr})
        self._run()
        if self._plain_outputs:
            return list(self._outputs)
        return [self.get_output(i) for i in range(len(self._outputs))]

    def debug_run(self, rtol: float = 1e-4, atol: float = 1e-4,
                  **inputs: Any) -> list[tuple[str, float]]:
        """Run group by group, each group compiled alone; after each kernel, compute the same
        group with numpy from the same inputs and compare. Raises GraphError naming the first
        group that disagrees; returns ``[(group name, max abs error)]``. The outputs are then
        in ``get_output`` as after ``run``."""
        if inputs:
            self.set_input(**inputs)
        values: dict[Node, np.ndarray] = {v: self._values[v] for v in self.graph.inputs}
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
                self._outputs[i][...] = values[o]
        return report

    def benchmark(self, number: int = 10, repeat: int = 3, **inputs: Any) -> float:
        """Median seconds per run."""
        import time

        if inputs:
            self.set_input(**inputs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                self._run()
            times.append((time.perf_counter() - t0) / number)
        return float(np.median(times))

    def summary(self) -> str:
        how = ("one native call" if self.module is not None
               else f"{len(self._calls)} calls, group by group")
        lines = [f"GraphModule({self.target}): {len(self.kernels)} kernels, {how}"]
        for k in self.kernels:
            kind = "native" if k.native else "numpy"
            lines.append(f"  {k.group.gid:3d} {k.name} [{kind}] -> {k.group.root.shape}")
        if self.graph.memory is not None:
            lines.append(f"  {self.graph.memory}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()
