"""``graph.build``: compile each fused group into a kernel, and run them with preallocated
buffers laid out by the memory plan.

One kernel per fused group: each group lowers to one te computation (injective producers
inlined by its schedule) and compiles with ``mlc.build`` into a native function. The executor
calls them in order on preallocated arrays, so a run does no allocation; OPAQUE ops without a
te computation run through their numpy implementation.

    mod = graph.build(graph.optimize(g), target="llvm")
    mod.set_input(x=batch); mod.run(); y = mod.get_output(0)
    y = mod(x=batch)[0]                      # the same in one call
    mod.debug_run(x=batch)                   # group by group, each checked against numpy
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph.evaluate import check_input, eval_call
from mlc.graph.ir import Constant, FusedGroup, Graph, Node, Var
from mlc.graph.lower import lower_group
from mlc.graph.passes.fuse import fuse_ops
from mlc.graph.passes.memory import plan_memory


@dataclass
class Kernel:
    """One compiled group: ``fn(*inputs, output)`` writes the group's output in place."""

    group: FusedGroup
    inputs: list[Node]
    fn: Callable[..., Any]
    native: bool
    module: Any = None
    prim_func: Any = None
    schedule: Any = None

    @property
    def name(self) -> str:
        return self.group.name


def _numpy_kernel(group: FusedGroup) -> Callable[..., None]:
    inputs = group.inputs()

    def run(*arrays: np.ndarray) -> None:
        *ins, out = arrays
        values: dict[Node, np.ndarray] = dict(zip(inputs, ins))
        for n in group.nodes:
            values[n] = (n.value if isinstance(n, Constant)  # type: ignore[attr-defined]
                         else eval_call(n, [_value(a, values) for a in n.args]))
        out[...] = values[group.root]

    return run


def _value(a: Node, values: dict[Node, np.ndarray]) -> np.ndarray:
    if a in values:
        return values[a]
    if isinstance(a, Constant):
        return a.value
    raise GraphError(f"internal: value of {a!r} is not available")


def compile_group(group: FusedGroup, target: str) -> Kernel:
    """Lower, schedule and compile one group (numpy for OPAQUE ops and target="numpy")."""
    if target == "numpy" or any(n.op.topi is None for n in group.nodes):
        return Kernel(group, group.inputs(), _numpy_kernel(group), native=False)
    import mlc
    from mlc.topi.schedule import schedule_group

    lowered = lower_group(group)
    sch = schedule_group(lowered)
    mod = mlc.build(sch.mod, target=target, name=_c_name(group))
    return Kernel(group, lowered.inputs, mod, native=True, module=mod, prim_func=sch.mod,
                  schedule=sch)


def _bind_native(k: Kernel, args: tuple[np.ndarray, ...]
                 ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The buffers never move, so check the arguments once and keep the raw pointers: each
    run is then one ctypes call per kernel, with no per-call argument checking."""
    mod = k.module
    cfunc, checker = getattr(mod, "_cfunc", None), getattr(mod, "_checker", None)
    if not k.native or cfunc is None or checker is None:
        return k.fn, args
    return cfunc, tuple(checker.native_args(args))


def _c_name(group: FusedGroup) -> str:
    name = f"g{group.gid}_" + group.name
    return "".join(c if c.isalnum() else "_" for c in name)[:60]


@dataclass
class GraphModule:
    """A compiled graph. Buffers are allocated once; ``run`` calls the kernels in order.
    ``get_output`` returns arrays that the next run overwrites (copy them to keep them)."""

    graph: Graph
    kernels: list[Kernel]
    target: str
    _inputs: dict[str, np.ndarray] = field(default_factory=dict)
    _values: dict[Node, np.ndarray] = field(default_factory=dict)
    _calls: list[tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        g = self.graph
        plan = g.memory
        arenas = [np.empty(max(s, 1), np.uint8) for s in (plan.sizes if plan else ())]
        for v in g.inputs:
            self._values[v] = np.zeros(v.shape, v.dtype)
            self._inputs[v.name] = self._values[v]
        for n in g.topo():
            if isinstance(n, Constant):
                self._values[n] = n.value
        for k in self.kernels:
            out = k.group.root
            if plan is not None and out in plan.storage:
                raw = arenas[plan.storage[out]][: out.type.nbytes]
                self._values[out] = raw.view(out.dtype).reshape(out.shape)
            else:
                self._values[out] = np.empty(out.shape, out.dtype)
        for k in self.kernels:
            args = tuple(self._values[a] for a in k.inputs) + (self._values[k.group.root],)
            self._calls.append((k.fn, args))
        self._fast = [_bind_native(k, args) for k, (_, args) in zip(self.kernels, self._calls)]

    # -- the executor API (TVM's graph executor) -------------------------------------------
    def set_input(self, name: str | None = None, value: Any = None, **kwargs: Any) -> None:
        """``set_input("x", arr)`` or ``set_input(x=arr)``: copy into the input buffer."""
        items = dict(kwargs)
        if name is not None:
            items[name] = value
        for key, arr in items.items():
            if key not in self._inputs:
                raise GraphError(f"the graph has no input {key!r}; its inputs are "
                                 f"{list(self._inputs)}")
            var = next(v for v in self.graph.inputs if v.name == key)
            self._inputs[key][...] = check_input(var, arr)

    def run(self, **inputs: Any) -> None:
        """Run every kernel once (after setting any inputs given here)."""
        if inputs:
            self.set_input(**inputs)
        for fn, args in self._fast:
            fn(*args)

    def get_output(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self.graph.outputs):
            raise GraphError(f"output {i} does not exist; the graph has "
                             f"{len(self.graph.outputs)} output(s)")
        out = self.graph.outputs[i]
        if isinstance(out, (Var, Constant)):
            return np.array(self._values[out])
        return self._values[out]

    @property
    def num_outputs(self) -> int:
        return len(self.graph.outputs)

    def __call__(self, **inputs: Any) -> list[np.ndarray]:
        """``mod(x=arr)`` runs and returns the list of outputs."""
        self.run(**inputs)
        return [self.get_output(i) for i in range(self.num_outputs)]

    def debug_run(self, rtol: float = 1e-4, atol: float = 1e-4,
                  **inputs: Any) -> list[tuple[str, float]]:
        """Run group by group; after each kernel, compute the same group with numpy from the
        same inputs and compare. Raises GraphError naming the first group that disagrees;
        returns ``[(group name, max abs error)]``."""
        if inputs:
            self.set_input(**inputs)
        report = []
        for k, (fn, args) in zip(self.kernels, self._calls):
            fn(*args)
            expected = np.empty(k.group.root.shape, k.group.root.dtype)
            _numpy_kernel(k.group)(*[self._values[a] for a in k.group.inputs()], expected)
            got = args[-1]
            err = float(np.max(np.abs(got - expected))) if got.size else 0.0
            report.append((f"group {k.group.gid} {k.name}", err))
            if not np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True):
                raise GraphError(f"group {k.group.gid} ({k.name}) differs from numpy: max abs "
                                 f"error {err:.3g}\nits nodes: "
                                 f"{[n.op.name for n in k.group.nodes]}")
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
                self.run()
            times.append((time.perf_counter() - t0) / number)
        return float(np.median(times))

    def summary(self) -> str:
        lines = [f"GraphModule({self.target}): {len(self.kernels)} kernels"]
        for k in self.kernels:
            kind = "native" if k.native else "numpy"
            lines.append(f"  {k.group.gid:3d} {k.name} [{kind}] -> {k.group.root.shape}")
        if self.graph.memory is not None:
            lines.append(f"  {self.graph.memory}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def build(g: Graph, target: str = "llvm") -> GraphModule:
    """Compile ``g`` (fused and memory-planned already by ``graph.optimize``, or one kernel
    per op if not) for ``target`` ("llvm", "c", or "numpy" for the reference executor)."""
    if g.groups is None:
        g = fuse_ops(g, enabled=False)
    if g.memory is None:
        g = plan_memory(g)
    assert g.groups is not None
    kernels = [compile_group(grp, target) for grp in g.groups]
    return GraphModule(g, kernels, target)
